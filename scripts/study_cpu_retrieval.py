"""The CPU retrieval study: every rule variant on every benchmark at U = 10, 20, 40 (issues 11, 28).

Each variant is MUSTER under one set of retrieval rules (``muster_exact.rules``), MUSTER with a
lexical variant that was measured and not adopted (``scripts/study_lexical.py``), or a baseline,
scored as ``make reproduce`` scores it (evidence recall on LoCoMo, LoCoMo-Refined and BEAM;
answer-in-context on FactConsolidation) with a 95% bootstrap interval. Baselines read at the
larger of the exact MUSTER context's tokens and ``muster_native``'s for the same question, as
in the harness. A variant's rules include the build rules
(``unit_size``, ``pieces``): each distinct cut and piece rule is one build per store. Baselines
run on native's units, as in the harness, and again on units up to the record budget (the
units native had before issue 28), so no table compares native with a weakened baseline.

The development set is wider than the shipped benchmarks (issue 28): BEAM-1M, a subset fixed
before anything was measured on it: of the BEAM-1M chats with a chat file here (3, 4, 6, 7, 8,
9, 10, 31, 32), every other one in number order from the first: 3, 6, 8, 10, 32 (about 4.5M
tokens, 100 questions). A variant is adopted only if it helps there as well as on the
benchmarks, and costs no benchmark more than half a point.

The held-out check (``--held-out``, ``results/study/held_out.md``): the other four BEAM-1M chats
with a chat file here (4, 7, 9, 31), on which no rule of issue 28 was chosen: each was fixed on
the development set, then measured here once, unchanged after; native, the rules it replaced,
exact MUSTER and the two baselines (on both unit sizes) only.

Per benchmark and U, a paired comparison of ``muster_native`` with each baseline: the share of
questions where native is better, worse and equal, and a paired bootstrap interval of the
difference (questions resampled together). At U = 10, native and BM25 per question category.

    python scripts/study_cpu_retrieval.py --data ../shared/data --out results/study/cpu_retrieval.md
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from study_lexical import with_lexical  # noqa: E402
from study_report import MEASURE, markdown  # noqa: E402

from harness import benchmarks  # noqa: E402
from harness.benchmarks.metrics import question_scores  # noqa: E402
from harness.config import BenchmarkConfig  # noqa: E402
from harness.data import DataRoot  # noqa: E402
from harness.runs import library_sha256  # noqa: E402
from muster_exact import rules  # noqa: E402
from muster_exact.channels import pool_size  # noqa: E402
from muster_exact.memory import (  # noqa: E402
    Memory,
    build,
    variants,
)
from muster_exact.retrieve.assemble import Context  # noqa: E402
from muster_exact.retrieve.rerank import fuse  # noqa: E402

BEAM_1M_SUBSET = ("3", "6", "8", "10", "32")
BEAM_1M_HELD_OUT = ("4", "7", "9", "31")


@dataclass(frozen=True)
class Benchmark:
    config: BenchmarkConfig
    preset: str  # the family's U = 10 preset: budgets and models; U is set per run
    metric: str = "evidence_recall"
    chats: tuple[str, ...] | None = None  # BEAM conversations kept (by number), None: all


BENCHMARKS = {
    "locomo": Benchmark(BenchmarkConfig(name="locomo"), "locomo.u10"),
    "locomo_refined": Benchmark(BenchmarkConfig(name="locomo_refined"), "locomo.u10"),
    "mab": Benchmark(
        BenchmarkConfig(name="mab", splits=["Conflict_Resolution"]), "mab.u10", "answer_in_context"
    ),
    "beam": Benchmark(BenchmarkConfig(name="beam", scales=["100K"]), "beam.u10"),
    "beam_1m": Benchmark(BenchmarkConfig(name="beam", scales=["1M"]), "beam.u10", chats=BEAM_1M_SUBSET),
    # Issue 56: the ten BEAM-500K chats here, all development data (about 5M tokens, 200 questions).
    "beam_500k": Benchmark(BenchmarkConfig(name="beam", scales=["500K"]), "beam.u10"),
    "beam_1m_held_out": Benchmark(
        BenchmarkConfig(name="beam", scales=["1M"]), "beam.u10", chats=BEAM_1M_HELD_OUT
    ),
}
DEVELOPMENT = ("locomo", "locomo_refined", "mab", "beam", "beam_1m", "beam_500k")

E, N = rules.EXACT, rules.NATIVE
NATIVE_ROW = "muster_native"


@dataclass(frozen=True)
class Variant:
    """A row: ``kind`` "muster" or a baseline name; ``lexical``: a BM25 variant of
    ``scripts/study_lexical.py`` replacing the channel; ``voter``: one added to the fused order only."""

    name: str
    kind: str
    rules: rules.Rules
    lexical: str | None = None
    voter: str | None = None

    @property
    def memory_key(self) -> tuple[rules.Rules, str | None]:
        return (self.rules, self.lexical)


G_ALWAYS = N.replace(graph_votes="always")
HYBRID_ROW = "hybrid (bm25 + dense, RRF k = 60)"
VARIANTS: list[Variant] = [
    Variant("muster exact, whole units (before issue 11)", "muster", E.replace(pieces="unit")),
    Variant("muster (exact: pieces)", "muster", E),
    Variant(NATIVE_ROW, "muster", N),
    # Issue 28: record-store units no longer than the embedder's window, read in proportion.
    Variant(
        "native, units up to the record budget (before issue 28)", "muster", N.replace(unit_size="budget")
    ),
    # Issue 28: the graph's votes, the lexical channel at the record level, feedback.
    Variant("native, graph votes always (before issue 28)", "muster", G_ALWAYS),
    # Issue 28: on numbered logs, a graph of the current facts (0199); record stores are unchanged.
    Variant("native, every version in the graph (before issue 28)", "muster", N.replace(graph_facts="all")),
    # Issue 28: on record stores, one unit per message in each channel's pool (0205).
    Variant("native, any unit in a pool (before issue 28)", "muster", N.replace(pool_messages="any")),
    Variant("native, BM25 per record (MaxP)", "muster", N, lexical="records"),
    Variant("native, BM25 with RM3", "muster", N, lexical="rm3"),
    Variant("native, BM25 per record as a fourth RRF voter", "muster", N, voter="records"),
    Variant("native, BM25 with RM3 as a fourth RRF voter", "muster", N, voter="rm3"),
    # Issue 11's rows, each against today's native rules.
    Variant("native, words analyser", "muster", N.replace(lexical="words")),
    Variant("native, whole units", "muster", N.replace(pieces="unit")),
    Variant("native, mean pooling", "muster", N.replace(pooling="mean")),
    Variant("native, minmax fusion", "muster", N.replace(fusion="minmax")),
    Variant("native, zscore fusion", "muster", N.replace(fusion="zscore")),
    Variant("native, floors in fused order", "muster", N.replace(floor_order="fused")),
    Variant("native, no floors", "muster", N.replace(floors="none")),
    Variant("native, graph votes and floor always", "muster", G_ALWAYS.replace(graph_floor="always")),
    # Issue 56: native's ablations the rules above do not cover (muster_exact.memory.variants), and
    # two standard levers, each with its literature's parameters (decision 0222).
    Variant("native, no graph channel", "native_no_graph", N),
    Variant("native, candidate order shown", "native_score_order", N),
    Variant("native, every version kept", "native_all_versions_kept", N),
    Variant("native, Rocchio feedback on the dense query", "muster", N.replace(dense_feedback="rocchio")),
    Variant("native, MMR over parents in the fill", "muster", N.replace(coverage="mmr")),
    Variant(
        "native, graph votes always, floor selective", "muster", G_ALWAYS.replace(graph_floor="selective")
    ),
    Variant("bm25 (standard analyser)", "bm25", N),
    Variant("bm25 (standard analyser, units up to the record budget)", "bm25", N.replace(unit_size="budget")),
    Variant("bm25 (words analyser)", "bm25", E),
    Variant("bm25 per record (MaxP)", "bm25", N, lexical="records"),
    Variant("bm25 with RM3", "bm25", N, lexical="rm3"),
    Variant("dense (pieces, max)", "dense", N),
    Variant("dense (pieces, max, units up to the record budget)", "dense", N.replace(unit_size="budget")),
    Variant("dense (whole units)", "dense", N.replace(pieces="unit")),
    # Issue 56: what a practitioner builds first, BM25 and dense fused by reciprocal rank (k = 60).
    Variant(HYBRID_ROW, "hybrid", N),
]
NATIVE_ABLATIONS = variants.of_kind("native_ablation")
BASELINES = [v.name for v in VARIANTS if v.kind not in ("muster", *NATIVE_ABLATIONS)]
BM25_ROW = "bm25 (standard analyser)"
DENSE_ROW = "dense (pieces, max)"
# Native by category against each of these (issue 56: the hybrid is the closest baseline there).
REFERENCES = (BM25_ROW, HYBRID_ROW, DENSE_ROW)
HELD_OUT_ROWS = (
    NATIVE_ROW,
    "native, units up to the record budget (before issue 28)",
    "native, graph votes always (before issue 28)",
    "native, any unit in a pool (before issue 28)",
    "muster (exact: pieces)",
    BM25_ROW,
    "bm25 (standard analyser, units up to the record budget)",
    "dense (pieces, max)",
    "dense (pieces, max, units up to the record budget)",
    HYBRID_ROW,
)


STUDY_INTRO = (
    "# CPU retrieval study (issues 11, 28 and 56)",
    f"{MEASURE}`). `beam_1m` is the development subset fixed in advance (chats "
    f"{', '.join(BEAM_1M_SUBSET)}), on which no rule of issue 11 was chosen; `beam_500k` the ten "
    "BEAM-500K chats added for issue 56, development data too. A rule is adopted only if it helps on "
    "the long chats (`beam_1m` and `beam_500k`) as a whole and costs no shipped benchmark more than "
    "half a point.",
)
HELD_OUT_INTRO = (
    "# Held-out check: BEAM-1M chats no rule was chosen on (issue 28)",
    f"{MEASURE} --held-out`). Chats {', '.join(BEAM_1M_HELD_OUT)}: the BEAM-1M chats with a chat "
    "file here that are not in the development subset; no rule of issue 28 was chosen on them (each "
    "was fixed on the development set, then measured here once, unchanged after). Native, the rules "
    "it replaced, exact MUSTER and the baselines on both unit sizes.",
)


def stores(benchmark: str, data: DataRoot, limit: int | None) -> Iterator:
    spec = BENCHMARKS[benchmark]
    for store in benchmarks.load(spec.config.name).stores(data, spec.config):
        if spec.chats is not None and store.name.rsplit("-", 1)[-1] not in spec.chats:
            continue
        if limit is not None:
            store = dataclasses.replace(store, questions=store.questions[:limit])
        yield store


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--benchmarks", default=",".join(DEVELOPMENT))
    parser.add_argument("--units", default="10,20,40")
    parser.add_argument("--variants", default="", help="comma-separated row-name prefixes (default: all)")
    parser.add_argument("--questions-per-store", type=int, default=None)
    parser.add_argument("--out", default=None, help="markdown report (default: print only)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(_usable_cores(), 8),
        help="worker processes, each holding one store's builds (default: the cores, at most 8)",
    )
    parser.add_argument(
        "--held-out", action="store_true", help="the held-out BEAM-1M chats, native and its references only"
    )
    args = parser.parse_args()
    data = DataRoot.open(args.data, REPO / "manifests" / "data.json")
    wanted = [v for v in args.variants.split(",") if v]
    chosen = [v for v in VARIANTS if not wanted or any(v.name.startswith(w) for w in wanted)]
    if args.held_out:
        args.benchmarks = "beam_1m_held_out"
        chosen = [v for v in VARIANTS if v.name in HELD_OUT_ROWS]
    intro = HELD_OUT_INTRO if args.held_out else STUDY_INTRO
    if not any(v.name == NATIVE_ROW for v in chosen):
        chosen.insert(0, next(v for v in VARIANTS if v.name == NATIVE_ROW))
    units = [int(u) for u in args.units.split(",")]
    names = args.benchmarks.split(",")
    tasks = [
        Task(
            args.data, benchmark, index, args.questions_per_store, tuple(v.name for v in chosen), tuple(units)
        )
        for benchmark in names
        for index in range(_store_count(benchmark, data))
    ]
    done = _scored_stores(tasks, args.jobs)
    results = {b: _merged([done[(t.benchmark, t.index)] for t in tasks if t.benchmark == b]) for b in names}
    metrics = {b: BENCHMARKS[b].metric for b in names}
    report = markdown(intro, results, units, metrics, BASELINES, REFERENCES)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report, encoding="utf-8")
    else:
        print(report)


def _scored_stores(tasks: list[Task], jobs: int) -> dict[tuple[str, int], Scores]:
    """Every task's scores. The stores are independent: one process each (largest first), merged
    back in store order by the caller. A store already scored by this code (library and study
    scripts) is read back, so an hours-long run resumes where it stopped."""
    done: dict[tuple[str, int], Scores] = {}
    started = time.perf_counter()
    for task in tasks:
        if (kept := _kept(task)) is not None:
            done[(task.benchmark, task.index)] = kept
    todo = sorted((t for t in tasks if (t.benchmark, t.index) not in done), key=_size, reverse=True)
    print(f"{len(done)} of {len(tasks)} stores already scored by this code", file=sys.stderr, flush=True)
    workers = max(1, jobs)
    threads = max(1, _usable_cores() // workers)
    with ProcessPoolExecutor(workers, initializer=_blas_threads, initargs=(threads,)) as pool:
        futures = {pool.submit(_store_scores, task): task for task in todo}
        for future in as_completed(futures):
            task = futures[future]
            done[(task.benchmark, task.index)] = future.result()
            _keep(task, done[(task.benchmark, task.index)])
            print(
                f"{task.benchmark} store {task.index + 1}: {len(done)} of {len(tasks)} stores, "
                f"{time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    return done


def _usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), as the embedder's lanes count them."""
    from muster_exact.models.lanes import cores

    return cores()


