"""The retrieval rules a memory runs, and which mode runs which.

Exact mode replays the paper's method; its only change is the one that
makes the CPU embedder see what the paper's embedder saw (whole units, as
pieces). Native mode, the library default, adds what helps a short-window
embedder with no cross-encoder. Why each rule sits where it does is in
``docs/decisions/0048-rules-per-mode.md`` (issue 11; issue 28's rules: 0120, 0121).

Build-time rules shape the cut (``unit_size``) and the indexes (``pieces``,
``lexical``); the others are read per query, so
:meth:`muster_exact.memory.Memory.with_rules` can change them (and the
analyser) on a built memory without embedding anything again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from muster_exact.channels import CHANNELS
from muster_exact.channels.dense import FEEDBACKS, POOLINGS
from muster_exact.core.errors import InputError
from muster_exact.derive.pieces import PIECE_RULES
from muster_exact.retrieve.rerank import FUSIONS
from muster_exact.text.lexical import ANALYSERS

# The paper's channels (SPEC 4): the channels rule of both modes.
PAPER_CHANNELS = "dense,bm25,graph"
# The rules with a fixed list of choices (the channels rule names registered channels).
CHOICES: dict[str, tuple[str, ...]] = {
    "unit_size": ("budget", "window"),
    "pieces": PIECE_RULES,
    "pooling": POOLINGS,
    "lexical": ANALYSERS,
    "fusion": FUSIONS,
    "floors": ("reserved", "none"),
    "floor_order": ("fused", "own"),
    "graph_floor": ("always", "slots", "selective", "off"),
    "graph_votes": ("always", "slots"),
    "graph_facts": ("all", "current"),
    "pool_messages": ("any", "distinct"),
    "dense_feedback": FEEDBACKS,
    "coverage": ("none", "mmr"),
}


@dataclass(frozen=True)
class Rules:
    """``fusion`` and ``floor_order`` apply only when no cross-encoder orders the candidates."""

    # Record-store units up to the record budget, or also no longer than the embedder's window
    # (a read of U then takes proportionally more of them: Plan.units_to_read).
    unit_size: str = "budget"
    pieces: str = "records"  # what the embedder sees of a long unit (muster_exact.derive.pieces)
    pooling: str = "max"  # how piece scores make a unit's dense score
    lexical: str = "words"  # the BM25 analyser (muster_exact.text.lexical)
    fusion: str = "rrf"  # candidate order without a cross-encoder
    floors: str = "reserved"  # the plan's floors, or none (every slot by the candidate order)
    floor_order: str = "fused"  # floors taken in the fused order, or in each channel's own
    graph_floor: str = "always"  # when the graph channel's floor is reserved
    graph_votes: str = "always"  # where the graph channel proposes at all (slots: numbered logs only)
    # On numbered logs, every version of a fact in the graph, or the current one only (each slot by
    # its newest version, and a line's value as an entity): muster_exact.channels.graph.
    graph_facts: str = "all"
    # On record stores, every unit a channel ranks may join its pool, or only a unit showing a
    # message (record) no unit above it shows: one unit per message (decision 0205).
    pool_messages: str = "any"
    # The dense channel's query: as asked, or moved towards its top units (Rocchio pseudo-relevance
    # feedback, alpha 1 and beta 0.75 over the top 10, no negatives: muster_exact.channels.dense).
    dense_feedback: str = "none"
    # The slots after the floors: in candidate order, or by maximal marginal relevance over parents
    # (lambda 0.5; a unit whose parent is already shown counts as similar: retrieve.select).
    coverage: str = "none"
    # The channels a memory builds and asks, by name (muster_exact.channels.CHANNELS), comma-separated:
    # the paper's three in both modes. They propose, and take their floors, in the registry's order.
    channels: str = PAPER_CHANNELS

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise InputError(f"unknown {name} rule {value!r}; use one of {', '.join(allowed)}")
        named = self.channels.split(",")
        if not all(named) or len(set(named)) != len(named):
            raise InputError(
                f"the channels rule {self.channels!r} is not a comma-separated list of distinct channel "
                f"names; for instance {PAPER_CHANNELS!r}"
            )
        for name in named:
            CHANNELS.check(name)

    def channel_names(self) -> tuple[str, ...]:
        """The channels these rules build, in the registry's order (the order floors are taken in)."""
        named = set(self.channels.split(","))
        return tuple(name for name in CHANNELS.names() if name in named)

    def replace(self, **changes: Any) -> Rules:
        unknown = sorted(set(changes) - set(RULE_NAMES))
        if unknown:
            raise InputError(f"unknown retrieval rules: {', '.join(unknown)}; known: {', '.join(RULE_NAMES)}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    def query_rules(self) -> dict[str, str]:
        """The rules :meth:`Memory.with_rules` can change on a built memory (all but the cut's
        and the vectors': ``unit_size`` and ``pieces``)."""
        return {k: v for k, v in self.to_dict().items() if k not in BUILD_RULES}


# Every rule by name, in the order Rules declares them.
RULE_NAMES: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(Rules))
# What a built memory's cut, vectors and channels depend on: another value needs a new build.
BUILD_RULES = ("unit_size", "pieces", "channels")

# The paper's method on a CPU embedder: pieces so the embedder reads whole units, nothing else.
EXACT = Rules()
# What native mode adds (docs/decisions/ 0121, 0045, 0046, 0120, 0199): record-store units no
# longer than the embedder's window, the standard analyser, floors in each channel's own order, the
# graph channel (its floor and its proposals) only where parents are slots (numbered logs; on group
# parents, positional windows, it proposes nothing), and there a graph of the current facts only;
# on record stores, one unit per message in each channel's pool (0205).
NATIVE = Rules(
    unit_size="window",
    lexical="standard",
    floor_order="own",
    graph_floor="slots",
    graph_votes="slots",
    graph_facts="current",
    pool_messages="distinct",
)


def for_mode(mode: str) -> Rules:
    return EXACT if mode == "exact" else NATIVE
