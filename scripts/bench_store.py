"""Benchmark the SQLite Store: add throughput, and the first read after adding to a 1M-token store.

Base store: every message of BEAM-1M chat 6 as one record (about 1M tokens).
Added records: messages of other BEAM-1M chats (7, 8, 9, 10, 3, 4, 31, 32).

* add throughput: the base records in one ``add`` (one transaction), and
  one record per ``add`` (a transaction each, with request ids), records/s;
* one record added, then one read, 20 times in one process: p50/p95 and
  the texts analysed and pieces embedded per read (the store's memo keeps
  every per-text analysis), against a fresh ``build()`` of the same records
  over the same warm vectors (what a read cost before the memo); then 100
  records added at once and one read;
* a new process opening the built store and answering one query: seconds
  (with and without loading the embedder), texts analysed (none: the
  analyses are read from the file).

Wall clock on a shared machine, cpu-small profile; a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from muster_exact import __version__
from muster_exact.cache.vectors import VectorCache
from muster_exact.memory import build
from muster_exact.store import Store
from muster_exact.text import tokens
from muster_exact.verify.corpora import beam_chat_file, beam_messages

MODELS = "cpu-small"
BASE_CHAT = "beam/1M/6"
EXTRA_CHATS = ("beam/1M/7", "beam/1M/8", "beam/1M/9", "beam/1M/10", "beam/1M/3", "beam/1M/4", "beam/1M/31")
QUERY = "What did I decide about the project timeline?"
SINGLES = 20  # one-record adds, each followed by one read
RUNS = 3  # of those 20, each from a fresh copy of the base store
FRESH = 3  # of those, also timed as a fresh build (the cost of a read before the memo)
BULK = 100
PROFILE = os.environ.get("BENCH_PROFILE") == "1"  # a cProfile of one read after an add, on stderr


def chat_records(data: Path, folder: str, prefix: str) -> list[dict[str, str]]:
    chat_file = beam_chat_file(data / folder)
    assert chat_file is not None, folder
    chat = json.loads(chat_file.read_text(encoding="utf-8"))
    return [
        {"id": f"{prefix}{m['id']}", "role": str(m["role"]), "text": str(m["content"])}
        for m, _ in beam_messages(chat)
        if str(m.get("content", "")).strip()
    ]


def seed_vectors(store_path: Path, shared: Path, back: bool = False) -> None:
    """Copy the bench's cached vectors into the store file (``back``: the store's into the cache)."""
    if not shared.exists() and not back:
        return
    source, target = (store_path, shared) if back else (shared, store_path)
    VectorCache(target).close()  # the table exists in both
    db = sqlite3.connect(target)
    try:
        db.execute("ATTACH DATABASE ? AS other", (str(source),))
        db.execute("INSERT OR IGNORE INTO main.vectors SELECT * FROM other.vectors")
        db.commit()
        db.execute("DETACH DATABASE other")
    finally:
        db.close()


def timed(action):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def read_after_add(base_path: Path, work: Path, extra: list[dict[str, str]]) -> list[str]:
    """One record added, then one read, SINGLES times in one process (the store's memo carries
    every text it analysed), in RUNS runs, each from a fresh copy of the base (the same work each
    time, so the runs show the machine's own spread); beside it, what a read cost before the
    memo: a fresh ``build`` of the same records over the same warm vectors (the store's file)."""
    reads, fresh, analysed, embedded, embed_s = [], [], [], [], []
    per_run: list[tuple[float, float]] = []
    for run in range(RUNS):
        path = work / f"grow-{run}.muster"
        shutil.copyfile(base_path, path)
        with Store.open(path, models=MODELS) as store:
            store.context(QUERY)  # this process's first read of the copy: analyses from the file
            run_reads: list[float] = []
            for i, record in enumerate(extra[:SINGLES]):
                store.add(record)
                before = sum(store.memo.computed.values())
                # A question new to the memory each time (a repeated one is answered from caches).
                _, read_s = timed(lambda: store.context(f"{QUERY} ({run}.{i})"))  # noqa: B023 - called at once
                run_reads.append(read_s)
                analysed.append(sum(store.memo.computed.values()) - before)
                embedded.append(store.embedded)
                embed_s.append(store.memory().timings["embed"])
                if run == 0 and i < FRESH:
                    records = list(store.records())
                    vectors = VectorCache(path)
                    _, fresh_s = timed(lambda: build(records, models=MODELS, cache=vectors).context(QUERY))  # noqa: B023
                    vectors.close()
                    fresh.append(fresh_s)
            reads += run_reads
            per_run.append((percentile(run_reads, 0.5), percentile(run_reads, 0.95)))
            if run:
                continue
            if PROFILE:
                store.add(extra[SINGLES])
                profile = cProfile.Profile()
                profile.runcall(store.context, QUERY)
                pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
            timings = store.memory().timings
            bulk = extra[SINGLES + 1 : SINGLES + 1 + BULK]
            store.add(bulk)
            before = sum(store.memo.computed.values())
            _, bulk_s = timed(lambda: store.context(f"{QUERY} (bulk)"))
            bulk_analysed, bulk_embedded = sum(store.memo.computed.values()) - before, store.embedded
    p50, p95 = percentile(reads, 0.5), percentile(reads, 0.95)
    rest = [read - embed for read, embed in zip(reads, embed_s, strict=True)]
    fresh_p50 = percentile(fresh, 0.5)
    stages = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items() if k not in ("load_models",))
    return [
        f"### One record added, then one read ({SINGLES} times, one process; {RUNS} runs)",
        "",
        "| read after adding 1 record | p50 ms | p95 ms | embedding the new text p50 / p95 ms | "
        "all but embedding p50 / p95 ms | texts analysed (median) | pieces embedded (median / max) |",
        "|---|---|---|---|---|---|---|",
        f"| store (per-text work kept between reads) | {p50 * 1000:.0f} | {p95 * 1000:.0f} | "
        f"{percentile(embed_s, 0.5) * 1000:.0f} / {percentile(embed_s, 0.95) * 1000:.0f} | "
        f"{percentile(rest, 0.5) * 1000:.0f} / {percentile(rest, 0.95) * 1000:.0f} | "
        f"{statistics.median(analysed):.0f} | {statistics.median(embedded):.0f} / {max(embedded)} |",
        f"| before: a fresh build over the same warm vectors ({FRESH} reads) | {fresh_p50 * 1000:.0f} | "
        f"{percentile(fresh, 0.95) * 1000:.0f} | - | - | all | 0 |",
        "",
        f"Each run from a fresh copy of the base, the same {SINGLES} records: p50 / p95 "
        + ", ".join(f"{a * 1000:.0f} / {b * 1000:.0f}" for a, b in per_run)
        + f" ms; the table pools the {len(reads)} reads.",
        "",
        f"Goal: p50 <= 100 ms, p95 <= 250 ms. Reached: {p50 * 1000:.0f} / {p95 * 1000:.0f} ms "
        f"({'met' if p50 <= 0.1 and p95 <= 0.25 else 'not met'}); {fresh_p50 / p50:.1f}x faster than "
        f"a fresh build in the same run. All but embedding the new text: "
        f"{percentile(rest, 0.5) * 1000:.0f} / {percentile(rest, 0.95) * 1000:.0f} ms "
        f"({'met' if percentile(rest, 0.5) <= 0.1 and percentile(rest, 0.95) <= 0.25 else 'not met'}). "
        f"The added records are BEAM messages, many of them longer than the embedder's window, so a "
        f"read embeds one window or more of new text; the embedder's rate is in `embed.md`. The last "
        f"read's build stages: {stages}.",
        "",
        f"{len(bulk):,} records added at once, then one read: {bulk_s:.1f} s, {bulk_analysed:,} texts "
        f"analysed, {bulk_embedded:,} pieces embedded.",
        "",
    ]


def new_process(base_path: Path) -> list[str]:
    """Open the built store in a new process and answer one query: nothing is re-analysed."""
    script = (
        "import json, sys, time\n"
        "started = time.perf_counter()\n"
        "from muster_exact.store import Store\n"
        f"with Store.open({str(base_path)!r}, models={MODELS!r}) as store:\n"
        f"    store.context({QUERY!r})\n"
        "    done = time.perf_counter() - started\n"
        "    memory = store.memory()\n"
        "    print(json.dumps({'seconds': done, 'models': memory.timings['load_models'],\n"
        "        'computed': sum(store.memo.computed.values()), 'loaded': sum(store.memo.loaded.values()),\n"
        "        'embedded': store.embedded}))\n"
    )
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.splitlines()[-1]))
    best = min(runs, key=lambda r: r["seconds"])
    without_models = best["seconds"] - best["models"]
    return [
        "### A new process: open the store and answer one query (best of 3)",
        "",
        "| open + first query s | of which loading the embedder s | the rest s | texts analysed | "
        "texts read from the file | pieces embedded |",
        "|---|---|---|---|---|---|",
        f"| {best['seconds']:.2f} | {best['models']:.2f} | {without_models:.2f} | {best['computed']:,} | "
        f"{best['loaded']:,} | {best['embedded']:,} |",
        "",
        f"Goal: <= 1 s with a warm vector cache. Reached: {best['seconds']:.2f} s "
        f"({'met' if best['seconds'] <= 1 else 'not met'}); without loading the embedder: "
        f"{without_models:.2f} s.",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--out", default="results/bench/store.md")
    parser.add_argument("--base", default=BASE_CHAT, help="the base chat (a smaller one to try the script)")
    parser.add_argument(
        "--vectors",
        type=Path,
        default=Path(".cache/muster/bench-store/vectors.sqlite"),
        help="the bench's vector cache: the base store is seeded from it and fills it back, so a "
        "rerun embeds only what it has not embedded before",
    )
    args = parser.parse_args()
    data = Path(args.data)
    base = chat_records(data, args.base, "c6-")
    extra = [r for i, folder in enumerate(EXTRA_CHATS) for r in chat_records(data, folder, f"x{i}-")]
    assert len(extra) > SINGLES + BULK, len(extra)
    base_tokens = sum(tokens.count_many([r["text"] for r in base]))
    lines = [
        "# Store benchmark (cpu-small)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_store.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores. Wall clock on a shared machine.",
        "",
        f"Base store: {args.base}, {len(base):,} messages as records, {base_tokens:,} tokens of text.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # -- add throughput
        with Store.open(work / "bulk.muster") as store:
            _, bulk_s = timed(lambda: store.add(base))
        singles = extra[:2000]
        with Store.open(work / "single.muster") as store:
            _, single_s = timed(lambda: [store.add(r, request_id=r["id"]) for r in singles])
        lines += [
            "## Add throughput (no model is called)",
            "",
            "| how | records | seconds | records/s |",
            "|---|---|---|---|",
            f"| one add of the whole base (one transaction) | {len(base):,} | {bulk_s:.2f} | "
            f"{len(base) / bulk_s:,.0f} |",
            f"| one record per add, with request ids | {len(singles):,} | {single_s:.2f} | "
            f"{len(singles) / single_s:,.0f} |",
            "",
        ]
        # -- the base store, read once (every unit embedded into the file)
        base_path = work / "bulk.muster"
        seed_vectors(base_path, args.vectors)
        with Store.open(base_path, models=MODELS) as store:
            _, first_s = timed(lambda: store.context(QUERY))
            base_units = len(store.memory().unit_texts)
            base_pieces = len(store.memory().pieces.texts)
            base_embedded = store.embedded
            timings = dict(store.memory().timings)
        args.vectors.parent.mkdir(parents=True, exist_ok=True)
        seed_vectors(base_path, args.vectors, back=True)
        lines += [
            "## Reads after adds to the built 1M-token store",
            "",
            f"The base store's own first read ({base_embedded:,} of the {base_pieces:,} pieces of its "
            f"{base_units:,} units embedded in this run, the rest from the bench's vector cache, "
            f"`{args.vectors}`): {first_s:.1f} s, of which embedding {timings['embed']:.1f} s and "
            f"loading the embedder {timings['load_models']:.1f} s.",
            "",
        ]
        lines += read_after_add(base_path, work, extra)
        lines += new_process(base_path)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
