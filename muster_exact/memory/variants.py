"""Baselines and ablations of the method, for measurement (SPEC 8).

The harness runs every system through the same code; the retrieval logic of
each lives here, in the library, so the harness only names them.

Baselines, at a token budget (the tokens of MUSTER's context for the same
question), their units' own token counts summed greedily in their order:

* ``full_context``: the newest units that fit, shown in stored order;
* ``bm25`` / ``dense``: one channel's ranking over all units, shown best
  first (plain RAG: no floors, no graph, no supersession);
* ``hybrid``: the two rankings fused by reciprocal rank (k = 60, Cormack et
  al. 2009), shown best first: what a practitioner builds first (LangChain's
  ``EnsembleRetriever`` with RRF) and the strongest plain baseline
  (decision 0219).

Ablations of MUSTER, at the same U:

* ``no_floors``: every slot by the candidate order alone;
* ``no_graph``: the graph channel removed (its slots go to the best remaining);
* ``no_rerank``: no candidate ordering: floors in each channel's own order,
  free slots by taking the channels' rankings in turn;
* ``score_order``: MUSTER's selection, shown in candidate order instead of
  stored order.

Native ablations: native mode with one of its parts turned back, at the same U
(decision 0220). Each runs :data:`muster_exact.rules.NATIVE` with the rules the
variant names changed (``native_no_floors``, ``native_budget_units``, ...), the
graph channel removed (``native_no_graph``), the context shown in candidate
order (``native_score_order``) or every version of a fact kept
(``native_all_versions_kept``: the newest-version rule off).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from muster_exact.channels import Proposals
from muster_exact.core.errors import InputError
from muster_exact.core.registry import Registry
from muster_exact.memory import Memory
from muster_exact.retrieve.assemble import Context
from muster_exact.retrieve.rerank import RRF, Ranking, fuse
from muster_exact.retrieve.select import Selected, scaled_floors
from muster_exact.rules import NATIVE, Rules

Kind = Literal["method", "baseline", "ablation", "native_ablation"]


@dataclass(frozen=True)
class Variant:
    """One system the library computes: the method, a baseline (at a token budget), an
    ablation (one step of the method taken out, at U) or a native ablation (native mode with
    one of its parts turned back, at U)."""

    name: str
    kind: Kind
    removes: str | None = None  # a channel ablation: the channel whose proposals and floor go
    # A native ablation's rules: native's, with these changed (name, value).
    changes: tuple[tuple[str, str], ...] = ()
    by_score: bool = False  # shown in candidate order, not stored order
    newest_only: bool = True  # the newest-version rule (supersession, where the plan has it)

    @property
    def rules(self) -> Rules:
        """The rules a native ablation's memory runs (native's, changed as it names)."""
        return NATIVE.replace(**dict(self.changes))


# Each system, once: its name, its kind and what it takes out. The order is the tables' order.
VARIANTS: Registry[Variant] = Registry(
    "system",
    {
        variant.name: variant
        for variant in (
            Variant("muster", "method"),
            Variant("full_context", "baseline"),
            Variant("bm25", "baseline"),
            Variant("dense", "baseline"),
            Variant("hybrid", "baseline"),
            Variant("no_floors", "ablation"),
            Variant("no_graph", "ablation", removes="graph"),
            Variant("no_rerank", "ablation"),
            Variant("score_order", "ablation"),
            # Native mode's parts, each turned back (the rule's exact-mode value, or the step off).
            Variant("native_no_floors", "native_ablation", changes=(("floors", "none"),)),
            Variant("native_no_graph", "native_ablation", removes="graph"),
            Variant("native_budget_units", "native_ablation", changes=(("unit_size", "budget"),)),
            Variant("native_words_analyser", "native_ablation", changes=(("lexical", "words"),)),
            Variant("native_fused_floors", "native_ablation", changes=(("floor_order", "fused"),)),
            # graph_floor "slots" alone changes nothing while the graph votes only on slots (a
            # floor without proposals is released), so the two graph rules turn back together.
            Variant(
                "native_graph_always",
                "native_ablation",
                changes=(("graph_votes", "always"), ("graph_floor", "always")),
            ),
            Variant("native_all_facts_graph", "native_ablation", changes=(("graph_facts", "all"),)),
            Variant("native_any_pool", "native_ablation", changes=(("pool_messages", "any"),)),
            Variant("native_score_order", "native_ablation", by_score=True),
            Variant("native_all_versions_kept", "native_ablation", newest_only=False),
        )
    },
)
SYSTEMS = tuple(VARIANTS.names())


def of_kind(kind: Kind) -> tuple[str, ...]:
    """The systems of one kind, in the registry's order."""
    return tuple(name for name in SYSTEMS if VARIANTS.get(name).kind == kind)


BUDGETED = of_kind("baseline")


