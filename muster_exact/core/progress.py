"""Progress of long work on stderr, off unless asked for.

The library never prints unasked, so progress is shown only inside
``with shown(True):`` (``build(progress=True)``, ``verify_contexts.check(...,
progress=True)``, the CLI unless ``--quiet``, the harness's
``stage.progress``). It goes to stderr only: stdout carries the contexts and
the JSON that users pipe, and it is the same with progress or without.

Two forms, chosen by what stderr is:

- a terminal: a tqdm bar (count, rate, ETA) redrawn in place, where tqdm is
  installed (it comes with sentence-transformers);
- anything else (a log file, CI, a pipe): :class:`Lines`, one plain line at
  each tenth of the way and at the end, with the rate and the ETA, and no
  carriage return, so a log holds a handful of readable lines.

The stages that take long on a big store report through :func:`bar` (the
per-text analyses of the memo: token counts, BM25 documents, entities,
word-piece windows) or :func:`step` (the embedder: one call, so its batches,
and its vectors, stay those of one call; on a terminal it also draws its
own bar).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from collections.abc import Iterator
from typing import Any, Protocol

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("muster_progress", default=False)
# Fewer texts than this are analysed in one call and with no bar: it would only flicker.
SHOWN_FROM = 5_000
CHUNK = 2_000
# An embedder call this small is over before a line about it would help.
STEP_FROM = 200
# Lines (not a terminal): one at each tenth of the way.
TENTHS = 10


class Progress(Protocol):
    def update(self, n: int = 1) -> None: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def shown(enabled: bool) -> Iterator[None]:
    """Within this block, long work shows its progress on stderr."""
    token = _SHOWN.set(bool(enabled))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def asked() -> bool:
    """Whether progress is shown here (in either form)."""
    return _SHOWN.get()


def enabled() -> bool:
    """Whether a tqdm bar is drawn here: asked for, and stderr is a terminal (the embedder's
    ``show_progress_bar``, which would draw on a pipe too)."""
    return _SHOWN.get() and _terminal() and _tqdm() is not None


class Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class Lines:
    """Progress for a log: a line at each tenth of ``total`` and one at the end, e.g.
    ``locomo muster: 397/1986 q (20%), 3.1 q/s, ETA 8:32``. The rate counts only the steps
    done here (``initial`` ones were done by an earlier run)."""

    def __init__(self, total: int, desc: str, unit: str, initial: int = 0) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.done = self._start = initial
        self._started = time.perf_counter()
        self._tenth = self._tenth_of(initial)
        self._written = initial

    def update(self, n: int = 1) -> None:
        self.done += n
        tenth = self._tenth_of(self.done)
        if tenth > self._tenth:
            self._tenth = tenth
            self._write()

    def close(self) -> None:
        if self.done > self._written:  # stopped between two tenths: say where
            self._write()

    def _tenth_of(self, done: int) -> int:
        return TENTHS * done // self.total if self.total else TENTHS

    def _write(self) -> None:
        self._written = self.done
        seconds = time.perf_counter() - self._started
        rate = (self.done - self._start) / seconds if seconds > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else None
        percent = 100 * self.done // self.total if self.total else 100
        eta = "" if self.done >= self.total else f", ETA {clock(left)}"
        say(f"{self.desc}: {self.done}/{self.total} {self.unit} ({percent}%), {rate:.1f} {self.unit}/s{eta}")


def bar(
    total: int,
    desc: str,
    unit: str = "texts",
    *,
    shown_from: int = SHOWN_FROM,
    initial: int = 0,
    asked: bool | None = None,
) -> Progress:
    """Progress over ``total`` steps (``update``, ``close``): a bar on a terminal, :class:`Lines`
    elsewhere, or :class:`Silent` when not asked for or under ``shown_from`` steps. ``asked``:
    whether it is asked for, when the caller has its own switch (else: inside :func:`shown`)."""
    if not (_SHOWN.get() if asked is None else asked) or total < shown_from:
        return Silent()
    tqdm = _tqdm() if _terminal() else None
    if tqdm is None:
        return Lines(total, desc, unit, initial)
    drawn: Progress = tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=False, file=sys.stderr)
    return drawn


@contextlib.contextmanager
def step(desc: str, count: int, unit: str, *, shown_from: int = STEP_FROM) -> Iterator[None]:
    """One long call with no steps of its own to count: a line as it starts and one as it ends
    (with its rate), when asked for and over ``shown_from`` items."""
    if not _SHOWN.get() or count < shown_from:
        yield
        return
    say(f"{desc}: {count} {unit} ...")
    started = time.perf_counter()
    yield
    seconds = time.perf_counter() - started
    rate = count / seconds if seconds > 0 else 0.0
    say(f"{desc}: {count} {unit} in {clock(seconds)}, {rate:.1f} {unit}/s")


def say(line: str) -> None:
    """One progress line on stderr (only called where progress was asked for)."""
    print(line, file=sys.stderr, flush=True)


def clock(seconds: float | None) -> str:
    """``m:ss`` or ``h:mm:ss``, as tqdm writes times; ``?`` when not known yet."""
    if seconds is None:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _terminal() -> bool:
    return sys.stderr.isatty()


def _tqdm() -> Any:
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return None
    return tqdm
