"""What a build computes per text, kept for the next build of a growing store.

Every value kept here is a pure function of one text (its token count, its
BM25 terms, its entities, its size in the embedder's word pieces), so a
build that takes a value from a :class:`Memo` builds exactly what a fresh
build computes, and only texts never seen before cost work: after one
``Store.add`` the next read analyses the new record and the units it
changed, not the store. ``computed`` counts, per kind, the texts that were
analysed rather than found (what the growth tests count).

A memo may be backed by an :class:`~muster_exact.cache.vectors.AnalysisCache` in
the store file: a value not in memory is read from there (by the SHA-256 of
its text) before it is computed, and a computed one is written there, so a
new process opening a store analyses nothing it analysed before (``loaded``
counts those reads). Only kinds given a :class:`Codec` are kept in the file.

A memo holds one store's worth: :meth:`Memo.settle`, called at the end of a
build, drops every value that build did not use, so deleted or re-cut text
does not linger. A :class:`~muster_exact.store.Store` keeps one per
namespace and starts a new one when records are deleted.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from muster_exact.core import progress

if TYPE_CHECKING:
    from muster_exact.cache.vectors import AnalysisCache

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How a kind of value is written to the store file: as JSON-ready data and back."""

    dump: Callable[[T], Any]
    load: Callable[[Any], T]


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def strings(value: Any) -> list[str]:
    """A JSON list of strings, or ValueError (what the codecs accept from the file)."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("not a list of strings")
    return value


def counts(value: Any) -> list[int]:
    """A JSON list of counts, or ValueError."""
    if not isinstance(value, list):
        raise ValueError("not a list of counts")
    return [_count(item) for item in value]


COUNT: Codec[int] = Codec(int, _count)


class Memo:
    def __init__(self, backing: AnalysisCache | None = None) -> None:
        self.backing = backing
        self._tables: dict[str, dict[str, Any]] = {}
        self._used: dict[str, set[str]] = {}
        self._shared: dict[str, Any] = {}
        self.computed: Counter[str] = Counter()
        self.loaded: Counter[str] = Counter()
        self._lock = threading.Lock()

    def many(
        self,
        kind: str,
        keys: Sequence[str],
        compute: Callable[[list[str]], Sequence[T]],
        codec: Codec[T] | None = None,
        whole: bool = False,
    ) -> list[T]:
        """The value of each key (a text): kept, else read from the backing file, else computed.

        ``compute`` gets the missing keys in blocks when a progress bar is shown, else in one
        call; ``whole``: always in one call (values that depend on the batch, such as vectors)."""
        with self._lock:
            table = self._tables.setdefault(kind, {})
            used = self._used.setdefault(kind, set())
            missing = list(dict.fromkeys(k for k in keys if k not in table))
        if missing and codec is not None and self.backing is not None:
            missing = self._load(kind, missing, codec, table)
        if missing:
            values = compute(missing) if whole else _computed(kind, missing, compute)
            with self._lock:
                table.update(zip(missing, values, strict=True))
                self.computed[kind] += len(missing)
            if codec is not None and self.backing is not None:
                rows = [(_key(k), json.dumps(codec.dump(v))) for k, v in zip(missing, values, strict=True)]
                self.backing.put(kind, rows)
        with self._lock:
            used.update(keys)
            return [table[k] for k in keys]

    def _load(self, kind: str, missing: list[str], codec: Codec[T], table: dict[str, Any]) -> list[str]:
        """Read what the file holds into ``table``; return the keys still missing."""
        assert self.backing is not None
        hashes = [_key(k) for k in missing]
        stored = self.backing.get(kind, hashes)
        left = []
        with self._lock:
            for key, sha in zip(missing, hashes, strict=True):
                if sha in stored:
                    try:
                        table[key] = codec.load(json.loads(stored[sha]))
                    except (ValueError, TypeError, KeyError, IndexError) as exc:
                        # The file is input like any other: a damaged row costs a recomputation
                        # (and is written again), never an answer.
                        log.warning(
                            "analysis %s/%s in the store file is unreadable (%s); recomputed",
                            kind,
                            sha[:12],
                            exc,
                        )
                        left.append(key)
                        continue
                    self.loaded[kind] += 1
                else:
                    left.append(key)
        return left

    def found_elsewhere(self, kind: str, count: int) -> None:
        """``count`` of the values just asked for were read from another file (the vector cache),
        not computed: counted as loaded."""
        with self._lock:
            self.loaded[kind] += count
            self.computed[kind] -= count

    def tokens(self, texts: Sequence[str]) -> list[int]:
        """cl100k token counts (``tokens.count_many``), each text counted once."""
        from muster_exact.text import tokens

        return self.many("tokens", texts, tokens.count_many, COUNT)

    def shared(self, name: str, make: Callable[[], T]) -> T:
        """One object that the kept values depend on (a vocabulary their ids refer to)."""
        with self._lock:
            if name not in self._shared:
                self._shared[name] = make()
            return self._shared[name]  # type: ignore[no-any-return]

    def held(self, kind: str) -> int:
        """How many texts' values of ``kind`` are kept."""
        with self._lock:
            return len(self._tables.get(kind, {}))

    def forget(self, keys: Sequence[str]) -> None:
        """Drop these texts' values of every kind: texts a grown memory no longer holds (the
        units it cut again), which no ``settle`` would drop while the store only grows."""
        gone = set(keys)
        with self._lock:
            for table in self._tables.values():
                for key in gone & table.keys():
                    del table[key]

    def settle(self) -> None:
        """Keep only what the build just finished used."""
        with self._lock:
            for kind, table in self._tables.items():
                used = self._used.get(kind, set())
                for key in [k for k in table if k not in used]:
                    del table[key]
            self._used = {}


def _computed(kind: str, missing: list[str], compute: Callable[[list[str]], Sequence[T]]) -> list[T]:
    """``compute`` over ``missing``, in blocks under a progress bar when one is shown (each value
    depends on its own text only, so the blocks give what one call gives)."""
    shown = progress.bar(len(missing), kind)
    if isinstance(shown, progress.Silent):
        return list(compute(missing))
    values: list[T] = []
    try:
        for at in range(0, len(missing), progress.CHUNK):
            block = missing[at : at + progress.CHUNK]
            values.extend(compute(block))
            shown.update(len(block))
    finally:
        shown.close()
    return values


def _key(text: str) -> str:
    from muster_exact.cache.vectors import text_key

    return text_key(text)