def _blas_threads(threads: int) -> None:
    """A worker's share of the cores for the packaged embedder's lanes (one BLAS thread each,
    muster_exact.models.lanes). Every core in every worker oversubscribes them: two workers on 2
    cores embedded 256 texts in 158 s each with 2 threads apiece and in 62 s with one (vectors
    bit-identical; docs/decisions/0202-study-workers-share-cores.md)."""
    from muster_exact.models import lanes

    lanes.set_lanes(threads)


@dataclass(frozen=True)
class Task:
    """One store of one benchmark: what a worker process needs to score it."""

    data: str
    benchmark: str
    index: int
    limit: int | None
    variants: tuple[str, ...]
    units: tuple[int, ...]


@functools.cache
def _code_sha256() -> str:
    """The library's and the study scripts' code, hashed once per run: the code the run started with."""
    code = hashlib.sha256(library_sha256().encode())
    for script in ("study_cpu_retrieval.py", "study_lexical.py"):
        code.update((REPO / "scripts" / script).read_bytes())
    return code.hexdigest()


KEPT = REPO / "results" / "study" / "stores"


def _kept_path(task: Task) -> Path:
    """One file per store and task, committed with the report: a run of several hours outlives the
    machine it started on, and a checkout that holds a store's file resumes after it. The task's
    digest in the name keeps a run over some variants or questions from replacing the full run's."""
    what = hashlib.sha256(json.dumps(_kept_task(task), sort_keys=True).encode()).hexdigest()[:8]
    return KEPT / f"{task.benchmark}-{task.index + 1:02d}-{what}.json"