def context(
    memory: Memory, system: str, query: str, units: int | None = None, budget: int | None = None
) -> Context:
    """The context ``system`` gives for ``query``. Budgeted systems need ``budget`` tokens."""
    variant = VARIANTS.get(system)
    if variant.kind == "method":
        return memory.context(query, units)
    query, units_read = memory.checked(query, units)
    if variant.kind == "baseline":
        if budget is None or budget < 0:
            raise InputError(f"system {system!r} needs a token budget (MUSTER's context tokens)")
        return _budgeted(memory, system, query, budget)
    if variant.kind == "native_ablation":
        return _native_ablation(memory, variant, query, units)
    return _ablation(memory, variant, query, units_read)


# Each memory's native-ablation memories by rules: a ruled memory rebuilds its channels' query
# state (an analyser, a graph of current facts), which should happen once per store, not per query.
_RULED: weakref.WeakKeyDictionary[Memory, dict[Rules, Memory]] = weakref.WeakKeyDictionary()


def ruled(memory: Memory, variant: str) -> Memory:
    """The memory a native ablation reads: ``memory`` under the variant's rules (sharing its cut
    and vectors where the rules cut as its own do: pass the exact memory for
    ``native_budget_units``, the native one for the others, and nothing is built again)."""
    rules = VARIANTS.get(variant).rules
    kept = _RULED.setdefault(memory, {})
    if rules not in kept:
        kept[rules] = memory if memory.rules == rules else memory.under(rules)
    return kept[rules]


def _native_ablation(memory: Memory, variant: Variant, query: str, units: int | None) -> Context:
    """Native's retrieval (:meth:`Memory.retrieve`) under the variant's rules, with its channel,
    order or newest-version rule changed as it says."""
    memory = ruled(memory, variant.name)
    query, units_read = memory.checked(query, units)
    proposals, _ = memory.proposals(query, units_read)
    floors = memory.floors(query, units_read)
    if variant.removes is not None:
        proposals = [p for p in proposals if p.channel != variant.removes]
        floors = {**floors, variant.removes: 0}
    ranking = memory.rank(query, proposals)
    chosen = memory.select(proposals, ranking, floors, units_read)
    if variant.by_score:
        order = ranking.rank()
        chosen = sorted(chosen, key=lambda s: order[s.unit])
    supersession = None if variant.newest_only else False
    return memory.assemble(
        query,
        chosen,
        ranking,
        proposals,
        units_read=units_read,
        supersession=supersession,
        by_score=variant.by_score,
    )


def _ablation(memory: Memory, variant: Variant, query: str, units_read: int) -> Context:
    """MUSTER's steps (:meth:`Memory.retrieve`) with one taken out. The floors are the plan's,
    scaled to U, whatever the memory's floor rules say: an ablation takes out one step of the
    method as the paper states it."""
    proposals, _ = memory.proposals(query, units_read)
    floors = scaled_floors(memory.plan.floors, units_read)
    if variant.removes is not None:
        proposals = [p for p in proposals if p.channel != variant.removes]
        floors = {**floors, variant.removes: 0}
    if variant.name == "no_floors":
        floors = dict.fromkeys(floors, 0)
    own_order = variant.name == "no_rerank"
    ranking = _round_robin(proposals) if own_order else memory.rank(query, proposals)
    chosen = memory.select(proposals, ranking, floors, units_read, own_order=own_order)
    by_score = variant.name == "score_order"
    if by_score:
        order = ranking.rank()
        chosen = sorted(chosen, key=lambda s: order[s.unit])
    return memory.assemble(query, chosen, ranking, proposals, units_read=units_read, by_score=by_score)


def _round_robin(proposals: Sequence[Proposals]) -> Ranking:
    order: list[int] = []
    seen: set[int] = set()
    for depth in range(max((len(p.units) for p in proposals), default=0)):
        for channel in proposals:
            if depth < len(channel.units) and channel.units[depth] not in seen:
                seen.add(channel.units[depth])
                order.append(channel.units[depth])
    return Ranking("round-robin", tuple(order), {u: -float(i) for i, u in enumerate(order)})


def _budgeted(memory: Memory, system: str, query: str, budget: int) -> Context:
    n = len(memory.cut.units)
    if system == "full_context":
        candidates = list(range(n - 1, -1, -1))  # newest first
    elif system == "hybrid":
        rankings = [memory.channel(name).propose(query, n) for name in ("bm25", "dense")]
        candidates = list(fuse(rankings, RRF).order)
    else:
        channel = memory.channel(system)
        candidates = list(channel.propose(query, n).units)
    chosen: list[Selected] = []
    used = 0
    for unit in candidates:
        cost = memory.unit_tokens[unit]
        if used + cost <= budget:
            chosen.append(Selected(unit, f"budget:{system}"))
            used += cost
    ranking = Ranking(system, tuple(s.unit for s in chosen), {})
    proposals = [Proposals(system, ranking.order, ())]
    by_score = system != "full_context"  # full context is shown in stored order
    return memory.assemble(query, chosen, ranking, proposals, supersession=False, by_score=by_score)
