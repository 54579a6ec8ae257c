"""Where native's missed evidence is: unproposed or unchosen (issue 28, decision 0203).

For every evidence turn of every question, at one U (default 10), with cpu-small and native
rules: shown in native's context, or proposed by a channel (in its pool of max(2 x units read,
20) units; a turn counts as proposed when a unit holding it is) but not chosen, or in no
channel's pool. A turn in no pool cannot be reached by any fusion, floor or order of these
channels; a turn in a pool can. Next to it, the turns BM25 on native's units (the strongest
baseline, at the larger MUSTER context's tokens, the harness's rule) shows and native does not,
and the reverse. By the benchmark's own category labels.

The same stores and builds as ``study_cpu_retrieval.py`` (imported, unchanged, so that study's
finished stores stay valid).

    python scripts/study_misses.py --data ../shared/data --benchmarks beam_1m,beam_1m_held_out \\
        --out results/study/misses.md
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# The study beside this file puts the repository on the path for the imports after it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_cpu_retrieval import (
    BENCHMARKS,
    BM25_ROW,
    NATIVE_ROW,
    REPO,
    VARIANTS,
    N,
    Variant,
    _contexts,
    _memories,
    _scored,
    stores,
)

from harness.data import DataRoot
from muster_exact.memory import Memory

# The last: an evidence id naming no record of the store (a label error of the benchmark).
PLACES = ("shown", "in a pool, not chosen", "in no pool", "no such turn")


@dataclass
class Tally:
    questions: int = 0
    places: Counter = field(default_factory=Counter)  # each evidence turn's place in native's read
    bm25_only: int = 0  # turns the BM25 baseline shows and native does not
    native_only: int = 0

    @property
    def turns(self) -> int:
        return sum(self.places.values())

    def add(self, other: Tally) -> None:
        self.questions += other.questions
        self.places.update(other.places)
        self.bm25_only += other.bm25_only
        self.native_only += other.native_only


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--benchmarks", default="beam_1m,beam_1m_held_out")
    parser.add_argument("--units", type=int, default=10)
    parser.add_argument("--out", default=None, help="markdown report (default: print only)")
    args = parser.parse_args()
    names = args.benchmarks.split(",")
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise SystemExit(f"unknown benchmarks {', '.join(unknown)}; use some of {', '.join(BENCHMARKS)}")
    by_answers = [n for n in names if BENCHMARKS[n].metric != "evidence_recall"]
    if by_answers:
        raise SystemExit(f"{', '.join(by_answers)}: scored by answers, not by evidence turns; leave out")
    data = DataRoot.open(args.data, REPO / "manifests" / "data.json")
    tallies = {name: _tallies(name, data, args.units) for name in names}
    report = _markdown(tallies, args.units)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report, encoding="utf-8")
    else:
        print(report)


def _tallies(benchmark: str, data: DataRoot, units: int) -> dict[str, Tally]:
    """Per category of the benchmark's labels: where each evidence turn is."""
    chosen = [v for v in VARIANTS if v.name in (NATIVE_ROW, BM25_ROW)]
    by_category: dict[str, Tally] = defaultdict(Tally)
    for store in stores(benchmark, data, None):
        memories = _memories(store, benchmark, chosen)
        units_of = _units_by_record(memories[(N, None)])
        for question in store.questions:
            if _scored(question, "evidence_recall"):
                _count(by_category[str(question.category)], question, memories, chosen, units, units_of)
        print(f"{benchmark}: {store.name} done", file=sys.stderr, flush=True)
    return dict(sorted(by_category.items()))


def _units_by_record(memory: Memory) -> dict[str, set[int]]:
    """Each record's label (what a context's record ids and the evidence name) -> its units."""
    out: dict[str, set[int]] = defaultdict(set)
    for unit in memory.cut.units:
        for record in unit.records:
            out[memory.cut.record_label(record)].add(unit.id)
    return out


def _count(
    tally: Tally,
    question,
    memories: dict[tuple, Memory],
    chosen: list[Variant],
    units: int,
    units_of: dict[str, set[int]],
) -> None:
    contexts = _contexts(memories, chosen, question.text, units)  # the study's budget rule
    native = memories[(N, None)]
    _, units_read = native.checked(question.text, units)
    proposals, _ = native.proposals(question.text, units_read)
    proposed = {u for p in proposals for u in p.units}
    shown, bm25_shown = set(contexts[NATIVE_ROW].record_ids), set(contexts[BM25_ROW].record_ids)
    tally.questions += 1
    for turn in set(question.evidence):
        if turn in shown:
            place = PLACES[0]
        elif turn not in units_of:
            place = PLACES[3]
        elif units_of[turn] & proposed:
            place = PLACES[1]
        else:
            place = PLACES[2]
        tally.places[place] += 1
        tally.bm25_only += turn in bm25_shown and turn not in shown
        tally.native_only += turn in shown and turn not in bm25_shown


def _markdown(tallies: dict[str, dict[str, Tally]], units: int) -> str:
    lines = [
        "# Where native's missed evidence is (issue 28)",
        "",
        f"cpu-small, native rules, U = {units}; every evidence turn of every question with evidence. "
        "A pool is a channel's max(2 x units read, 20) proposals; a turn in no pool cannot be "
        "reached by any fusion, floor or order of these channels. BM25 only / native only: turns "
        "one shows and the other does not (BM25 on native's units at the larger MUSTER context's "
        "tokens). Generated by `scripts/study_misses.py`.",
        "",
    ]
    for benchmark, by_category in tallies.items():
        total = Tally()
        for tally in by_category.values():
            total.add(tally)
        lines += [
            f"## {benchmark}",
            "",
            "| category | questions | evidence turns | "
            + " | ".join(PLACES)
            + " | BM25 only | native only |",
            "|---|" + "---|" * (len(PLACES) + 4),
        ]
        for label, tally in [*by_category.items(), ("all", total)]:
            lines.append(
                f"| {label} | {tally.questions} | {tally.turns} | "
                + " | ".join(_share(tally.places[p], tally.turns) for p in PLACES)
                + f" | {tally.bm25_only} | {tally.native_only} |"
            )
        lines.append("")
    return "\n".join(lines)


def _share(count: int, whole: int) -> str:
    return f"{count} ({100 * count / whole:.0f}%)" if whole else "0"


if __name__ == "__main__":
    main()
