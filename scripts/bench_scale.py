"""Benchmark a store at 1M and 10M tokens end to end: adds, the first read, queries, growth.

The stores are real BEAM chats: every message of the 1M-token chats, in
folder order, until the level's token count is reached (the 10M level is ten
1M chats, as ``bench_derive.py``'s big store). Per level, each in a process
of its own so that its peak RSS is its own:

* ``Store.add`` in batches of 5,000 records into a new file: records/s, file
  size;
* the first read of the store (``Store.memory()``): seconds per build stage
  (derive: detect and cut; BM25; graph; pieces; embed), the embedder's
  pieces/s, peak RSS, the file size with every vector and analysis in it;
* ``build()`` of the same records as a library call (a fresh memo; vectors
  from the bench's vector cache): seconds per stage;
* queries (the chats' own probing questions, 100 after one warm-up): p50/p95
  per stage (dense, BM25, graph, fusion, select and assembly), no
  cross-encoder;
* one record added then one read, 10 times: p50/p95;
* a new process opening the built store and answering one query.

Vectors are computed once: the bench keeps a vector cache under --work and
seeds each store file from it (and fills it back), so a rerun, or the 10M
level after the 1M level, embeds only what it has not embedded before. The
report says how many pieces each run embedded and at what rate.

Progress is shown on a terminal (the library's ``progress=`` option and the
script's own lines on stderr). Wall clock on a shared machine, cpu-small
profile; a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MODELS = "cpu-small"
LEVELS = {"1M": 1_000_000, "10M": 10_000_000}
BATCH = 5_000
QUERIES = 100
GROWTH_READS = 10
GOALS = {
    "all but embedding 10M s": 30.0,
    "peak rss gb": 4.0,
    "query p95 ms 1M": 30.0,
    "query p95 ms 10M": 100.0,
    "read after add p50 ms": 100.0,
}
QUERY_STAGES = ("dense", "bm25", "graph", "rerank", "select+assemble")
BUILD_STAGES = ("detect", "cut", "bm25", "graph", "pieces", "embed")


def say(message: str) -> None:
    print(f"[bench-scale {datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def chats(data: Path, target: str) -> tuple[list[dict[str, str]], list[str], list[str], int]:
    """Message records of the 1M chats in folder order until ``target`` tokens; their questions."""
    goal = LEVELS.get(target) or int(target)
    from muster_exact import tokens
    from muster_exact.corpora import beam_chat_file, beam_messages

    folders = sorted((data / "beam/1M").iterdir(), key=lambda p: int(p.name))
    records: list[dict[str, str]] = []
    questions: list[str] = []
    used: list[str] = []
    total = 0
    for folder in folders:
        chat_file = beam_chat_file(folder)
        if chat_file is None:
            continue
        chat = json.loads(chat_file.read_text(encoding="utf-8"))
        part = [
            {"id": f"{folder.name}-{m['id']}", "role": str(m["role"]), "text": str(m["content"])}
            for m, _ in beam_messages(chat)
            if str(m.get("content", "")).strip()
        ]
        for record, n in zip(part, tokens.count_many([r["text"] for r in part]), strict=True):
            if total >= goal:
                break
            records.append(record)
            total += n
        used.append(folder.name)
        probing = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
        questions += [q["question"] for ability in sorted(probing) for q in probing[ability]]
        if total >= goal:
            break
    return records, questions, used, total


def seed_vectors(store_path: Path, shared: Path, back: bool = False) -> None:
    """Copy the bench's cached vectors into the store file (``back``: the store's into the cache)."""
    if not shared.exists() and not back:
        return
    source, target = (store_path, shared) if back else (shared, store_path)
    from muster_exact.vectors import VectorCache

    VectorCache(target).close()  # the table exists in both
    db = sqlite3.connect(target)
    try:
        db.execute("ATTACH DATABASE ? AS other", (str(source),))
        db.execute("INSERT OR IGNORE INTO main.vectors SELECT * FROM other.vectors")
        db.commit()
        db.execute("DETACH DATABASE other")
    finally:
        db.close()


def query_stages(reader: Any, questions: list[str]) -> dict[str, dict[str, float]]:
    reader.context(questions[0])  # warm-up: first use of each channel
    runs: dict[str, list[float]] = {stage: [] for stage in (*QUERY_STAGES, "total")}
    for i in range(QUERIES):
        question = questions[(i + 1) % len(questions)] + ("" if i < len(questions) else f" ({i})")
        context, seconds = timed(lambda q=question: reader.context(q))
        for stage in QUERY_STAGES:
            runs[stage].append(context.timings.get(stage, 0.0))
        runs["total"].append(seconds)
    return {
        stage: {"p50": percentile(v, 0.5) * 1000, "p95": percentile(v, 0.95) * 1000}
        for stage, v in runs.items()
    }


def child_store(level: str, data: Path, work: Path) -> dict[str, Any]:
    """Adds, the first read, growth, through the Store (this process: its peak RSS)."""
    from muster_exact.store import Store

    records, questions, used, total = chats(data, level)
    out: dict[str, Any] = {"level": level, "chats": used, "records": len(records), "tokens": total}
    fresh = work / f"adds-{level}.muster"
    fresh.unlink(missing_ok=True)
    say(f"{level}: adding {len(records):,} records ({total:,} tokens) in batches of {BATCH:,}")
    with Store.open(fresh) as store:
        _, out["add_s"] = timed(
            lambda: [store.add(records[i : i + BATCH]) for i in range(0, len(records), BATCH)]
        )
    out["file_records_mb"] = fresh.stat().st_size / 1e6
    built = work / f"scale-{level}.muster"
    for path in (built, Path(f"{built}-wal"), Path(f"{built}-shm")):
        path.unlink(missing_ok=True)
    shutil.copyfile(fresh, built)
    fresh.unlink()
    seed_vectors(built, work / "vectors.sqlite")
    say(f"{level}: first read (derive, cut, index, embed what the vector cache lacks)")
    with Store.open(built, models=MODELS) as store:
        store.progress = True
        memory, out["first_read_s"] = timed(store.memory)
        out["store_timings"] = dict(memory.timings)
        out["units"], out["parents"] = len(memory.cut.units), len(memory.cut.parents)
        out["pieces"] = len(memory.pieces.texts)
        out["embedded"] = store.embedded
        out["branch"] = memory.plan.branch
        embed_s = memory.timings["embed"]
        say(f"{level}: {out['embedded']:,} of {out['pieces']:,} pieces embedded in {embed_s:.0f} s")
    seed_vectors(built, work / "vectors.sqlite", back=True)
    out["file_built_mb"] = built.stat().st_size / 1e6
    out["rss_gb"] = peak_rss_gb()

    say(f"{level}: one record added then one read, {GROWTH_READS} times")
    grow = work / f"grow-{level}.muster"
    shutil.copyfile(built, grow)
    extra = chats_after(data, used, GROWTH_READS)
    reads: list[float] = []
    analysed: list[int] = []
    with Store.open(grow, models=MODELS) as store:
        store.context(questions[0])
        for record in extra:
            store.add(record)
            before = sum(store.memo.computed.values())
            _, seconds = timed(lambda: store.context(questions[0]))
            reads.append(seconds)
            analysed.append(sum(store.memo.computed.values()) - before)
    for path in (grow, Path(f"{grow}-wal"), Path(f"{grow}-shm")):
        path.unlink(missing_ok=True)
    out["growth"] = {
        "p50": percentile(reads, 0.5) * 1000,
        "p95": percentile(reads, 0.95) * 1000,
        "analysed": statistics.median(analysed),
    }
    return out


def chats_after(data: Path, used: list[str], n: int) -> list[dict[str, str]]:
    """``n`` messages of the first 1M chat not in the store."""
    from muster_exact.corpora import beam_chat_file, beam_messages

    for folder in sorted((data / "beam/1M").iterdir(), key=lambda p: int(p.name)):
        chat_file = beam_chat_file(folder)
        if folder.name in used or chat_file is None:
            continue
        chat = json.loads(chat_file.read_text(encoding="utf-8"))
        return [
            {"id": f"x{folder.name}-{m['id']}", "role": str(m["role"]), "text": str(m["content"])}
            for m, _ in beam_messages(chat)
            if str(m.get("content", "")).strip()
        ][:n]
    raise SystemExit("no BEAM-1M chat left to add from")


def child_build(level: str, data: Path, work: Path) -> dict[str, Any]:
    """``build()`` as a library call with a fresh memo, and the queries over it."""
    from muster_exact.memory import build
    from muster_exact.vectors import VectorCache

    records, questions, _, _ = chats(data, level)
    say(f"{level}: build() of {len(records):,} records (vectors from the bench's cache)")
    vectors = VectorCache(work / "vectors.sqlite")
    memory, seconds = timed(lambda: build(records, models=MODELS, cache=vectors, progress=True))
    out: dict[str, Any] = {"build_s": seconds, "build_timings": dict(memory.timings)}
    out["build_embedded"] = memory.embedded
    say(f"{level}: {QUERIES} queries")
    out["queries"] = query_stages(memory, questions)
    out["build_rss_gb"] = peak_rss_gb()
    return out


def child_open(level: str, data: Path, work: Path) -> dict[str, Any]:
    """A new process: open the built store and answer one query."""
    started = time.perf_counter()
    from muster_exact.store import Store

    _, questions, _, _ = chats(data, level)
    read_questions = time.perf_counter() - started
    with Store.open(work / f"scale-{level}.muster", models=MODELS) as store:
        store.context(questions[0])
        seconds = time.perf_counter() - started - read_questions
        memory = store.memory()
        return {
            "open_s": seconds,
            "open_models_s": memory.timings["load_models"],
            "open_computed": sum(store.memo.computed.values()),
            "open_embedded": store.embedded,
        }


CHILDREN = {"store": child_store, "build": child_build, "open": child_open}


def run_child(kind: str, level: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--level", level, "--data", str(args.data)]
    command += ["--work", str(args.work)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def stage_row(name: str, timings: dict[str, float], total: float) -> str:
    cells = " | ".join(f"{timings.get(stage, 0.0):.1f}" for stage in (*BUILD_STAGES, "load_models"))
    return f"| {name} | {cells} | {but_embedding(timings):.1f} | {total:.1f} |"


def but_embedding(timings: dict[str, float]) -> float:
    """The build stages less the embedder (its loading and its pieces)."""
    return sum(timings.get(stage, 0.0) for stage in BUILD_STAGES if stage != "embed")


def report(levels: list[dict[str, Any]]) -> str:
    from muster_exact import __version__

    lines = [
        "# Scale benchmark: 1M and 10M tokens (cpu-small)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_scale.py` (`make bench-scale`); "
        f"muster {__version__}, Python {platform.python_version()}, {os.cpu_count()} cores. "
        "Wall clock on a shared machine; each level in processes of its own.",
        "",
        "## The stores",
        "",
        "| level | BEAM-1M chats | records | tokens | branch | units | parents | pieces |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in levels:
        lines.append(
            f"| {r['level']} | {', '.join(r['chats'])} | {r['records']:,} | {r['tokens']:,} | "
            f"{r['branch']} | {r['units']:,} | {r['parents']:,} | {r['pieces']:,} |"
        )
    lines += [
        "",
        "## Adds and the first read",
        "",
        "| level | add s (records/s) | file after adds MB | first read s | pieces embedded this run | "
        "embed pieces/s | file built MB | peak RSS GB (store process) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in levels:
        embed_s = r["store_timings"].get("embed", 0.0)
        rate = f"{r['embedded'] / embed_s:.1f}" if r["embedded"] and embed_s else "-"
        lines.append(
            f"| {r['level']} | {r['add_s']:.1f} ({r['records'] / r['add_s']:,.0f}) | "
            f"{r['file_records_mb']:.0f} | {r['first_read_s']:.1f} | {r['embedded']:,} | {rate} | "
            f"{r['file_built_mb']:.0f} | {r['rss_gb']:.2f} |"
        )
    lines += [
        "",
        "## Build stages, seconds",
        "",
        "`store` is the first read through `Store.memory()` (analyses written to the file); `build()` is "
        "the library call with a fresh memo, its vectors read from the bench's cache. `total` also "
        "counts what lies between the stages (in `store`: reading the records, writing the analyses).",
        "",
        f"| level, path | {' | '.join(BUILD_STAGES)} | loading the embedder | all but embedding | total |",
        f"|---|{'---|' * (len(BUILD_STAGES) + 3)}",
    ]
    for r in levels:
        lines.append(stage_row(f"{r['level']} store", r["store_timings"], r["first_read_s"]))
        lines.append(stage_row(f"{r['level']} build()", r["build_timings"], r["build_s"]))
    lines += [
        "",
        f"## Queries ({QUERIES} per level, the chats' own probing questions; no cross-encoder)",
        "",
        f"| level | {' | '.join(f'{s} p50 / p95 ms' for s in (*QUERY_STAGES, 'total'))} |",
        f"|---|{'---|' * (len(QUERY_STAGES) + 1)}",
    ]
    for r in levels:
        cells = " | ".join(
            f"{r['queries'][s]['p50']:.1f} / {r['queries'][s]['p95']:.1f}" for s in (*QUERY_STAGES, "total")
        )
        lines.append(f"| {r['level']} | {cells} |")
    lines += [
        "",
        "`dense` includes embedding the query; `rerank` is the fusion of the channels' orders.",
        "",
        "## Growth and a new process",
        "",
        f"| level | read after adding 1 record p50 / p95 ms ({GROWTH_READS} reads) | texts analysed per read "
        "(median) | new process: open + first query s | of which loading the embedder s | texts analysed |",
        "|---|---|---|---|---|---|",
    ]
    for r in levels:
        g = r["growth"]
        lines.append(
            f"| {r['level']} | {g['p50']:.0f} / {g['p95']:.0f} | {g['analysed']:.0f} | {r['open_s']:.2f} | "
            f"{r['open_models_s']:.2f} | {r['open_computed']:,} |"
        )
    lines += ["", "## Goals and figures reached", "", "| goal | target | reached |", "|---|---|---|"]
    by_level = {r["level"]: r for r in levels}
    if "10M" in by_level:
        r = by_level["10M"]
        worst = max(but_embedding(t) for t in (r["store_timings"], r["build_timings"]))
        lines.append(f"| everything but embedding at 10M tokens | <= 30 s | {worst:.1f} s |")
    rss = max(max(r["rss_gb"], r["build_rss_gb"]) for r in levels)
    lines.append(f"| peak RSS | <= 4 GB | {rss:.2f} GB |")
    for name, target in (("1M", 30.0), ("10M", 100.0)):
        if name in by_level:
            p95 = by_level[name]["queries"]["total"]["p95"]
            lines.append(f"| query p95 at {name} | <= {target:.0f} ms | {p95:.1f} ms |")
    for r in levels:
        lines.append(f"| read after 1 add at {r['level']}, p50 | <= 100 ms | {r['growth']['p50']:.0f} ms |")
        lines.append(f"| new process, open + first query at {r['level']} | <= 1 s | {r['open_s']:.2f} s |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("MUSTER_DATA", "../shared/data")))
    parser.add_argument("--out", type=Path, default=Path("results/bench/scale.md"))
    parser.add_argument("--work", type=Path, default=Path(".cache/muster/bench-scale"))
    parser.add_argument("--levels", default="1M,10M", help="comma-separated: 1M, 10M or a token count")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--level", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.level, args.data, args.work)))
        return
    levels = []
    for level in args.levels.split(","):
        if level not in LEVELS and not level.isdigit():
            raise SystemExit(f"unknown level {level!r}; use {', '.join(LEVELS)} or a token count")
        result: dict[str, Any] = {}
        for kind in ("store", "build", "open"):
            result.update(run_child(kind, level, args))
        levels.append(result)
        say(f"{level}: done")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(levels), encoding="utf-8")
    say(f"wrote {args.out}")


if __name__ == "__main__":
    main()
