"""One unit per message in each channel's pool: measured, to be adopted into native (issue 28, decision 0205).

On BEAM's chats a message is often far longer than a unit (an assistant reply of code and
prose), so one reply fills a channel's pool with many of its units: the pool of max(2U, 20)
proposals then holds few messages, and the short user turns, where most evidence is, are pushed
out. The rule is document-level aggregation of passage scores (a document ranked by its best
passage, as in MaxP: Dai and Callan, SIGIR 2019) applied to the pool: on a record store, a unit
joins a channel's pool only when it shows a message (the record as the store's source names it)
that no unit above it in that channel's ranking shows. It has no parameter. It changes nothing where
no message is longer than a unit (LoCoMo) and is not applied to numbered logs, whose records are
blocks of many facts (MemoryAgentBench).

Rows, per benchmark and U, each minus `muster_native` (cpu-small) paired per question: native
with the rule in its dense and BM25 pools (floors, fill and assembly unchanged), and for scale
BM25 on native's units at native's tokens, without and with the rule (each reads at its own
native's tokens: the rule's row at the rule's). Kept apart from ``study_cpu_retrieval.py`` (and
the library) so that the study's finished stores stay valid until the rule is adopted.

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
from muster_exact.channels import Proposals  # noqa: E402
from muster_exact.channels.given import BuiltChannel  # noqa: E402
from muster_exact.memory import Memory, build, variants  # noqa: E402
from muster_exact.retrieve.assemble import record_label  # noqa: E402

RULE_ROW = "native, one unit per message in each pool"
BM25_RULE_ROW = "bm25 (standard analyser), one unit per message"
ROWS = (NATIVE_ROW, RULE_ROW, BM25_ROW, BM25_RULE_ROW)


class OnePerMessage:
    """A channel whose ranking skips a unit all of whose messages a unit above it shows."""

    def __init__(self, channel: BuiltChannel, messages: Sequence[frozenset[str]]) -> None:
        self._channel, self._messages = channel, messages
        self.name = channel.name

    def __getattr__(self, name: str) -> object:
        return getattr(self._channel, name)

    def propose(self, query: str, k: int) -> Proposals:
        total, depth = len(self._messages), min(len(self._messages), 4 * k)
        while True:
            ranked = self._channel.propose(query, depth)
            shown: set[str] = set()
            units, scores = [], []
            for unit, score in zip(ranked.units, ranked.scores, strict=True):
                if len(units) == k:
                    break
                if self._messages[unit] <= shown:
                    continue
                shown |= self._messages[unit]
                units.append(unit)
                scores.append(score)
            if len(units) == k or depth >= total or len(ranked.units) < depth:
                return Proposals(ranked.channel, tuple(units), tuple(scores))
            depth = min(total, 2 * depth)


def with_rule(memory: Memory) -> Memory:
    """``memory`` with the rule in its dense and BM25 pools (record stores only)."""
    if memory.plan.branch != "record_store":
        return memory
    cut = memory.cut
    messages = [frozenset(record_label(cut, r) for r in unit.records) for unit in cut.units]
    for name in ("dense", "bm25"):
        memory = memory.with_channel(OnePerMessage(memory.channel(name), messages))  # type: ignore[arg-type]
    return memory


def scores(benchmark: str, data: DataRoot, units: Sequence[int]) -> dict[tuple[str, int], list[float]]:
    spec = BENCHMARKS[benchmark]
    out: dict[tuple[str, int], list[float]] = {}
    for store in stores(benchmark, data, None):
        memory = build(store.source, preset=spec.preset, models="cpu-small", rules=rules.NATIVE)
        ruled = with_rule(memory)
        print(f"{benchmark} {store.name} ({memory.plan.branch})", file=sys.stderr, flush=True)
        for question in store.questions:
            if not _scored(question, spec.metric):
                continue
            for u in units:
                native, rule = memory.context(question.text, u), ruled.context(question.text, u)
                contexts = {
                    NATIVE_ROW: native,
                    RULE_ROW: rule,
                    BM25_ROW: variants.context(memory, "bm25", question.text, budget=native.tokens),
                    BM25_RULE_ROW: variants.context(ruled, "bm25", question.text, budget=rule.tokens),
                }
                for name, context in contexts.items():
                    value = question_scores(question, context.text, context.record_ids)[spec.metric]
                    out.setdefault((name, u), []).append(float(value))  # type: ignore[arg-type]
    return out


def section(benchmark: str, data: DataRoot, units: Sequence[int]) -> list[str]:
    got = scores(benchmark, data, units)
    n, metric = len(got[(NATIVE_ROW, units[0])]), BENCHMARKS[benchmark].metric
    lines = [f"## {benchmark} ({metric}, {n} questions)", "", *minus_native(got, ROWS, units)]
    lines += ["", "The rule's row against each BM25 row (the rule minus BM25, paired):", ""]
    lines += ["| baseline | U | rule - baseline | better / worse / equal |", "|---|---|---|---|"]
    for name in (BM25_ROW, BM25_RULE_ROW):
        for u in units:
            lines.append(f"| {name} | {u} | {_paired(got[(RULE_ROW, u)], got[(name, u)])} |")
    return [*lines, ""]


HEADING = (
    "# One unit per message in each pool (issue 28; measured, to be adopted: decision 0205)",
    "",
    "cpu-small, native rules. Each row minus `muster_native`, paired per question (95% "
    "bootstrap interval, points; better / worse / equal). The rule was chosen on `beam` "
    "(BEAM-100K) and `beam_1m` (the development chats) and checked on the others; "
    "`beam_1m_held_out` was measured once, after the choice. Generated by "
    "`scripts/study_record_pool.py`.",
    "",
)

if __name__ == "__main__":
    study_side.main(__doc__, HEADING, "locomo,locomo_refined,mab,beam,beam_1m,beam_1m_held_out", section)
