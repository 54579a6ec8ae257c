"""Order the proposed units: a cross-encoder, or reciprocal-rank fusion without one.

With cross-encoder weights, every proposed unit is scored against the query
and ordered by that score. Without them (these machines have none), the
honest fallback is reciprocal-rank fusion of the channels' own rankings,
``sum 1 / (60 + rank)``; the plan and ``explain`` name which one ran.
Ties break by stored position (unit id).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from muster_exact.channels import Proposals

RRF_K = 60
CROSS_ENCODER = "cross-encoder"
RRF = "rrf"


@dataclass(frozen=True)
class Ranking:
    method: str
    order: tuple[int, ...]  # every proposed unit, best first
    scores: dict[int, float]

    def rank(self) -> dict[int, int]:
        return {unit: i for i, unit in enumerate(self.order)}


def candidates(proposals: Sequence[Proposals]) -> list[int]:
    """Every proposed unit once, by id."""
    return sorted({u for p in proposals for u in p.units})


def _ordered(scores: dict[int, float], method: str) -> Ranking:
    order = tuple(sorted(scores, key=lambda u: (-scores[u], u)))
    return Ranking(method, order, scores)


def fuse(proposals: Sequence[Proposals]) -> Ranking:
    scores: dict[int, list[float]] = {}
    for channel in proposals:
        for rank, unit in enumerate(channel.units, start=1):
            scores.setdefault(unit, []).append(1.0 / (RRF_K + rank))
    return _ordered({u: math.fsum(v) for u, v in scores.items()}, RRF)


def cross_encode(
    query: str,
    proposals: Sequence[Proposals],
    text_of: Callable[[int], str],
    score: Callable[[str, list[str]], list[float]],
) -> Ranking:
    units = candidates(proposals)
    values = score(query, [text_of(u) for u in units]) if units else []
    return _ordered(dict(zip(units, values, strict=True)), CROSS_ENCODER)
