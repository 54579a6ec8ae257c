"""Built once per key, whatever the concurrency: the models' cache (``load_embedder``,
``load_reranker``).

``functools.lru_cache`` does not serialise a call: every thread that asks for a key nobody has
built yet builds it, at once (a server's first reads of several namespaces built one torch
model in four threads, and one of them failed with "Cannot copy out of meta tensor"). Here the
first caller of a key builds it and the others wait for that build: they get its value, or its
failure. A failure is not kept: the next call builds again (the cause may be gone: a file
restored, memory freed), one build at a time (docs/decisions/0180-one-model-load.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Build(Generic[V]):
    """One build in progress: its callers wait on ``done``, then read its value or its error."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: V | None = None
        self.error: Exception | None = None
        self.ok = False


class OncePerKey(Generic[K, V]):
    """``build(key)`` called once per key, its value kept (the ``bound`` most recently used)."""

    def __init__(self, build: Callable[[K], V], bound: int) -> None:
        self._build = build
        self._bound = bound
        self._lock = threading.Lock()  # guards _built and _building, never held while building
        self._built: OrderedDict[K, V] = OrderedDict()
        self._building: dict[K, _Build[V]] = {}

    def __call__(self, key: K) -> V:
        while True:
            with self._lock:
                if key in self._built:
                    self._built.move_to_end(key)
                    return self._built[key]
                build = self._building.get(key)
                leads = build is None
                if build is None:
                    build = self._building[key] = _Build()
            if leads:
                return self._lead(key, build)
            build.done.wait()
            if build.ok:
                return build.value  # type: ignore[return-value]  # set with ok
            if build.error is not None:
                raise build.error
            # The builder was interrupted (KeyboardInterrupt, SystemExit): build it here instead.

    def _lead(self, key: K, build: _Build[V]) -> V:
        try:
            value = self._build(key)
        except Exception as exc:
            build.error = exc
            raise
        else:
            build.value, build.ok = value, True
            with self._lock:
                self._built[key] = value
                while len(self._built) > self._bound:
                    self._built.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._building[key]
            build.done.set()
