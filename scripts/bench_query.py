"""Benchmark build and query, stage by stage, with the cpu-small profile.

Stores: a LoCoMo conversation (conv-26), a BEAM-100K chat (1) and a 1M-token
store (BEAM-1M chat 6, 1.02M tokens). Build stages: detect, cut, BM25, graph,
embed (vectors computed fresh: no cache), plus model loading on its own
line. Queries: the store's own benchmark questions, cycled to --queries
(a repeat marked so that no query is answered from a cache) after one
warm-up query; p50/p95 per stage. Writes Markdown.

Goals (a benchmark, not a test): everything but the embedder < 10% of build
time; a query without cross-encoder < 100 ms p50 on the 1M-token store.

Last, ``muster query`` as a user runs it (issue 29): a new process on a 200-record file (LoCoMo
turns), with the vector cache warm from one run before; wall clock of the whole command, median
and worst of 5. Goal: <= 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the harness: the bench file format

from harness.report.figures import StoreSizes, bench_json, write_bench
from muster_exact import __version__
from muster_exact.memory import build
from muster_exact.text.records import Source
from muster_exact.verify.corpora import beam_chat_file, beam_source, locomo_sessions, locomo_stores

BUILD_STAGES = ("detect", "cut", "bm25", "graph", "embed")
QUERY_STAGES = ("dense", "bm25", "graph", "rerank", "select+assemble")


def stores(data: Path) -> list[tuple[str, Source, list[str]]]:
    locomo = json.loads((data / "locomo/locomo10.json").read_text(encoding="utf-8"))[0]
    out = [
        (
            "LoCoMo conv-26",
            next(locomo_stores(data / "locomo/locomo10.json")).source,
            [q["question"] for q in locomo["qa"]],
        )
    ]
    for label, folder in (("BEAM-100K chat 1", "beam/100K/1"), ("BEAM-1M chat 6 (1M tokens)", "beam/1M/6")):
        directory = data / folder
        chat_file = beam_chat_file(directory)
        assert chat_file is not None, directory
        questions = json.loads((directory / "probing_questions.json").read_text(encoding="utf-8"))
        out.append(
            (
                label,
                beam_source(json.loads(chat_file.read_text(encoding="utf-8"))),
                [q["question"] for ability in sorted(questions) for q in questions[ability]],
            )
        )
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    label: str, source: Source, questions: list[str], n_queries: int
) -> tuple[list[str], dict[str, Any]]:
    started = time.perf_counter()
    memory = build(source, models="cpu-small", cache=False)
    total = time.perf_counter() - started
    t = memory.timings
    non_embed = sum(t[s] for s in BUILD_STAGES if s != "embed")
    memory.context(questions[0])  # warm-up
    per_stage: dict[str, list[float]] = {s: [] for s in (*QUERY_STAGES, "total")}
    for i in range(1, n_queries + 1):
        # Each query new to the memory: a repeated one is answered from the channels' caches.
        question = questions[i % len(questions)] + ("" if i < len(questions) else f" ({i})")
        started = time.perf_counter()
        context = memory.context(question)
        per_stage["total"].append(time.perf_counter() - started)
        for stage in QUERY_STAGES:
            per_stage[stage].append(context.timings[stage])
    plan = memory.plan
    lines = [
        f"### {label}",
        "",
        f"{plan.stats.tokens:,} tokens, {plan.branch}, {plan.stats.units:,} units, "
        f"{plan.stats.parents} parents. Build {total:.2f} s; everything but the "
        f"embedder: {non_embed:.2f} s = **{100 * non_embed / total:.1f}%** of build.",
        "",
        "| build stage | seconds | share |",
        "|---|---|---|",
        *(f"| {s} | {t[s]:.3f} | {100 * t[s] / total:.1f}% |" for s in BUILD_STAGES),
        "",
        f"| query stage ({n_queries} queries) | p50 ms | p95 ms |",
        "|---|---|---|",
        *(
            f"| {s} | {1000 * statistics.median(per_stage[s]):.1f} "
            f"| {1000 * percentile(per_stage[s], 0.95):.1f} |"
            for s in (*QUERY_STAGES, "total")
        ),
        "",
    ]
    print("\n".join(lines), flush=True)
    record = {
        "store": label,
        "tokens": plan.stats.tokens,
        "branch": plan.branch,
        "units": plan.stats.units,
        "parents": plan.stats.parents,
        "build_s": total,
        "build_without_embedder_s": non_embed,
        "build_stages_s": {stage: t[stage] for stage in BUILD_STAGES},
        "query_ms": {
            stage: {"p50": 1000 * statistics.median(v), "p95": 1000 * percentile(v, 0.95)}
            for stage, v in per_stage.items()
        },
    }
    return lines, record


def points(stores: list[dict[str, Any]]) -> StoreSizes:
    """What the results page plots: each store's build seconds and query total against its tokens."""
    sizes = StoreSizes({}, {}, [])
    for r in stores:
        for series, value in (
            ("with embedding (query.md)", r["build_s"]),
            ("without embedder (query.md)", r["build_without_embedder_s"]),
        ):
            sizes.build.setdefault(series, []).append((r["tokens"], value))
        for q in ("p50", "p95"):
            sizes.query.setdefault(f"query {q} (query.md)", []).append(
                (r["tokens"], r["query_ms"]["total"][q])
            )
    return sizes


