"""Benchmark a store at 1M and 10M tokens end to end: adds, the first read, queries, growth.

The stores are real BEAM chats: every message of the 1M-token chats, then of
the 100K chats, in folder order, until the level's token count is reached
(the 10M level: every 1M chat here and most 100K chats, as
``bench_derive.py``'s big store). Per level, each in a process
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
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_store import chat_records, seed_vectors  # the store bench's records and vector seeding

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the harness: the bench file format

from harness.report.figures import StoreSizes, bench_json, write_bench
from muster_exact.core import progress

MODELS = "cpu-small"
LEVELS = {"1M": 1_000_000, "10M": 10_000_000}
BATCH = 5_000
QUERIES = 100
GROWTH_READS = 10
EMBED_SAMPLE = 400  # pieces embedded afresh to measure the embedder's rate at each level
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
    """Message records of the 1M chats, then the 100K chats, in folder order until ``target``
    tokens; their questions."""
    goal = LEVELS.get(target) or int(target)
    from muster_exact.text import tokens
    from muster_exact.verify.corpora import beam_chat_file

    folders = [folder for size in ("1M", "100K") for folder in _chat_folders(data, size)]
    records: list[dict[str, str]] = []
    questions: list[str] = []
    used: list[str] = []
    total = 0
    for folder in folders:
        chat_file = beam_chat_file(folder)
        if chat_file is None:
            continue
        name = f"{folder.parent.name}/{folder.name}"
        part = chat_records(data, f"beam/{name}", f"{name}-")
        for record, n in zip(part, tokens.count_many([r["text"] for r in part]), strict=True):
            if total >= goal:
                break
            records.append(record)
            total += n
        used.append(name)
        probing = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
        questions += [q["question"] for ability in sorted(probing) for q in probing[ability]]
        if total >= goal:
            break
    return records, questions, used, total


def _chat_folders(data: Path, size: str) -> list[Path]:
    return sorted((data / "beam" / size).iterdir(), key=lambda p: int(p.name))


def query_stages(reader: Any, questions: list[str]) -> dict[str, dict[str, float]]:
    reader.context(questions[0])  # warm-up: first use of each channel
    runs: dict[str, list[float]] = {stage: [] for stage in (*QUERY_STAGES, "total")}
    for i in range(1, QUERIES + 1):
        # Each query new to the memory: a repeated one is answered from the channels' caches.
        question = questions[i % len(questions)] + ("" if i < len(questions) else f" ({i})")
        context, seconds = timed(lambda q=question: reader.context(q))
        for stage in QUERY_STAGES:
            runs[stage].append(context.timings.get(stage, 0.0))
        runs["total"].append(seconds)
    return {
        stage: {"p50": percentile(v, 0.5) * 1000, "p95": percentile(v, 0.95) * 1000}
        for stage, v in runs.items()
    }


def graph_asked(memory: Any, questions: list[str]) -> dict[str, float]:
    """The graph channel's own cost when asked, query by query: on group parents (the prose
    branch) the default rules do not ask it, so a query's ``graph`` stage is 0 there."""
    from muster_exact.channels import pool_size

    graph, k = memory.channel("graph"), pool_size(memory.plan.units_read)
    asked = [f"{questions[i % len(questions)]} (graph {i})" for i in range(QUERIES + 1)]
    runs = [timed(lambda q=q: graph.propose(q, k))[1] for q in asked][1:]  # the first warms it up
    return {"p50": percentile(runs, 0.5) * 1000, "p95": percentile(runs, 0.95) * 1000}


