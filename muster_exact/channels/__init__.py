"""The three retrieval channels. Each proposes units for a query on its own;
none imports another, and all share only :class:`Proposals`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Proposals:
    """A channel's units for one query, best first, with the channel's own scores."""

    channel: str
    units: tuple[int, ...]
    scores: tuple[float, ...]


def pool_size(units_read: int) -> int:
    """Each channel proposes its top max(2U, 20) units (SPEC 4)."""
    return max(2 * units_read, 20)


def top_k(scores: object, k: int, positive_only: bool = False) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The k best unit ids by score, ties broken by stored position (lower id first)."""
    import numpy as np

    values = np.asarray(scores, dtype=np.float64)
    ids = np.arange(len(values))
    if positive_only:
        keep = values > 0
        values, ids = values[keep], ids[keep]
    order = np.lexsort((ids, -values))[:k]
    return tuple(int(i) for i in ids[order]), tuple(float(v) for v in values[order])
