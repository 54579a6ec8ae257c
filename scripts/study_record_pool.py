"""One unit per message in each channel's pool: native's rule since issue 28 (decision 0205).

On BEAM's chats a message is often far longer than a unit (an assistant reply of code and
prose), so one reply can fill a channel's pool with many of its units, and the short user turns,
where most evidence is, are pushed out. The rule (``pool_messages="distinct"``) is document-level
aggregation of passage scores (a document ranked by its best passage, as in MaxP: Dai and Callan,
SIGIR 2019) applied to the pool: on a record store, a unit joins a channel's pool only when it
shows a message (the record as the store's source names it) that no unit above it in that
channel's ranking shows. It has no parameter. It changes nothing where no message is longer than
a unit (LoCoMo) and is not applied to numbered logs, whose records are blocks of many facts
(MemoryAgentBench).

Rows, per benchmark and U, each minus `muster_native` (cpu-small, with the rule) paired per
question: native before the rule (``pool_messages="any"``: floors, fill and assembly the same),
and for scale BM25 on native's units at native's tokens, as the comparison tables read it and
with the rule in its ranking. Native is then set against each BM25 row.

    python scripts/study_record_pool.py --data ../shared/data --out results/study/record_pool.md
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import study_side  # noqa: E402
from study_cpu_retrieval import BENCHMARKS, BM25_ROW, NATIVE_ROW, _paired, _scored, stores  # noqa: E402
from study_side import minus_native  # noqa: E402

from harness.benchmarks.metrics import question_scores  # noqa: E402
from harness.data import DataRoot  # noqa: E402
from muster_exact import rules  # noqa: E402
from muster_exact.channels import Proposals, distinct_records  # noqa: E402
from muster_exact.memory import Memory, build, variants  # noqa: E402
from muster_exact.retrieve.assemble import Context  # noqa: E402

BEFORE_ROW = "native, any unit in a pool (before the rule)"
BM25_RULE_ROW = "bm25 (standard analyser), one unit per message"
ROWS = (NATIVE_ROW, BEFORE_ROW, BM25_ROW, BM25_RULE_ROW)


def bm25_one_per_message(memory: Memory, query: str, budget: int) -> Context:
    """The BM25 baseline with the rule: its ranking of every unit, one unit per message, filled
    to ``budget`` tokens in that order (the baseline's own fill, ``variants``)."""
    units = len(memory.cut.units)
    ranked = distinct_records(memory.channel("bm25").propose(query, units), memory.cut.shown_records, units)
    ruled = memory.with_channel(_Fixed(ranked))  # type: ignore[arg-type]
    return variants.context(ruled, "bm25", query, budget=budget)


class _Fixed:
    """A BM25 channel whose ranking is given (the baseline's fill reads ``propose(query, all)``)."""

    name = "bm25"

    def __init__(self, ranked: Proposals) -> None:
        self._ranked = ranked

    def propose(self, query: str, k: int) -> Proposals:
        return self._ranked


def scores(benchmark: str, data: DataRoot, units: Sequence[int]) -> dict[tuple[str, int], list[float]]:
    spec = BENCHMARKS[benchmark]
    out: dict[tuple[str, int], list[float]] = {}
    for store in stores(benchmark, data, None):
        memory = build(store.source, preset=spec.preset, models="cpu-small", rules=rules.NATIVE)
        before = memory.with_rules(pool_messages="any")
        print(f"{benchmark} {store.name} ({memory.plan.branch})", file=sys.stderr, flush=True)
        for question in store.questions:
            if not _scored(question, spec.metric):
                continue
            for u in units:
                native = memory.context(question.text, u)
                contexts = {
                    NATIVE_ROW: native,
                    BEFORE_ROW: before.context(question.text, u),
                    BM25_ROW: variants.context(memory, "bm25", question.text, budget=native.tokens),
                    BM25_RULE_ROW: bm25_one_per_message(memory, question.text, native.tokens),
                }
                for name, context in contexts.items():
                    value = question_scores(question, context.text, context.record_ids)[spec.metric]
                    out.setdefault((name, u), []).append(float(value))  # type: ignore[arg-type]
    return out


def section(benchmark: str, data: DataRoot, units: Sequence[int]) -> list[str]:
    got = scores(benchmark, data, units)
    n, metric = len(got[(NATIVE_ROW, units[0])]), BENCHMARKS[benchmark].metric
    lines = [f"## {benchmark} ({metric}, {n} questions)", "", *minus_native(got, ROWS, units)]
    lines += ["", "Native against each BM25 row (native minus BM25, paired):", ""]
    lines += ["| baseline | U | native - baseline | better / worse / equal |", "|---|---|---|---|"]
    for name in (BM25_ROW, BM25_RULE_ROW):
        for u in units:
            lines.append(f"| {name} | {u} | {_paired(got[(NATIVE_ROW, u)], got[(name, u)])} |")
    return [*lines, ""]


HEADING = (
    "# One unit per message in each pool (issue 28, decision 0205)",
    "",
    "cpu-small. Each row minus `muster_native` (native rules, the rule among them), paired per "
    "question (95% bootstrap interval, points; better / worse / equal). The rule was chosen on `beam` "
    "(BEAM-100K) and `beam_1m` (the development chats) and checked on the others; "
    "`beam_1m_held_out` was measured once, after the choice. Generated by "
    "`scripts/study_record_pool.py`.",
    "",
)

if __name__ == "__main__":
    study_side.main(__doc__, HEADING, "locomo,locomo_refined,mab,beam,beam_1m,beam_1m_held_out", section)