def _kept_task(task: Task) -> dict:
    return dataclasses.asdict(task) | {"data": None}  # where the data lives is not what was scored


def _kept(task: Task) -> Scores | None:
    """The store's scores if its file was written by this code (library and study scripts) for this
    task (variants, U, question limit); otherwise None, and the store is scored again."""
    try:
        saved = json.loads(_kept_path(task).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if saved.get("code") != _code_sha256() or saved.get("task") != json.loads(json.dumps(_kept_task(task))):
        return None
    rows = {name: {int(u): values for u, values in by_u.items()} for name, by_u in saved["rows"].items()}
    return Scores(rows, saved["categories"])


def _keep(task: Task, scores: Scores) -> None:
    path = _kept_path(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    kept = {"code": _code_sha256(), "task": _kept_task(task)} | dataclasses.asdict(scores)
    partial.write_text(json.dumps(kept) + "\n", encoding="utf-8")
    partial.replace(path)  # whole or absent


def _store_count(benchmark: str, data: DataRoot) -> int:
    return sum(1 for _ in stores(benchmark, data, 0))


def _size(task: Task) -> int:
    """Stores of the larger scales first, so the longest tasks do not start last."""
    return {"beam_1m": 3, "beam_1m_held_out": 3, "beam_500k": 3, "beam": 2}.get(task.benchmark, 1)


def _store_scores(task: Task) -> Scores:
    data = DataRoot.open(task.data, REPO / "manifests" / "data.json")
    store = next(islice(stores(task.benchmark, data, task.limit), task.index, None))
    chosen = [v for v in VARIANTS if v.name in task.variants]
    metric = BENCHMARKS[task.benchmark].metric
    scores = Scores({v.name: {u: [] for u in task.units} for v in chosen}, [])
    memories = _memories(store, task.benchmark, chosen)
    for question in store.questions:
        if not _scored(question, metric):
            continue
        scores.categories.append(str(question.category))
        for u in task.units:
            for name, context in _contexts(memories, chosen, question.text, u).items():
                value = question_scores(question, context.text, context.record_ids)[metric]
                scores.rows[name][u].append(float(value))  # type: ignore[arg-type]
    return scores


def _merged(parts: list[Scores]) -> Scores:
    first = parts[0]
    rows = {
        name: {u: [x for p in parts for x in p.rows[name][u]] for u in by_u}
        for name, by_u in first.rows.items()
    }
    return Scores(rows, [c for p in parts for c in p.categories])


@dataclass
class Scores:
    rows: dict[str, dict[int, list[float]]]  # variant -> U -> per-question scores, in one order
    categories: list[str]  # each question's category, in that order


def _scored(question, metric: str) -> bool:
    return bool(question.evidence) if metric == "evidence_recall" else bool(question.gold)


def _memories(store, benchmark: str, chosen: list[Variant]) -> dict[tuple, Memory]:
    """One build per cut and piece rule (the vectors), re-ruled per variant (sharing channels and
    their cached proposals); a lexical variant swaps in its BM25 channel."""
    preset = BENCHMARKS[benchmark].preset
    built: dict[tuple[str, str], Memory] = {}
    out: dict[tuple, Memory] = {}
    keys = {v.memory_key for v in chosen} | {(E, None), (N, None)}
    for key in sorted(keys, key=repr):
        r, lexical = key
        shape = (r.unit_size, r.pieces)
        if shape not in built:
            built[shape] = build(
                store.source,
                preset=preset,
                models="cpu-small",
                rules=E.replace(unit_size=r.unit_size, pieces=r.pieces),
            )
        memory = built[shape].with_rules(**r.query_rules())
        out[key] = with_lexical(memory, lexical) if lexical else memory
    # The voters: the native memory's lexical variants, built once per store.
    for voter in {v.voter for v in chosen if v.voter}:
        out[("voter", voter)] = with_lexical(out[(N, None)], voter)
    return out


def _contexts(
    memories: dict[tuple, Memory], chosen: list[Variant], query: str, units: int
) -> dict[str, Context]:
    exact_tokens = memories[(E, None)].context(query, units).tokens
    musters = {v.name: _muster(memories, v, query, units) for v in chosen if v.kind == "muster"}
    native_tokens = musters[NATIVE_ROW].tokens
    out = dict(musters)
    for v in chosen:
        if v.kind in NATIVE_ABLATIONS:
            out[v.name] = variants.context(memories[v.memory_key], v.kind, query, units)
        elif v.kind != "muster":
            budget = max(exact_tokens, native_tokens)
            out[v.name] = variants.context(memories[v.memory_key], v.kind, query, budget=budget)
    return out


def _muster(memories: dict[tuple, Memory], variant: Variant, query: str, units: int) -> Context:
    memory = memories[variant.memory_key]
    if variant.voter is None:
        return memory.context(query, units)
    # The library's steps, with one more ranking in the fused order only (no floor, no proposals).
    proposals, _ = memory.proposals(query, units)
    extra = memories[("voter", variant.voter)].channel("bm25").propose(query, pool_size(units))
    extra = dataclasses.replace(extra, channel=f"bm25:{variant.voter}")
    ranking = fuse([*proposals, extra], memory.rules.fusion)
    floors = memory.floors(query, units)
    chosen = memory.select(proposals, ranking, floors, units)
    return memory.assemble(query, chosen, ranking, proposals, units_read=units)


if __name__ == "__main__":
    main()
