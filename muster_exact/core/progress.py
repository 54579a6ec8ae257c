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
  each tenth of the way or every :data:`EVERY_S` seconds, whichever comes
  first, and at the end, with the rate and the ETA, and no carriage return,
  so a log holds a few readable lines however long the work.

The stages that take long on a big store report through :func:`bar` (the
per-text analyses of the memo: token counts, BM25 documents, entities,
word-piece windows), :func:`step` (the embedder's one call, a line as it starts
and as it ends: its batches, and its vectors, stay those of one call) and,
inside that call, :func:`embedding` (the embedder's passes: first one line with
an estimate of the whole, measured on its first passes, then the bar or the
lines).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

log = logging.getLogger(__name__)

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("muster_progress", default=False)
# Inside a working() block: an inner one stays quiet.
_WORKING: contextvars.ContextVar[bool] = contextvars.ContextVar("muster_working", default=False)
# Fewer texts than this are analysed in one call and with no bar: it would only flicker.
SHOWN_FROM = 5_000
CHUNK = 2_000
# An embedder call this small is announced only once it has run for HEARTBEAT_S (a line as it
# starts would only add noise to the many quick ones); a larger one says so as it starts.
STEP_FROM = 200
# Work that has run this long says what it is doing, whatever its size (issue 53: a slow small
# embedding beside a busy neighbour was minutes of silence): by time, not by count.
HEARTBEAT_S = 2.0
# Lines (not a terminal): one at each tenth of the way, and one at least this often between two
# tenths: a tenth of a 50 MB file's embedding is many minutes, too long a silence for a log.
TENTHS = 10
EVERY_S = 30.0
# An embedder times its first passes for this long, or for this share of its texts if that comes
# first (a small call is then still estimated before its first tenth), and says what the whole
# will take at that rate.
SAMPLE_S = 2.0
SAMPLE_SHARE = 0.05

# Seconds from an arbitrary start (``now``); a test passes its own to prove the time rules without waiting.
Clock = Callable[[], float]


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
    """Progress for a log: a line at each tenth of ``total`` or ``every`` seconds after the last
    line, whichever comes first, and one at the end, e.g.
    ``locomo muster: 397/1986 q (20%), 3.1 q/s, ETA 8:32``. The rate counts only the steps
    done here (``initial`` ones were done by an earlier run)."""

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str,
        initial: int = 0,
        *,
        every: float = EVERY_S,
        now: Clock = time.perf_counter,
    ) -> None:
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.done = self._start = initial
        self._now = now
        self._started = self._last = now()
        self._tenth = self._tenth_of(initial)
        self._written = initial

    def update(self, n: int = 1) -> None:
        self.done += n
        tenth = self._tenth_of(self.done)
        if tenth > self._tenth or self._now() - self._last >= self.every:
            self._tenth = tenth
            self._write()

    def close(self) -> None:
        if self.done > self._written:  # stopped between two tenths: say where
            self._write()

    def _tenth_of(self, done: int) -> int:
        return TENTHS * done // self.total if self.total else TENTHS

    def _write(self) -> None:
        self._written = self.done
        self._last = self._now()
        seconds = self._last - self._started
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
    return _drawn(total, desc, unit, initial, time.perf_counter)


def _drawn(total: int, desc: str, unit: str, initial: int, now: Clock) -> Progress:
    """A tqdm bar on a terminal, else :class:`Lines`."""
    tqdm = _tqdm() if _terminal() else None
    if tqdm is None:
        return Lines(total, desc, unit, initial, now=now)
    drawn: Progress = tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=False, file=sys.stderr)
    return drawn


class Estimated:
    """Progress of one embedder call over ``total`` pieces: its first passes are timed (the first
    :data:`SAMPLE_S` seconds or :data:`SAMPLE_SHARE` of the pieces, whichever comes first) with
    nothing shown, then one line says what the whole will take at that rate, e.g. ``embedding
    12,345 pieces: about 3 min on this machine (measured 68.2 pieces/s on the first 137)``, and
    the bar or the lines take over from there. The estimate is a fair one because the embedder's
    passes come in :func:`spread` order: its first passes are a sample of all the lengths."""

    def __init__(self, total: int, *, now: Clock = time.perf_counter) -> None:
        self.total, self.done = total, 0
        self._now = now
        self._started = now()
        self._shown: Progress | None = None

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._shown is not None:
            self._shown.update(n)
            return
        seconds = self._now() - self._started
        # A small call is estimated only once it has run for SAMPLE_S: its 5% is a pass or two.
        share = self.total >= STEP_FROM and self.done >= SAMPLE_SHARE * self.total
        sampled = seconds >= SAMPLE_S or share
        if sampled and seconds > 0 and self.done < self.total:  # (a call over within it: no estimate)
            rate = self.done / seconds
            say(
                f"embedding {self.total:,} pieces: {about(self.total / rate)} on this machine "
                f"(measured {rate:.1f} pieces/s on the first {self.done:,})"
            )
            self._shown = _drawn(self.total, "embedding", "pieces", self.done, self._now)

    def close(self) -> None:
        if self._shown is not None:
            self._shown.close()


