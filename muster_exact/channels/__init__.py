"""The retrieval channels, by name. Each proposes units for a query on its own;
none imports another, and all share only :class:`Proposals`.

:data:`CHANNELS` names them in their fixed order: floors are taken, and
proposals merged, channel by channel in this order, so it is part of what a
context is (changing it changes contexts). A fourth channel is its module (a
class that is a :class:`~muster_exact.channels.given.BuiltChannel`: built from
a cut, grown, re-ruled, and ``propose(query, k) -> Proposals``) and one
``CHANNELS`` entry here; a memory builds it where its rules name it
(``Rules.channels``), and plans, floors, explain output and the ablations
then speak of it by its name (``tests/channels/test_channel_example.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from muster_exact.core.registry import Registry

T = TypeVar("T")
CACHE_SIZE = 4096

CHANNELS: Registry[type] = Registry(
    "retrieval channel",
    {
        "dense": "muster_exact.channels.dense:DenseChannel",
        "bm25": "muster_exact.channels.bm25:BM25Channel",
        "graph": "muster_exact.channels.graph:GraphChannel",
    },
)
Floors = Mapping[str, int]  # a number of units per channel, by channel name


def by_channel(floors: Floors) -> dict[str, int]:
    """``floors`` over every registered channel, in :data:`CHANNELS`' order (a channel not named:
    0); an unknown name is the registry's typed error."""
    for name in floors:
        CHANNELS.check(name)
    return {name: int(floors.get(name, 0)) for name in CHANNELS.names()}


@dataclass(frozen=True)
class Proposals:
    """A channel's units for one query, best first, with the channel's own scores."""

    channel: str
    units: tuple[int, ...]
    scores: tuple[float, ...]


class Channel(Protocol):
    """What a retrieval channel offers a query (what it offers a build:
    :class:`~muster_exact.channels.given.BuiltChannel`)."""

    name: str

    def propose(self, query: str, k: int) -> Proposals: ...


def pool_size(units_read: int) -> int:
    """Each channel proposes its top max(2U, 20) units (SPEC 4)."""
    return max(2 * units_read, 20)


def restricted(proposals: Proposals, allowed: Collection[int], k: int) -> Proposals:
    """A channel's proposals restricted to ``allowed`` units, the first ``k`` of them in its order."""
    kept = [(u, v) for u, v in zip(proposals.units, proposals.scores, strict=True) if u in allowed][:k]
    return Proposals(proposals.channel, tuple(u for u, _ in kept), tuple(v for _, v in kept))


def distinct_records(ranked: Proposals, shown: Sequence[frozenset[str]], k: int) -> Proposals:
    """The first ``k`` units of ``ranked`` that each show a record no unit before them in it
    shows (``shown``: each unit's records by name). A message longer than a unit is then ranked by
    its best unit, as a document by its best passage (MaxP, Dai and Callan 2019), and a pool holds
    one unit of it (decision 0205)."""
    seen: set[str] = set()
    kept: list[tuple[int, float]] = []
    for unit, score in zip(ranked.units, ranked.scores, strict=True):
        if len(kept) == k:
            break
        if shown[unit] <= seen:
            continue
        seen |= shown[unit]
        kept.append((unit, score))
    return Proposals(ranked.channel, tuple(u for u, _ in kept), tuple(v for _, v in kept))


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