def child_store(level: str, data: Path, work: Path) -> dict[str, Any]:
    """Adds, the first read, growth, through the Store (this process: its peak RSS)."""
    from muster_exact.store import Store

    records, questions, used, total = chats(data, level)
    out, fresh = adds(level, records, used, total, work)
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
    for path in (grow, Path(f"{grow}-wal"), Path(f"{grow}-shm")):
        path.unlink(missing_ok=True)  # an interrupted run's journal must not replay into the copy
    shutil.copyfile(built, grow)
    extra = chats_after(data, used, GROWTH_READS)
    reads: list[float] = []
    parts: dict[str, list[float]] = {"grow": [], "embed": [], "query": []}
    analysed: list[int] = []
    recut: list[int] = []
    afresh = 0
    with Store.open(grow, models=MODELS) as store:
        store.context(questions[0])
        for i, record in enumerate(extra):
            store.add(record)
            before = sum(store.memo.computed.values())
            grown, grow_s = timed(store.memory)
            # A question new to the memory each time (the channels keep their last answers).
            question = f"{questions[0]} ({i})"
            _, query_s = timed(lambda: store.context(question))  # noqa: B023 - called at once
            reads.append(grow_s + query_s)
            parts["embed"].append(grown.timings["embed"])
            parts["grow"].append(grow_s - grown.timings["embed"])
            parts["query"].append(query_s)
            analysed.append(sum(store.memo.computed.values()) - before)
            afresh += store.rebuilt_because is not None
            recut.append(
                len(grown.cut.units) - grown.growth.first_unit if grown.growth else len(grown.cut.units)
            )
    for path in (grow, Path(f"{grow}-wal"), Path(f"{grow}-shm")):
        path.unlink(missing_ok=True)
    out["growth"] = {
        "p50": percentile(reads, 0.5) * 1000,
        "p95": percentile(reads, 0.95) * 1000,
        **{f"{name}_p50": percentile(values, 0.5) * 1000 for name, values in parts.items()},
        "analysed": statistics.median(analysed),
        "recut": statistics.median(recut),
        "afresh": afresh,
    }
    return out


def adds(
    level: str, records: list[dict[str, str]], used: list[str], total: int, work: Path
) -> tuple[dict[str, Any], Path]:
    """``Store.add`` of every record, in batches, into a new file: seconds and the file's size."""
    from muster_exact.store import Store

    out: dict[str, Any] = {"level": level, "chats": used, "records": len(records), "tokens": total}
    fresh = work / f"adds-{level}.muster"
    fresh.unlink(missing_ok=True)
    say(f"{level}: adding {len(records):,} records ({total:,} tokens) in batches of {BATCH:,}")
    with Store.open(fresh) as store:
        _, out["add_s"] = timed(
            lambda: [store.add(records[i : i + BATCH]) for i in range(0, len(records), BATCH)]
        )
    out["file_records_mb"] = fresh.stat().st_size / 1e6
    return out, fresh


