"""Baselines and ablations of the method, for measurement (SPEC 8).

The harness runs every system through the same code; the retrieval logic of
each lives here, in the library, so the harness only names them.

Baselines, at a token budget (the tokens of MUSTER's context for the same
question), their units' own token counts summed greedily in their order:

* ``full_context``: the newest units that fit, shown in stored order;
* ``bm25`` / ``dense``: one channel's ranking over all units, shown best
  first (plain RAG: no floors, no graph, no supersession).

Ablations of MUSTER, at the same U:

* ``no_floors``: every slot by the candidate order alone;
* ``no_graph``: the graph channel removed (its slots go to the best remaining);
* ``no_rerank``: no candidate ordering: floors in each channel's own order,
  free slots by taking the channels' rankings in turn;
* ``score_order``: MUSTER's selection, shown in candidate order instead of
  stored order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from muster_exact.assemble import Context, assemble
from muster_exact.channels import Proposals
from muster_exact.errors import InputError
from muster_exact.memory import Memory, checked_query, checked_units
from muster_exact.rerank import Ranking
from muster_exact.select import Selected, scaled_floors, select

SYSTEMS = ("muster", "full_context", "bm25", "dense", "no_floors", "no_graph", "no_rerank", "score_order")
BUDGETED = ("full_context", "bm25", "dense")


def context(
    memory: Memory, system: str, query: str, units: int | None = None, budget: int | None = None
) -> Context:
    """The context ``system`` gives for ``query``. Budgeted systems need ``budget`` tokens."""
    if system not in SYSTEMS:
        raise InputError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    if system == "muster":
        return memory.context(query, units)
    query = checked_query(query)
    units_read = memory.plan.units_read if units is None else checked_units(units)
    if system in BUDGETED:
        if budget is None or budget < 0:
            raise InputError(f"system {system!r} needs a token budget (MUSTER's context tokens)")
        return _budgeted(memory, system, query, budget)
    proposals, _ = memory.proposals(query, units_read)
    floors = scaled_floors(memory.plan.floors, units_read)
    if system == "no_graph":
        proposals = [p for p in proposals if p.channel != "graph"]
        floors = (*floors[:2], 0)
    if system == "no_rerank":
        ranking = _round_robin(proposals)
        chosen = select(proposals, ranking, floors, units_read, own_order=True)
    else:
        ranking = memory.rank(query, proposals)
        chosen = select(proposals, ranking, (0, 0, 0) if system == "no_floors" else floors, units_read)
    plan = dataclasses.replace(memory.plan, units_read=units_read)
    if system == "score_order":
        order = ranking.rank()
        chosen = sorted(chosen, key=lambda s: order[s.unit])
    return assemble(query, memory.cut, plan, chosen, ranking, proposals, by_score=system == "score_order")


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
    plan = dataclasses.replace(memory.plan, supersession=False)
    ranking = Ranking(system, tuple(s.unit for s in chosen), {})
    proposals = [Proposals(system, ranking.order, ())]
    if system == "full_context":
        return assemble(query, memory.cut, plan, chosen, ranking, proposals)
    return assemble(query, memory.cut, plan, chosen, ranking, proposals, by_score=True)
