"""Order the proposed units: a cross-encoder, or reciprocal-rank fusion without one.

With cross-encoder weights, every proposed unit is scored against the query
and ordered by that score. Without them (these machines have none), the
channels are fused, and the plan and ``explain`` name the rule that ran:

* ``rrf``: reciprocal-rank fusion of the channels' rankings,
  ``sum 1 / (60 + rank)`` (exact mode: it reads ranks only);
* ``minmax``: each channel's scores scaled to [0, 1] over its own proposals
  (best 1, worst 0) and summed over the channels that proposed the unit, an
  absent channel adding 0 (Weaviate's "relative score fusion"); a channel
  whose proposals all score alike gives each 1;
* ``zscore``: the same sum over ``(score - min) / std`` of each channel's
  proposals: the channel's spread, not its range, sets its scale.

Ties break by stored position (unit id).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from muster_exact.channels import Proposals

RRF_K = 60
CROSS_ENCODER = "cross-encoder"
RRF = "rrf"
MINMAX = "minmax"
ZSCORE = "zscore"
FUSIONS = (RRF, MINMAX, ZSCORE)
_IN_WORDS = {
    CROSS_ENCODER: "cross-encoder scores",
    RRF: "reciprocal-rank fusion",
    MINMAX: "min-max score fusion",
    ZSCORE: "z-score fusion",
}


def describe(method: str) -> str:
    """The ordering rule in words, as ``--explain`` and ``explain`` print it."""
    words = _IN_WORDS.get(method, method)
    return words if method == CROSS_ENCODER else f"{words}: no cross-encoder weights"


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


def fuse(proposals: Sequence[Proposals], method: str = RRF) -> Ranking:
    """The candidates in fused order (no cross-encoder)."""
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}")
    scores: dict[int, list[float]] = {}
    for channel in proposals:
        for unit, value in zip(channel.units, _normalised(channel, method), strict=True):
            scores.setdefault(unit, []).append(value)
    return _ordered({u: math.fsum(v) for u, v in scores.items()}, method)


def _normalised(channel: Proposals, method: str) -> list[float]:
    if method == RRF:
        return [1.0 / (RRF_K + rank) for rank in range(1, len(channel.units) + 1)]
    values = list(channel.scores)
    if not values:
        return []
    low = min(values)
    spread = max(values) - low if method == MINMAX else statistics.pstdev(values)
    if spread <= 0:
        return [1.0] * len(values)
    return [(v - low) / spread for v in values]


def cross_encode(
    query: str,
    proposals: Sequence[Proposals],
    text_of: Callable[[int], str],
    score: Callable[[str, list[str]], list[float]],
) -> Ranking:
    units = candidates(proposals)
    values = score(query, [text_of(u) for u in units]) if units else []
    return _ordered(dict(zip(units, values, strict=True)), CROSS_ENCODER)
