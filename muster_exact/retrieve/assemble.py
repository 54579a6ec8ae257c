"""Assembly (SPEC 5): selected units as the reader sees them.

Selected units are grouped by parent: one block per parent, units inside a
block in stored order, blocks ordered by their first unit. On a numbered log
every selected unit is first replaced by the newest line of its slot
(highest serial), duplicates are dropped, and lines follow serial order.
Every unit's text is the store's own text, verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from muster_exact.channels import Proposals
from muster_exact.derive.cut import Cut, Unit, newest_version
from muster_exact.derive.plan import Plan
from muster_exact.retrieve.rerank import Ranking
from muster_exact.retrieve.select import Selected
from muster_exact.text import tokens

SYSTEM_PROMPT = (
    "You answer questions about a long history using only the memory excerpts given. "
    "If the excerpts do not contain the answer, say so."
)


@dataclass(frozen=True)
class Block:
    """One parent's units in a context: their text, their records' ids and, read from a
    :class:`~muster_exact.store.Store`, those records' metadata by id (only records that have it)."""

    parent: int
    units: tuple[int, ...]
    records: tuple[str, ...]
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidates:
    """What a filtered read (:mod:`muster_exact.store.where`) may use: the units it may choose
    (those holding a matching record) and the records it may show (the matching ones: a unit cut
    across records that do not match shows only the ones that do)."""

    units: frozenset[int]
    records: frozenset[int]


@dataclass(frozen=True)
class Provenance:
    """Why a unit is in the context: who proposed it, its rerank place, the slot rule."""

    unit: int
    channels: dict[str, int]  # channel -> 1-based rank in its proposals
    rerank_rank: int | None
    rerank_score: float | None
    reason: str
    shown_as: int  # the unit shown in its place (its slot's newest version), often itself


class Readable:
    """A context as a chat model reads it (a :class:`Context`, or a collection's)."""

    query: str
    text: str

    def messages(self, question: str | None = None) -> list[dict[str, str]]:
        """A chat message list: the memory, then the question."""
        question = self.query if question is None else question
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Memory:\n{self.text}\n\nQuestion: {question}"},
        ]


@dataclass(frozen=True)
class Context(Readable):
    query: str
    text: str
    blocks: tuple[Block, ...]
    tokens: int
    plan: Plan | None  # None: the empty context of a store with no records
    provenance: tuple[Provenance, ...] = field(default=())
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    # A store's read: the head (muster_exact.store.Head) of the snapshot its records were read in,
    # what the answer is labelled with; None for a context built outside a store.
    head: Any = field(default=None, compare=False)

    @property
    def unit_ids(self) -> tuple[int, ...]:
        return tuple(u for b in self.blocks for u in b.units)

    @property
    def record_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for b in self.blocks for r in b.records))

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "text": self.text,
            "tokens": self.tokens,
            "blocks": [
                {
                    "parent": b.parent,
                    "units": list(b.units),
                    "records": list(b.records),
                    "metadata": b.metadata,
                    "text": b.text,
                }
                for b in self.blocks
            ],
            "provenance": [p.__dict__ for p in self.provenance],
        }


def shown_text(cut: Cut, unit: Unit, allowed: Candidates | None = None) -> str:
    """The unit as stored, or, in a filtered read, its matching records' parts of it, a line each."""
    if allowed is None or allowed.records.issuperset(unit.records):
        return cut.text(unit)
    parts = [cut.source.records[r] for r in unit.records if r in allowed.records]
    text = cut.source.text
    return "\n".join(text[max(r.start, unit.start) : min(r.end, unit.end)] for r in parts)


def assemble(
    query: str,
    cut: Cut,
    plan: Plan,
    selected: Sequence[Selected],
    ranking: Ranking,
    proposals: Sequence[Proposals],
    *,
    by_score: bool = False,
    allowed: Candidates | None = None,
) -> Context:
    """The context of the selected units.

    ``by_score`` (an ablation and the plain-RAG baselines) keeps the order of
    ``selected`` instead, one block per unit.
    """
    numbered = plan.branch == "numbered_log"
    shown = {
        s.unit: (
            newest_version(cut, cut.units[s.unit], None if allowed is None else allowed.units)
            if plan.supersession
            else s.unit
        )
        for s in selected
    }
    if by_score:
        groups = [(cut.units[u].parent, [u]) for u in dict.fromkeys(shown[s.unit] for s in selected)]
    else:
        position = {u: i for i, u in enumerate(cut.serial_order)} if numbered else None
        order_key = position.__getitem__ if position is not None else int
        by_parent: dict[int, list[int]] = {}
        for unit in sorted(set(shown.values()), key=order_key):
            by_parent.setdefault(cut.units[unit].parent, []).append(unit)
        groups = sorted(by_parent.items(), key=lambda item: order_key(item[1][0]))
    unit_sep = "\n" if numbered else "\n\n"
    blocks = tuple(
        Block(
            parent=parent,
            units=tuple(units),
            records=tuple(
                dict.fromkeys(
                    cut.record_label(r)
                    for u in units
                    for r in cut.units[u].records
                    if allowed is None or r in allowed.records
                )
            ),
            text=unit_sep.join(shown_text(cut, cut.units[u], allowed) for u in units),
        )
        for parent, units in groups
    )
    text = unit_sep.join(b.text for b in blocks)
    rank = ranking.rank()
    channel_ranks = {p.channel: {u: i for i, u in enumerate(p.units, start=1)} for p in proposals}
    provenance = tuple(
        Provenance(
            unit=s.unit,
            channels={c: ranks[s.unit] for c, ranks in channel_ranks.items() if s.unit in ranks},
            rerank_rank=rank[s.unit] + 1 if s.unit in rank else None,
            rerank_score=ranking.scores.get(s.unit),
            reason=s.reason,
            shown_as=shown[s.unit],
        )
        for s in selected
    )
    return Context(query, text, blocks, tokens.count(text), plan, provenance)
