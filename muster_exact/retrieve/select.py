"""Selection under reserved floors (SPEC 4).

U slots are filled in two passes. First each channel, in the registry's order
(``muster_exact.channels.CHANNELS``: dense, BM25, graph), takes its floor
(floors per ten scaled to U, rounded so they sum to U) from its own proposals
in rerank order, skipping units already taken.
Then slots a channel could not fill go to the best remaining proposed units
in rerank order. The rerank order already breaks ties by stored position.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from muster_exact.channels import Floors, Proposals, by_channel
from muster_exact.retrieve.rerank import Ranking

__all__ = ["Selected", "apportioned", "scaled_floors", "select"]


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
) -> list[Selected]:
    """``floors``: units per channel by name (a channel not named has none). ``own_order`` (the
    no-rerank ablation) takes each floor in the channel's own order."""
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
    for unit in ranking.order:
        if len(chosen) == units_read:
            break
        if unit not in taken:
            taken.add(unit)
            chosen.append(Selected(unit, "fill"))
    return chosen
