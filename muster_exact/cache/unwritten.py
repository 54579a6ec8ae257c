"""Vectors a cache could not write (a full disk), kept in memory for the rest of the process.

Without them every read on a full disk embedded every unit again (issue 55: 94 s a read over
1,720 records). They are keyed as the file keys them (model, SHA-256 of the text), so any store
or build in the process finds them, and bounded by :data:`MAX_BYTES`: the oldest go first, and a
read then embeds what went (decision 0214).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

# 128 MiB: 87,000 vectors of 384 float32s, the pieces of about 20M tokens at 256 tokens a piece
# (cpu-small), several times a store one process serves; a week on a full disk stays at this.
MAX_BYTES = 128 << 20


class Unwritten:
    """A bounded (model, text hash) -> vector bytes map, oldest out first; safe across threads."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._held: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def keep(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        with self._lock:
            for key, blob in items:
                old = self._held.pop((model, key), None)
                self._bytes += len(blob) - (0 if old is None else len(old))
                self._held[(model, key)] = blob
            while self._bytes > self.max_bytes and self._held:
                _, dropped = self._held.popitem(last=False)
                self._bytes -= len(dropped)

    def get(self, model: str, keys: Sequence[str]) -> dict[str, bytes]:
        with self._lock:
            return {k: blob for k in keys if (blob := self._held.get((model, k))) is not None}

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._bytes = 0


UNWRITTEN = Unwritten()
