"""The CPU retrieval study (issue 11): every rule variant on every benchmark at U = 10, 20, 40.

Each variant is MUSTER under one set of retrieval rules (``muster_exact.rules``)
or a baseline under one analyser / piece rule, scored as ``make reproduce``
scores it (evidence recall on LoCoMo, LoCoMo-Refined and BEAM;
answer-in-context on FactConsolidation) with a 95% bootstrap interval.
Baselines read at the larger of the exact and native MUSTER contexts' tokens
for the same question, as in the harness. Variants that did not help are
reported too: nothing here is chosen by looking at this table (the rules
are chosen in docs/decisions.md by the principle stated there).

    python scripts/study_cpu_retrieval.py --data ../shared/data --out results/study/cpu_retrieval.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import benchmarks  # noqa: E402
from harness.config import BenchmarkConfig  # noqa: E402
from harness.data import DataRoot  # noqa: E402
from harness.metrics import question_scores  # noqa: E402
from harness.tables import bootstrap_ci  # noqa: E402
from muster_exact import rules, variants  # noqa: E402
from muster_exact.memory import Memory, build  # noqa: E402

PRESETS = {"locomo": "locomo", "locomo_refined": "locomo", "mab": "mab", "beam": "beam"}
CONFIGS = {
    "locomo": BenchmarkConfig(name="locomo"),
    "locomo_refined": BenchmarkConfig(name="locomo_refined"),
    "mab": BenchmarkConfig(name="mab", splits=["Conflict_Resolution"]),
    "beam": BenchmarkConfig(name="beam", scales=["100K"]),
}
METRIC = {"mab": "answer_in_context"}

E, N = rules.EXACT, rules.NATIVE
# (row name, memory kind, rules). Kinds: "muster", or a baseline name.
VARIANTS: list[tuple[str, str, rules.Rules]] = [
    ("muster exact, whole units (before issue 11)", "muster", E.replace(pieces="unit")),
    ("muster (exact: pieces)", "muster", E),
    ("muster_native", "muster", N),
    ("native, words analyser", "muster", N.replace(lexical="words")),
    ("native, whole units", "muster", N.replace(pieces="unit")),
    ("native, mean pooling", "muster", N.replace(pooling="mean")),
    ("native, minmax fusion", "muster", N.replace(fusion="minmax")),
    ("native, zscore fusion", "muster", N.replace(fusion="zscore")),
    ("native, floors in fused order", "muster", N.replace(floor_order="fused")),
    ("native, graph floor always", "muster", N.replace(graph_floor="always")),
    ("native, graph floor selective", "muster", N.replace(graph_floor="selective")),
    ("native, graph floor off", "muster", N.replace(graph_floor="off")),
    ("native, no floors", "muster", N.replace(floors="none")),
    ("bm25 (standard analyser)", "bm25", N),
    ("bm25 (words analyser)", "bm25", E),
    ("dense (pieces, max)", "dense", N),
    ("dense (whole units)", "dense", N.replace(pieces="unit")),
]


def stores(benchmark: str, data: DataRoot, limit: int | None) -> Iterator:
    adapter = benchmarks.load(benchmark)
    for store in adapter.stores(data, CONFIGS[benchmark]):
        if limit is not None:
            store = type(store)(store.benchmark, store.name, store.source, store.questions[:limit])
        yield store


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--benchmarks", default="locomo,locomo_refined,mab,beam")
    parser.add_argument("--units", default="10,20,40")
    parser.add_argument("--variants", default="", help="comma-separated row-name prefixes (default: all)")
    parser.add_argument("--questions-per-store", type=int, default=None)
    parser.add_argument("--out", default=None, help="markdown report (default: print only)")
    parser.add_argument("--json", default=None, help="per-variant means as JSON")
    args = parser.parse_args()
    data = DataRoot.open(args.data, REPO / "manifests" / "data.json")
    wanted = [v for v in args.variants.split(",") if v]
    chosen = [v for v in VARIANTS if not wanted or any(v[0].startswith(w) for w in wanted)]
    units = [int(u) for u in args.units.split(",")]
    results: dict[str, dict[str, dict[int, list[float]]]] = {}
    for benchmark in args.benchmarks.split(","):
        started = time.perf_counter()
        metric = METRIC.get(benchmark, "evidence_recall")
        per = results.setdefault(benchmark, {name: {u: [] for u in units} for name, _, _ in chosen})
        for store in stores(benchmark, data, args.questions_per_store):
            memories = _memories(store, benchmark, chosen)
            muster_keys = {("records", E), ("records", N)} | {
                (r.pieces, r) for _, k, r in chosen if k == "muster"
            }
            for u in units:
                for question in store.questions:
                    if not _scored(question, metric):
                        continue
                    # Each MUSTER context once: it is a row, and the baselines' budget.
                    musters = {key: memories[key].context(question.text, u) for key in muster_keys}
                    budget = max(musters[("records", E)].tokens, musters[("records", N)].tokens)
                    for name, kind, r in chosen:
                        if kind == "muster":
                            context = musters[(r.pieces, r)]
                        else:
                            memory = memories[(r.pieces, r)]
                            context = variants.context(memory, kind, question.text, budget=budget)
                        score = question_scores(question, context.text, context.record_ids)[metric]
                        per[name][u].append(float(score))  # type: ignore[arg-type]
            print(
                f"{benchmark} {store.name}: {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        _print(benchmark, per, units)
        _write(args, results, units)  # after each benchmark: a long run leaves what it finished


def _write(args: argparse.Namespace, results, units) -> None:
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(_markdown(results, units), encoding="utf-8")
    if args.json:
        means = {
            b: {n: {u: sum(v) / len(v) for u, v in by_u.items() if v} for n, by_u in rows.items()}
            for b, rows in results.items()
        }
        Path(args.json).write_text(json.dumps(means, indent=1), encoding="utf-8")


def _scored(question, metric: str) -> bool:
    return bool(question.evidence) if metric == "evidence_recall" else bool(question.gold)


def _memories(store, benchmark: str, chosen) -> dict[tuple[str, rules.Rules], Memory]:
    """One build per piece rule (the vectors), one BM25 index per analyser; every other rule is
    the same memory re-ruled, sharing channels (and their cached proposals)."""
    preset = f"{PRESETS[benchmark]}.u10"
    built: dict[tuple[str, str], Memory] = {}
    out: dict[tuple[str, rules.Rules], Memory] = {}
    needed = {(r.pieces, r) for _, _, r in chosen} | {("records", E), ("records", N)}
    for pieces, r in sorted(needed, key=repr):
        if (pieces, "words") not in built:
            built[(pieces, "words")] = build(
                store.source, preset=preset, models="cpu-small", rules=E.replace(pieces=pieces)
            )
        if (pieces, r.lexical) not in built:
            built[(pieces, r.lexical)] = built[(pieces, "words")].with_rules(lexical=r.lexical)
        out[(pieces, r)] = built[(pieces, r.lexical)].with_rules(**r.query_rules())
    # One embedder, one query vector: the piece rules share them (a private hand-off, for speed).
    first = next(iter(built.values()))
    for memory in out.values():
        memory._dense._query_vectors = first._dense._query_vectors
    return out


def _print(benchmark: str, per, units) -> None:
    print(f"\n{benchmark}")
    for name, by_u in per.items():
        cells = "  ".join(f"U{u} {sum(v) / len(v):.4f}" for u, v in by_u.items() if v)
        print(f"  {name:<48} {cells}")


def _markdown(results, units) -> str:
    lines = [
        "# CPU retrieval study (issue 11)",
        "",
        "cpu-small (packaged all-MiniLM-L6-v2, no cross-encoder). "
        "Mean over questions with a 95% bootstrap interval (1,000 resamples, seed 0). "
        "Generated by `scripts/study_cpu_retrieval.py`.",
        "",
    ]
    for benchmark, per in results.items():
        metric = METRIC.get(benchmark, "evidence_recall")
        lines += [
            f"## {benchmark} ({metric})",
            "",
            "| variant | " + " | ".join(f"U = {u}" for u in units) + " |",
            "|---|" + "---|" * len(units),
        ]
        for name, by_u in per.items():
            cells = []
            for u in units:
                values = by_u[u]
                low, high = bootstrap_ci(values)
                cells.append(f"{sum(values) / len(values):.4f} [{low:.3f}, {high:.3f}]" if values else "")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
