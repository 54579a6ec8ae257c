"""The namespaces a server holds open besides its default one: a bounded LRU that never passes
its bound (:class:`OpenNamespaces`, used by :class:`~muster_exact.serve.backend.Backend`).

A namespace is opened on a call's first use of it and kept open after the call (the least
recently used first to go). A place is made by closing the least recently used idle namespace,
never one a call is using; a call that needs a place while every place is in use waits for one.
So at most ``places`` namespaces are ever open, and the file descriptors they hold (about
``FDS_PER_NAMESPACE`` each, :mod:`muster_exact.serve.budget`) stay within what the server
budgeted; a call holds one namespace at a time, so waiting cannot deadlock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from muster_exact.store import Store


@dataclass
class _Open:
    """An open namespace and how many calls are using it now (it is closed only when none is)."""

    store: Store
    users: int = 0


class OpenNamespaces:
    """At most ``places`` namespaces open at once (thread-safe); ``opener`` opens one by name."""

    def __init__(self, opener: Callable[[str], Store], places: int) -> None:
        self.opener = opener
        self.places = max(1, places)
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._opening = 0  # places taken by namespaces being opened now
        self._lock = threading.Lock()  # guards the above; each Store has its own lock
        self._freed = threading.Condition(self._lock)  # a namespace's last user is done with it

    @contextmanager
    def using(self, name: str) -> Iterator[Store]:
        """The open Store of ``name`` for the length of one call, opened when it is not."""
        entry = self._acquire(name)
        try:
            yield entry.store
        finally:
            with self._lock:
                entry.users -= 1
                if entry.users == 0:
                    self._freed.notify()  # it stays open (the LRU) until a place is needed

    def close(self) -> None:
        with self._lock:
            entries, self._open = list(self._open.values()), OrderedDict()
        _close([entry.store for entry in entries])

    def _acquire(self, name: str) -> _Open:
        with self._lock:
            entry = self._open.get(name)
            if entry is not None:
                entry.users += 1
                self._open.move_to_end(name)
                return entry
        _close(self._make_room())
        # Opened outside the lock: opening can wait on SQLite, and other namespaces must not wait with it.
        try:
            opened = self.opener(name)
        except BaseException:
            self._give_back()
            raise
        with self._lock:
            self._opening -= 1
            entry = self._open.get(name)
            spare = [] if entry is None else [opened]  # another call opened it meanwhile
            if entry is None:
                entry = self._open[name] = _Open(opened)
            else:
                self._freed.notify()  # the place taken for it is free again
            entry.users += 1
            self._open.move_to_end(name)
        _close(spare)
        return entry

    def _make_room(self) -> list[Store]:
        """Take a place for one more open namespace, waiting while every place is held by a call:
        the least recently used idle namespaces leave the LRU (the caller closes them, outside the
        lock)."""
        evicted = []
        with self._freed:
            while True:
                idle = [name for name, entry in self._open.items() if entry.users == 0]
                while len(self._open) + self._opening >= self.places and idle:
                    evicted.append(self._open.pop(idle.pop(0)).store)
                if len(self._open) + self._opening < self.places:
                    self._opening += 1
                    return evicted
                self._freed.wait()

    def _give_back(self) -> None:
        with self._lock:
            self._opening -= 1
            self._freed.notify()

    def is_open(self, name: str) -> bool:
        with self._lock:
            return name in self._open

    def held(self) -> int:
        """Places held now: namespaces open and being opened (what the bound is on)."""
        with self._lock:
            return len(self._open) + self._opening


def _close(stores: list[Store]) -> None:
    for store in stores:
        store.close()
