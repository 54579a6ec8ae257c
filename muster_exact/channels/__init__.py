"""The three retrieval channels. Each proposes units for a query on its own;
none imports another, and all share only :class:`Proposals`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
CACHE_SIZE = 4096


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


class Recent(Generic[T]):
    """A bounded map of recent answers. A built index never changes, so the same question asked
    again (systems compared on one store, a benchmark's repeated questions) costs nothing."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value