def child_stages(level: str, data: Path, work: Path) -> dict[str, Any]:
    """Without the embedder: the adds, every build stage but embedding, then full queries over a
    memory whose piece vectors are random unit vectors of the real shape (what scoring costs does
    not depend on the values, and nothing is embedded but the queries)."""
    import numpy as np

    from muster_exact.cache.memo import Memo
    from muster_exact.cache.vectors import VectorCache, text_key
    from muster_exact.channels.given import Given
    from muster_exact.memory import build, embedding_pieces, planned, rules_of, unit_texts
    from muster_exact.memory.indexes import built
    from muster_exact.models import load_embedder

    records, questions, used, total = chats(data, level)
    out, fresh = adds(level, records, used, total, work)
    fresh.unlink()
    say(f"{level}: every build stage but the embedder")
    memo = Memo()
    started = time.perf_counter()
    with progress.shown(True):
        plan, cut, models, timings = planned(records, models=MODELS, memo=memo)
        rules = rules_of(plan)
        given = Given(plan, cut, unit_texts(cut), models, rules, memo, VectorCache(None), timings)
        built(given, [name for name in rules.channel_names() if name != "dense"])  # timed in `timings`
        with given.timed("pieces"):
            pieces = embedding_pieces(cut, models, rules.pieces, memo)
    out["stages_s"] = time.perf_counter() - started
    out["build_timings"] = timings
    out["units"], out["parents"], out["pieces"] = len(cut.units), len(cut.parents), len(pieces.texts)
    out["branch"] = plan.branch
    out["build_rss_gb"] = peak_rss_gb()
    embedder = load_embedder(models.embedder)
    out["embed_sample"] = embed_rate(embedder, list(pieces.texts))
    say(f"{level}: random unit vectors for {len(pieces.texts):,} pieces, then {QUERIES} queries")
    dim = len(embedder.embed(["dimension"])[0])
    matrix = np.random.default_rng(0).standard_normal((len(pieces.texts), dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    vectors = VectorCache(None)
    rows = zip(pieces.texts, matrix, strict=True)
    vectors.put(embedder.model_id, [(text_key(text), row.tobytes(), dim) for text, row in rows])
    memory = build(records, models=MODELS, cache=vectors, memo=memo)
    assert memory.embedded == 0, "every piece's vector was given"
    out["queries"] = query_stages(memory, questions)
    out["graph_asked"] = graph_asked(memory, questions)
    out["random_vectors"] = True
    out["rss_gb"] = peak_rss_gb()
    return out


def embed_rate(embedder: Any, texts: list[str]) -> dict[str, float]:
    """The embedder's rate on a sample of the store's own pieces, spread evenly over it, computed
    afresh (no cache): pieces/s and cl100k tokens/s."""
    from muster_exact.text import tokens

    step = max(1, len(texts) // EMBED_SAMPLE)
    sample = texts[::step][:EMBED_SAMPLE]
    embedder.embed(sample[:8])  # the first call loads what it loads
    _, seconds = timed(lambda: embedder.embed(sample))
    n_tokens = sum(tokens.count_many(sample))
    return {"pieces": len(sample), "seconds": seconds, "tokens": n_tokens, "all_pieces": len(texts)}


def chats_after(data: Path, used: list[str], n: int) -> list[dict[str, str]]:
    """``n`` messages of the first chat not in the store."""
    from muster_exact.verify.corpora import beam_chat_file

    for folder in [folder for size in ("1M", "100K") for folder in _chat_folders(data, size)]:
        chat_file = beam_chat_file(folder)
        if f"{folder.parent.name}/{folder.name}" in used or chat_file is None:
            continue
        return chat_records(data, f"beam/{folder.parent.name}/{folder.name}", f"x{folder.name}-")[:n]
    raise SystemExit("no BEAM chat left to add from")


def child_build(level: str, data: Path, work: Path) -> dict[str, Any]:
    """``build()`` as a library call with a fresh memo, and the queries over it."""
    from muster_exact.cache.vectors import VectorCache
    from muster_exact.memory import build
    from muster_exact.models import load_embedder

    records, questions, _, _ = chats(data, level)
    say(f"{level}: build() of {len(records):,} records (vectors from the bench's cache)")
    vectors = VectorCache(work / "vectors.sqlite")
    memory, seconds = timed(lambda: build(records, models=MODELS, cache=vectors, progress=True))
    out: dict[str, Any] = {"build_s": seconds, "build_timings": dict(memory.timings)}
    out["build_embedded"] = memory.embedded
    out["embed_sample"] = embed_rate(load_embedder(memory.models.embedder), list(memory.pieces.texts))
    say(f"{level}: {QUERIES} queries")
    out["queries"] = query_stages(memory, questions)
    out["graph_asked"] = graph_asked(memory, questions)
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
            # A derive result read from the file has no derive timings.
            "open_derived": bool(memory.derived is not None and memory.derived.timings),
        }


CHILDREN = {"store": child_store, "build": child_build, "open": child_open, "stages": child_stages}


def run_child(kind: str, level: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--level", level, "--data", str(args.data)]
    command += ["--work", str(args.work)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def stage_row(name: str, timings: dict[str, float], total: float | None) -> str:
    cells = " | ".join(f"{timings.get(stage, 0.0):.1f}" for stage in (*BUILD_STAGES, "load_models"))
    shown_total = "-" if total is None else f"{total:.1f}"
    return f"| {name} | {cells} | {but_embedding(timings):.1f} | {shown_total} |"


def but_embedding(timings: dict[str, float]) -> float:
    """The build stages less the embedder (its loading and its pieces)."""
    return sum(timings.get(stage, 0.0) for stage in BUILD_STAGES if stage != "embed")


def commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    )
    return done.stdout.strip() or "unknown"


def cell(value: Any, form: str = ",.0f") -> str:
    return "-" if value is None else format(value, form)


def points(levels: list[dict[str, Any]]) -> StoreSizes:
    """What the results page plots: each level's build without embedding (the ``build()`` path)
    and query total against its tokens."""
    sizes = StoreSizes({}, {}, [])
    for r in levels:
        sizes.build.setdefault("without embedding (scale.md)", []).append(
            (r["tokens"], but_embedding(r["build_timings"]))
        )
        total = r["queries"].get("total")
        if total is None:
            sizes.skipped.append(f"scale.md, {r['level']}: no query total (no vectors: no assembly)")
            continue
        for q in ("p50", "p95"):
            sizes.query.setdefault(f"query {q} (scale.md)", []).append((r["tokens"], total[q]))
    return sizes


def report(levels: list[dict[str, Any]]) -> str:
    from muster_exact import __version__

    unembedded = [r["level"] for r in levels if "store_timings" not in r]
    lines = [
        "# Scale benchmark: 1M and 10M tokens (cpu-small)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_scale.py` (`make bench-scale`) "
        f"at commit {commit()}; muster {__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores. "
        "Wall clock on a shared machine; each level in processes of its own.",
        "",
    ]
    if unembedded:
        lines += [
            f"Measured without the embedder at {', '.join(unembedded)} (`--without-embedding`): the "
            "adds, every build stage but the embedding, and whole queries (every channel, the fusion, "
            "selection and assembly) over a memory whose piece vectors are random unit vectors of the "
            "real shape: what scoring costs does not depend on the values, and only the queries are "
            "embedded. The store's own vectors were not computed, so there is no first read, growth "
            "or new-process figure at that level. `-` marks them.",
            "",
        ]
    lines += [
        "## The stores",
        "",
        "| level | BEAM chats | records | tokens | branch | units | parents | pieces |",
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
        "embed pieces/s | file built MB | peak RSS GB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in levels:
        embed_s = r.get("store_timings", {}).get("embed", 0.0)
        embedded = r.get("embedded")
        rate = f"{embedded / embed_s:.1f}" if embedded and embed_s else "-"
        rss = max(r["rss_gb"], r.get("build_rss_gb", 0.0))
        lines.append(
            f"| {r['level']} | {r['add_s']:.1f} ({r['records'] / r['add_s']:,.0f}) | "
            f"{r['file_records_mb']:.0f} | {cell(r.get('first_read_s'), '.1f')} | {cell(embedded)} | "
            f"{rate} | {cell(r.get('file_built_mb'))} | {rss:.2f} |"
        )
    lines += [
        "",
        f"The embedder's rate, measured on {EMBED_SAMPLE} of each store's own pieces (spread evenly, "
        "embedded afresh, one call):",
        "",
        "| level | pieces | seconds | pieces/s | cl100k tokens/s | all the store's pieces at that rate |",
        "|---|---|---|---|---|---|",
    ]
    for r in levels:
        e = r["embed_sample"]
        rate, token_rate = e["pieces"] / e["seconds"], e["tokens"] / e["seconds"]
        minutes = e["all_pieces"] / rate / 60
        lines.append(
            f"| {r['level']} | {e['pieces']} | {e['seconds']:.1f} | {rate:.1f} | {token_rate:,.0f} | "
            f"{e['all_pieces']:,} pieces / {rate:.1f} per s = {minutes:,.0f} min (arithmetic) |"
        )
    lines += [
        "",
        "## Build stages, seconds",
        "",
        "`store` is the first read through `Store.memory()` (analyses written to the file); `build()` is "
        "the library call with a fresh memo, its vectors read from the bench's cache (without the "
        "embedder: `planned()`, the channels' `build()` and `embedding_pieces()`, the same functions). "
        "`total` also counts what lies "
        "between the stages (in `store`: reading the records, writing the analyses).",
        "",
        f"| level, path | {' | '.join(BUILD_STAGES)} | loading the embedder | all but embedding | total |",
        f"|---|{'---|' * (len(BUILD_STAGES) + 3)}",
    ]
    for r in levels:
        if "store_timings" in r:
            lines.append(stage_row(f"{r['level']} store", r["store_timings"], r["first_read_s"]))
        lines.append(
            stage_row(f"{r['level']} build()", r["build_timings"], r.get("build_s", r.get("stages_s")))
        )
    stages = (*QUERY_STAGES, "total")
    lines += [
        "",
        f"## Queries ({QUERIES} per level, the chats' own probing questions; no cross-encoder)",
        "",
        f"| level | {' | '.join(f'{s} p50 / p95 ms' for s in stages)} |",
        f"|---|{'---|' * len(stages)}",
    ]
    for r in levels:
        q = r["queries"]
        cells = " | ".join(f"{q[s]['p50']:.1f} / {q[s]['p95']:.1f}" if s in q else "-" for s in stages)
        lines.append(f"| {r['level']} | {cells} |")
    lines += [
        "",
        "`dense` includes embedding the query; `rerank` is the fusion of the channels' orders. "
        "Where a store's parents are groups (the prose branch), the default rules do not ask the "
        "graph channel, so its stage is 0 there; what it costs when asked, on the same questions:",
        "",
        "| level | graph channel asked p50 / p95 ms |",
        "|---|---|",
        *(
            f"| {r['level']} | {r['graph_asked']['p50']:.1f} / {r['graph_asked']['p95']:.1f} |"
            for r in levels
            if "graph_asked" in r
        ),
        "",
        "## Growth and a new process",
        "",
        f"One record added, then one read (`Store.memory()`, then a query new to the memory), "
        f"{GROWTH_READS} times. The read is split into growing the memory less the embedding, "
        "embedding the new text (the new record's pieces and the tail unit's), and the query.",
        "",
        "| level | read after adding 1 record p50 / p95 ms | growing p50 ms | embedding the new text "
        "p50 ms | query p50 ms | units cut again per read (median) | texts analysed per read (median) "
        "| reads built afresh |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in levels:
        if "growth" not in r:
            lines.append(f"| {r['level']} | - | - | - | - | - | - | - |")
            continue
        g = r["growth"]
        row = [f"{g['p50']:.0f} / {g['p95']:.0f}", *(f"{g[k]:.0f}" for k in ("grow_p50", "embed_p50"))]
        row += [f"{g[k]:.0f}" for k in ("query_p50", "recut", "analysed")]
        lines.append(f"| {r['level']} | {' | '.join(row)} | {g['afresh']} of {GROWTH_READS} |")
    lines += [
        "",
        "A new process opens the built store and answers one query (its plan and units are read "
        "from the file, not derived):",
        "",
        "| level | open + first query s | of which loading the embedder s | texts analysed | derived "
        "afresh |",
        "|---|---|---|---|---|",
    ]
    for r in levels:
        if "open_s" in r:
            lines.append(
                f"| {r['level']} | {r['open_s']:.2f} | {r['open_models_s']:.2f} | {r['open_computed']:,} | "
                f"{'yes' if r.get('open_derived') else 'no'} |"
            )
    lines += ["", "## Goals and figures reached", "", "| goal | target | reached |", "|---|---|---|"]
    by_level = {r["level"]: r for r in levels}
    if "10M" in by_level:
        r = by_level["10M"]
        worst = max(but_embedding(r[t]) for t in ("store_timings", "build_timings") if t in r)
        lines.append(f"| everything but embedding at 10M tokens | <= 30 s | {worst:.1f} s |")
    rss = max(max(r["rss_gb"], r.get("build_rss_gb", 0.0)) for r in levels)
    lines.append(f"| peak RSS | <= 4 GB | {rss:.2f} GB |")
    for name, target in (("1M", 100.0), ("10M", 100.0)):
        q = by_level.get(name, {}).get("queries", {})
        if "total" in q:
            how = " (random vectors)" if by_level[name].get("random_vectors") else ""
            lines.append(f"| query p95 at {name}{how} | <= {target:.0f} ms | {q['total']['p95']:.1f} ms |")
        elif q:
            channels = sum(q[c]["p95"] for c in ("dense", "bm25", "graph"))
            lines.append(
                f"| query p95 at {name} | <= {target:.0f} ms | the three channels' p95 summed: "
                f"{channels:.1f} ms (no assembly: no vectors) |"
            )
    for r in levels:
        if "growth" in r:
            lines.append(
                f"| read after 1 add at {r['level']}, p50 / p95 | <= 100 / 250 ms | "
                f"{r['growth']['p50']:.0f} / {r['growth']['p95']:.0f} ms |"
            )
            lines.append(
                f"| new process, open + first query at {r['level']} | <= 1 s | {r['open_s']:.2f} s |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("MUSTER_DATA", "../shared/data")))
    parser.add_argument("--out", type=Path, default=Path("results/bench/scale.md"))
    parser.add_argument("--work", type=Path, default=Path(".cache/muster/bench-scale"))
    parser.add_argument("--levels", default="1M,10M", help="comma-separated: 1M, 10M or a token count")
    parser.add_argument(
        "--without-embedding",
        default="",
        help="comma-separated levels measured without the embedder (every other stage, the channels "
        "that need no vectors); the default embeds every level",
    )
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
        kinds = ("stages",) if level in args.without_embedding.split(",") else ("store", "build", "open")
        for kind in kinds:
            result.update(run_child(kind, level, args))
        levels.append(result)
        say(f"{level}: done")
    write_bench(args.out, report(levels), {"levels": levels}, points(levels))
    say(f"wrote {args.out} and {bench_json(args.out)}")


if __name__ == "__main__":
    main()
