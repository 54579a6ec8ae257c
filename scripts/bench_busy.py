"""Benchmark reads beside a busy neighbour (issue 53): each case alone, then beside a process that
keeps one core busy, then beside one that keeps every core busy, as ratios measured in one run.

Cases, each cold (a fresh ``$MUSTER_HOME``: no vector cache) and as a user runs them:

* ``muster query FILE QUESTION`` on a 200-turn chat (LoCoMo conv-26's first 200 turns);
* ``muster query FILE QUESTION`` on a 1,000-record chat (LoCoMo's first 1,000 turns);
* ``muster http``: the first ``/v1/context`` after an add of 200 records (the add not timed).

The neighbour is started and stopped by this script: plain Python loops, one process per busy
core, each ending by itself after ``--neighbour-s`` seconds at most. A ratio near 1 means the case
kept its speed; on fair scheduling a case that needs every core cannot do better than about
``(cores + busy) / cores`` beside ``busy`` spinning cores. Wall clock on a shared machine.

    python scripts/bench_busy.py --data ../shared/data --out results/bench/busy.md
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
from bench_common import parser as bench_parser
from bench_common import wait_until_healthy, write_report
from bench_replicas import free_port

from muster_exact import __version__
from muster_exact.models.lanes import cores
from muster_exact.verify.corpora import locomo_sessions

QUESTION = "When did Caroline go to the LGBTQ support group?"
SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def locomo_records(data: Path, count: int) -> list[dict[str, str]]:
    """The first ``count`` LoCoMo turns, conversation after conversation, as records."""
    samples = json.loads((data / "locomo/locomo10.json").read_text(encoding="utf-8"))
    records = [
        {
            "id": f"{sample['sample_id']}:{t['dia_id']}",
            "speaker": t["speaker"],
            "time": date,
            "text": t["text"],
        }
        for sample in samples
        for _, date, session in locomo_sessions(sample["conversation"])
        for t in session
    ]
    return records[:count]


@contextmanager
def neighbour(busy: int, seconds: float) -> Iterator[None]:
    """``busy`` processes spinning, one core each, for the block (at most ``seconds``)."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=seconds)]) for _ in range(busy)]
    time.sleep(0.5)  # running before the case starts
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@contextmanager
def cold_home(home: Path) -> Iterator[dict[str, str]]:
    """An environment with a fresh ``$MUSTER_HOME`` (no vector cache; the tokenizer file copied)."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(home / "tiktoken", Path(tmp) / "tiktoken")
        yield {**os.environ, "MUSTER_HOME": tmp, "MUSTER_MODELS": "cpu-small"}


def cold_query(path: Path, home: Path) -> float:
    with cold_home(home) as env:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "muster_exact", "-q", "query", str(path), QUESTION],
            env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"muster query failed: {done.stderr[-2000:]}")
    return seconds


def first_context_after_add(records: list[dict[str, str]], home: Path) -> float:
    with cold_home(home) as env, tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "muster_exact", "-q", "http", "--store", f"{tmp}/busy.muster",
                   "--port", str(port)]  # fmt: skip
        server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        try:
            wait_until_healthy(url)
            httpx.post(f"{url}/v1/add", json={"records": records}, timeout=600).raise_for_status()
            started = time.perf_counter()
            httpx.post(f"{url}/v1/context", json={"query": QUESTION}, timeout=1800).raise_for_status()
            return time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(timeout=60)


def main() -> None:
    parser = bench_parser(__doc__, "results/bench/busy.md")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each case per condition (median)")
    parser.add_argument("--neighbour-s", type=float, default=900.0, help="the longest a neighbour spins")
    args = parser.parse_args()
    home = Path(os.environ.get("MUSTER_HOME", Path.cwd() / ".cache" / "muster"))
    with tempfile.TemporaryDirectory() as tmp:
        short, long_ = Path(tmp) / "chat-200.json", Path(tmp) / "chat-1000.json"
        short.write_text(json.dumps(locomo_records(args.data, 200)), encoding="utf-8")
        long_.write_text(json.dumps(locomo_records(args.data, 1000)), encoding="utf-8")
        added = locomo_records(args.data, 200)
        cases: list[tuple[str, Callable[[], float]]] = [
            ("cold `muster query` on a 200-turn chat", lambda: cold_query(short, home)),
            ("cold `muster query` on a 1,000-record chat", lambda: cold_query(long_, home)),
            ("`muster http`: first context after adding 200 records",
             lambda: first_context_after_add(added, home)),
        ]  # fmt: skip
        n = cores()
        conditions = [("alone", 0), ("beside one busy core", 1), (f"beside {n} busy cores", n)]
        seconds: dict[tuple[str, str], float] = {}
        for label, case in cases:
            for condition, busy in conditions:
                runs = []
                for _ in range(args.repeats):
                    with neighbour(busy, args.neighbour_s):
                        runs.append(case())
                seconds[label, condition] = statistics.median(runs)
                print(f"{label} {condition}: {seconds[label, condition]:.2f} s ({runs})", file=sys.stderr)
    header = " | ".join(f"{c} s | x alone" if b else f"{c} s" for c, b in conditions)
    lines = [
        "# reads beside a busy neighbour (issue 53)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_busy.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {n} cores, cpu-small, native rules, each case cold (no "
        f"vector cache), median of {args.repeats} runs. The neighbour: plain Python loops, one process per "
        "busy core, started and stopped by the benchmark. Wall clock on a shared machine.",
        "",
        f"Goal: each case beside a busy neighbour within 1.5x of its time alone. Fair scheduling bounds "
        f"a case that keeps every core busy at about (cores + busy cores) / cores: 1.5x beside one busy "
        f"core, {2 * n / n:.1f}x beside {n}.",
        "",
        f"| case | {header} |",
        "|---|" + "---|" * (2 * len(conditions) - 1),
    ]
    for label, _ in cases:
        alone = seconds[label, "alone"]
        cells = [f"{seconds[label, c]:.1f}" + (f" | {seconds[label, c] / alone:.2f}" if b else "")
                 for c, b in conditions]  # fmt: skip
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += [
        "",
        "Before the lanes (issue 53's report, 2 cores, one other job running): a cold query on a "
        "200-turn chat 19.4 s and 39.0 s with OpenBLAS's default threads, 4.2 s and 4.4 s with one; "
        "on a 1,000-record chat 180 s against 23 s.",
        "",
    ]
    write_report(args.out, lines)


if __name__ == "__main__":
    main()
