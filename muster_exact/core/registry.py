"""One registry of named things: benchmarks, systems, presets, model profiles, scorers, stages.

Every place that lets a user pick a thing by name uses a :class:`Registry`,
so an unknown name is answered the same way everywhere (one typed error with
the closest names, or the list of choices) and the listing a CLI or a test
reads is the registry itself, never a second hand-written tuple.

An entry is either an object, or a ``"module:attr"`` string that is imported
on first use: a registry of stages or benchmarks can then be read (names,
membership, "did you mean") without importing what it names, which keeps
``import muster_exact`` light and lets the harness list stages whose
dependencies are heavy.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from muster_exact.core.errors import InputError, MusterError

T = TypeVar("T")


def import_target(target: str) -> object:
    """The attribute ``attr`` of ``module`` named by ``"module:attr"``."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"a lazy registry entry is 'module:attr', not {target!r}")
    value: object = importlib.import_module(module)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def suggestion(name: str, choices: list[str], cutoff: float = 0.5) -> str:
    """ "did you mean a, b?" when close names exist, else "choose one of ..." (the one phrasing)."""
    close = difflib.get_close_matches(name, choices, n=3, cutoff=cutoff)
    if close:
        return f"did you mean {', '.join(close)}?"
    return f"choose one of {', '.join(choices)}" if choices else "none is registered"


class Registry(Generic[T]):
    """Named entries of one kind, in registration order.

    ``kind`` is the word an error uses ("benchmark", "model profile").
    ``entries`` may be a mapping or a function returning one (for entries
    found on disk, such as preset files, read afresh on each use).
    ``error`` is the :class:`MusterError` subclass an unknown name raises.
    """

    def __init__(
        self,
        kind: str,
        entries: Mapping[str, T | str] | Callable[[], Mapping[str, T | str]] | None = None,
        *,
        error: type[MusterError] = InputError,
        cutoff: float = 0.5,
    ) -> None:
        self.kind = kind
        self.error = error
        self.cutoff = cutoff
        self._found = entries if callable(entries) else None
        self._entries: dict[str, T | str] = {} if callable(entries) or entries is None else dict(entries)
        self._loaded: dict[str, T] = {}

    def _all(self) -> Mapping[str, T | str]:
        return self._found() if self._found is not None else self._entries

    def register(self, name: str, entry: T | str) -> None:
        """Add ``name``; registering a name twice is a bug, not an override."""
        if self._found is not None:
            raise TypeError(f"the {self.kind} registry is read from disk; add a file instead")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a plug-in's or a test's own entry, when it is done)."""
        if self._found is not None:
            raise TypeError(f"the {self.kind} registry is read from disk; remove the file instead")
        del self._entries[self.check(name)]
        self._loaded.pop(name, None)

    def names(self) -> list[str]:
        return list(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._all())

    def check(self, name: str) -> str:
        """``name`` when registered; else the typed error naming the closest choices."""
        if name not in self._all():
            raise self.error(f"unknown {self.kind} {name!r}; {suggestion(name, self.names(), self.cutoff)}")
        return name

    def get(self, name: str) -> T:
        """The entry named ``name``, imported on first use when it was registered lazily."""
        entry = self._all()[self.check(name)]
        if not isinstance(entry, str):
            return entry
        if name not in self._loaded:
            self._loaded[name] = import_target(entry)  # type: ignore[assignment]
        return self._loaded[name]

    def target(self, name: str) -> str | None:
        """The ``"module:attr"`` a lazy entry names (None for an object entry)."""
        entry = self._all()[self.check(name)]
        return entry if isinstance(entry, str) else None