CLI_RECORDS = 200
CLI_RUNS = 5
CLI_GOAL_S = 1.5


def cli_query(data: Path) -> tuple[list[str], dict[str, Any]]:
    """Wall seconds of ``muster query FILE Q`` in a new process, the vector cache warm."""
    conversation = json.loads((data / "locomo/locomo10.json").read_text(encoding="utf-8"))[0]
    turns = [
        {"speaker": turn["speaker"], "text": turn["text"]}
        for _, _, session in locomo_sessions(conversation["conversation"])
        for turn in session
    ][:CLI_RECORDS]
    question = conversation["qa"][0]["question"]
    with tempfile.TemporaryDirectory() as tmp:
        chat = Path(tmp) / "chat.jsonl"
        chat.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
        env = {**os.environ, "MUSTER_HOME": str(Path(tmp) / "home"), "MUSTER_MODELS": "cpu-small"}
        command = [sys.executable, "-m", "muster_exact", "query", str(chat), question]
        subprocess.run(command, env=env, check=True, capture_output=True)  # fills the vector cache
        walls = []
        for _ in range(CLI_RUNS):
            started = time.perf_counter()
            subprocess.run(command, env=env, check=True, capture_output=True)
            walls.append(time.perf_counter() - started)
    median, worst = statistics.median(walls), max(walls)
    met = "met" if median <= CLI_GOAL_S else "not met"
    lines = [
        f"## `muster query` on a {len(turns)}-record file, a new process, the vector cache warm",
        "",
        "| runs | median s | worst s | goal |",
        "|---|---|---|---|",
        f"| {CLI_RUNS} | {median:.2f} | {worst:.2f} | <= {CLI_GOAL_S} s: {met} |",
        "",
    ]
    print("\n".join(lines), flush=True)
    return lines, {"records": len(turns), "runs": CLI_RUNS, "median_s": median, "worst_s": worst}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("results/bench/query.md"))
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    # Warm up once so imports, the tokenizer and model loading count against no store.
    build(["warm-up note"], models="cpu-small", cache=False).context("warm-up?")
    body, measured = [], []
    for label, source, questions in stores(args.data):
        lines, record = measure(label, source, questions, args.queries)
        body += lines
        measured.append(record)
    lines, cli = cli_query(args.data)
    body += lines
    provenance = (
        f"Measured {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by `scripts/bench_query.py`; "
        f"muster {__version__}, Python {platform.python_version()}, {os.cpu_count()} cores, "
        "packaged all-MiniLM-L6-v2 embedder, RRF order (no cross-encoder). Wall clock on a shared machine."
    )
    header = ["# build and query benchmark (cpu-small)", "", provenance, ""]
    data = {"stores": measured, "cli_query": cli}
    write_bench(args.out, "\n".join(header + body), data, points(measured))
    print(f"wrote {args.out} and {bench_json(args.out)}")


if __name__ == "__main__":
    main()
