"""Selection under reserved floors (SPEC 4).

U slots are filled in two passes. First each channel, in the registry's order
(``muster_exact.channels.CHANNELS``: dense, BM25, graph), takes its floor
(floors per ten scaled to U, rounded so they sum to U) from its own proposals
in rerank order, skipping units already taken.
Then slots a channel could not fill go to the best remaining proposed units
in rerank order. The rerank order already breaks ties by stored position.

Under the ``coverage="mmr"`` rule those remaining slots go by maximal marginal relevance
(Carbonell and Goldstein 1998) with lambda 0.5: relevance is the candidate's rerank score over
the best candidate's (positive scores, as fusion gives; else scaled to [0, 1] over the
candidates), and a candidate counts as similar (1) to what is shown when a unit of its parent
already is, else 0. With positive scores, a yes-or-no similarity and lambda 0.5, a unit of a
parent not yet shown always goes first, in rerank order: coverage of the store's parents before
depth in one of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from muster_exact.channels import Floors, Proposals, by_channel
from muster_exact.retrieve.rerank import Ranking

__all__ = ["MMR_LAMBDA", "Selected", "apportioned", "scaled_floors", "select"]

MMR_LAMBDA = 0.5


@dataclass(frozen=True)
class Selected:
    unit: int
    reason: str  # "floor:<channel>" or "fill"


def scaled_floors(per_ten: Floors, units_read: int) -> dict[str, int]:
    """Floors per ten units scaled to U, by channel; largest remainders (then channel order)
    round up."""
    names = list(by_channel(per_ten))
    return dict(zip(names, apportioned([per_ten.get(name, 0) for name in names], units_read), strict=True))


def apportioned(weights: Sequence[int], total: int) -> list[int]:
    """``total`` split in proportion to ``weights``, summing to ``total`` (all zero when the
    weights are): each part rounded down, then the largest remainders (then the first places)
    round up. The one rounding rule for floors and for a collection's read budget."""
    whole = sum(weights)
    if not whole:
        return [0] * len(weights)
    exact = [w * total / whole for w in weights]
    parts = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in by_remainder[: total - sum(parts)]:
        parts[i] += 1
    return parts


def select(
    proposals: Sequence[Proposals],
    ranking: Ranking,
    floors: Floors,
    units_read: int,
    *,
    own_order: bool = False,
    parents: Sequence[int] | None = None,
) -> list[Selected]:
    """``floors``: units per channel by name (a channel not named has none). ``own_order`` (the
    no-rerank ablation) takes each floor in the channel's own order. ``parents`` (each unit's
    parent): the slots after the floors by maximal marginal relevance over parents."""
    rank = ranking.rank()
    proposed = {p.channel: p for p in proposals}
    chosen: list[Selected] = []
    taken: set[int] = set()
    for channel, floor in by_channel(floors).items():
        own = proposed.get(channel)
        if own is None or floor <= 0:
            continue
        got = 0
        for unit in own.units if own_order else sorted(own.units, key=rank.__getitem__):
            if got == floor or len(chosen) == units_read:
                break
            if unit not in taken:
                taken.add(unit)
                chosen.append(Selected(unit, f"floor:{channel}"))
                got += 1
    fill = [u for u in ranking.order if u not in taken]
    if parents is not None:
        fill = _by_marginal_relevance(fill, ranking, parents, {parents[s.unit] for s in chosen})
    chosen += [Selected(unit, "fill") for unit in fill[: max(0, units_read - len(chosen))]]
    return chosen


def _by_marginal_relevance(
    candidates: list[int], ranking: Ranking, parents: Sequence[int], shown: set[int]
) -> list[int]:
    """``candidates`` (in rerank order) in the order MMR picks them, given the parents shown."""
    if not candidates:
        return []
    scores = [ranking.scores.get(u, 0.0) for u in candidates]
    if min(scores) > 0:
        scaled = [s / max(scores) for s in scores]
    else:
        low, spread = min(scores), max(scores) - min(scores)
        scaled = [(s - low) / spread if spread > 0 else 1.0 for s in scores]
    relevance = dict(zip(candidates, scaled, strict=True))
    left, order, seen = list(candidates), [], set(shown)
    while left:
        best = max(left, key=lambda u: MMR_LAMBDA * relevance[u] - (1 - MMR_LAMBDA) * (parents[u] in seen))
        left.remove(best)
        order.append(best)
        seen.add(parents[best])
    return order
