"""Neighbours of a strong hit: measured on the record stores, not adopted (issue 28, decision 0200).

The issue's lever "evidence that spans neighbouring turns across a unit boundary (the adjacent
unit of a strong hit, under the same token budget)", as sentence-window expansion with a window
of one unit each side, in three forms. Each keeps native's floors (each channel's own order) and
changes only the fill, so the read takes the same U units:

* ``top``: the fill takes the best fused unit and its two stored-order neighbours first, then
  the fused order;
* ``top`` across record boundaries only: as ``top``, but a neighbour holding part of a record of
  the top unit is not taken first;
* ``every``: the fill takes, in fused order, each unit and then its two neighbours.

Native (``muster_native``, cpu-small) against each, paired per question, with BM25 on native's
units at native's tokens for scale. Record stores only: a numbered log's neighbours are unrelated
facts. Kept apart from ``study_cpu_retrieval.py`` so that adding it did not change that study's
code hash (its finished stores stay valid).

    python scripts/study_neighbours.py --data ../shared/data --out results/study/neighbours.md
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import study_side  # noqa: E402
from study_cpu_retrieval import BENCHMARKS, BM25_ROW, NATIVE_ROW, _scored, stores  # noqa: E402
from study_side import minus_native  # noqa: E402

from harness.benchmarks.metrics import question_scores  # noqa: E402
from harness.data import DataRoot  # noqa: E402
from muster_exact import rules  # noqa: E402
from muster_exact.memory import Memory, build, variants  # noqa: E402
from muster_exact.retrieve.assemble import Context  # noqa: E402
from muster_exact.retrieve.rerank import Ranking  # noqa: E402
from muster_exact.retrieve.select import Selected  # noqa: E402

Fill = Callable[[Memory, Ranking], Iterator[int]]


def top_first(memory: Memory, ranking: Ranking) -> Iterator[int]:
    if ranking.order:
        top = ranking.order[0]
        yield from (top, top - 1, top + 1)
    yield from ranking.order


def top_first_across_records(memory: Memory, ranking: Ranking) -> Iterator[int]:
    """As ``top_first``, but a neighbour holding part of a record of the top unit (the rest of a
    message longer than a unit) is not taken first: only a neighbour across a record boundary."""
    units = memory.cut.units
    if ranking.order:
        top = ranking.order[0]
        yield top
        for near in (top - 1, top + 1):
            if 0 <= near < len(units) and not set(units[near].records) & set(units[top].records):
                yield near
    yield from ranking.order


def every_unit(memory: Memory, ranking: Ranking) -> Iterator[int]:
    for unit in ranking.order:
        yield from (unit, unit - 1, unit + 1)


FILLS: dict[str, Fill] = {
    "neighbours of the top unit": top_first,
    "neighbours of the top unit, across record boundaries only": top_first_across_records,
    "neighbours of every unit": every_unit,
}


def with_fill(memory: Memory, query: str, units: int, fill: Fill) -> Context:
    """Native's read with the floors as the library takes them and the fill in ``fill``'s order."""
    query, units_read = memory.checked(query, units)
    proposals, _ = memory.proposals(query, units_read)
    ranking = memory.rank(query, proposals)
    floors = memory.floors(query, units_read)
    chosen = [s for s in memory.select(proposals, ranking, floors, units_read) if s.reason != "fill"]
    taken = {s.unit for s in chosen}
    for unit in fill(memory, ranking):
        if len(chosen) == units_read:
            break
        if 0 <= unit < len(memory.cut.units) and unit not in taken:
            taken.add(unit)
            chosen.append(Selected(unit, "fill"))
    return memory.assemble(query, chosen, ranking, proposals, units_read=units_read)


def scores(benchmark: str, data: DataRoot, units: Sequence[int]) -> dict[tuple[str, int], list[float]]:
    spec = BENCHMARKS[benchmark]
    out: dict[tuple[str, int], list[float]] = {}
    for store in stores(benchmark, data, None):
        memory = build(store.source, preset=spec.preset, models="cpu-small", rules=rules.NATIVE)
        print(f"{benchmark} {store.name}", file=sys.stderr, flush=True)
        for question in store.questions:
            if not _scored(question, "evidence_recall"):
                continue
            for u in units:
                native = memory.context(question.text, u)
                contexts = {
                    NATIVE_ROW: native,
                    BM25_ROW: variants.context(memory, "bm25", question.text, budget=native.tokens),
                }
                contexts |= {name: with_fill(memory, question.text, u, fill) for name, fill in FILLS.items()}
                for name, context in contexts.items():
                    value = question_scores(question, context.text, context.record_ids)["evidence_recall"]
                    out.setdefault((name, u), []).append(float(value))  # type: ignore[arg-type]
    return out


def section(benchmark: str, data: DataRoot, units: Sequence[int]) -> list[str]:
    got = scores(benchmark, data, units)
    n = len(got[(NATIVE_ROW, units[0])])
    return [
        f"## {benchmark} (evidence_recall, {n} questions)",
        "",
        *minus_native(got, [NATIVE_ROW, *FILLS, BM25_ROW], units),
        "",
    ]


HEADING = (
    "# Neighbours of a strong hit (issue 28; measured, not adopted: decision 0200)",
    "",
    "cpu-small, native rules, evidence recall. Each variant minus `muster_native`, paired per "
    "question (95% bootstrap interval, points; better / worse / equal). BM25 on native's units "
    "reads at native's tokens for the same question, for scale (the comparison tables read "
    "at the larger of exact's and native's). Generated by `scripts/study_neighbours.py`.",
    "",
)

if __name__ == "__main__":
    study_side.main(__doc__, HEADING, "locomo,locomo_refined,beam", section)