def embedding(total: int, *, now: Clock = time.perf_counter) -> Progress:
    """The progress of an embedder's one call over ``total`` pieces (:class:`Estimated`), where
    progress is shown: a call of any size that is still at work after :data:`SAMPLE_S` says its
    estimate (a larger one may say it sooner, at :data:`SAMPLE_SHARE` of its pieces)."""
    if not _SHOWN.get():
        return Silent()
    return Estimated(total, now=now)


# The golden ratio's fractional part (see spread).
GOLDEN = (5**0.5 - 1) / 2


def spread(count: int) -> list[int]:
    """0 .. ``count`` - 1 in an order whose every first part is spread evenly over the whole. An
    embedder sorts its passes by text length (texts of one length share a pass); taken in this
    order instead, the first tenth of the passes holds about a tenth of the short texts and a tenth
    of the long ones, so pieces/s is steady from the start and an estimate from the first passes
    holds. Only the order changes: each pass holds the same texts, so the vectors are the same."""
    # The k-th index taken is where k * GOLDEN mod 1 ranks among the count points: each next one
    # falls in the largest gap the ones before it left.
    ranked = sorted(range(count), key=lambda k: (k * GOLDEN) % 1.0)
    order = [0] * count
    for rank, k in enumerate(ranked):
        order[k] = rank
    return order


@contextlib.contextmanager
def step(desc: str, count: int, unit: str, *, shown_from: int = STEP_FROM) -> Iterator[None]:
    """One long call with no steps of its own to count: a line as it starts and one as it ends
    (with its rate), when asked for. Under ``shown_from`` items the start line waits for
    :data:`HEARTBEAT_S` seconds of work (a quick call says nothing; a slow one still does)."""
    if not _SHOWN.get():
        yield
        return
    started = time.perf_counter()
    with _after(0.0 if count >= shown_from else HEARTBEAT_S, f"{desc}: {count} {unit} ...") as said:
        yield
    if said.is_set():
        seconds = time.perf_counter() - started
        rate = count / seconds if seconds > 0 else 0.0
        say(f"{desc}: {count} {unit} in {clock(seconds)}, {rate:.1f} {unit}/s")


@contextlib.contextmanager
def working(desc: str, *, after: float | None = None) -> Iterator[None]:
    """A block of work that says what it is doing once it has run ``after`` seconds (default
    :data:`HEARTBEAT_S`; ``desc ...``) and, if it said so, how long it took as it ends (``desc:
    done in 0:12``; nothing more if it raised). Where progress is
    shown the lines go to stderr; elsewhere (a server) to the log at INFO, so a slow first read
    shows in the server's log too. Quick work says nothing; so does work inside another
    ``working`` block (the outer one says what is going on)."""
    if _WORKING.get():
        yield
        return
    shown_here = _SHOWN.get()
    started = time.perf_counter()
    token = _WORKING.set(True)
    try:
        with _after(HEARTBEAT_S if after is None else after, f"{desc} ...", shown_here) as said:
            yield
    finally:
        _WORKING.reset(token)
    if said.is_set():
        _tell(f"{desc}: done in {clock(time.perf_counter() - started)}", shown_here)


@contextlib.contextmanager
def _after(seconds: float, line: str, shown_here: bool = True) -> Iterator[threading.Event]:
    """``line`` told after ``seconds`` unless the block is over first (a timer thread: the block
    itself may be one long call); the event says whether it was told."""
    said = threading.Event()

    def tell() -> None:
        _tell(line, shown_here)
        said.set()

    if seconds <= 0:
        tell()
        yield said
        return
    timer = threading.Timer(seconds, tell)
    timer.daemon = True
    timer.start()
    try:
        yield said
    finally:
        timer.cancel()
        timer.join()  # told already, or never: no line after the block's end


def _tell(line: str, shown_here: bool) -> None:
    if shown_here:
        say(line)
    else:
        log.info(line)


def say(line: str) -> None:
    """One progress line on stderr (only called where progress was asked for)."""
    print(line, file=sys.stderr, flush=True)


def about(seconds: float) -> str:
    """A duration as a person says it ahead: ``about 40 s``, ``about 3 min``, ``about 2 h 10 min``."""
    if seconds < 59.5:
        return f"about {max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min" if minutes else f"about {hours} h"


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
