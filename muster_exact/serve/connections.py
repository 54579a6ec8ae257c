"""The connections of ``muster http``: how long each may wait on its client, how many may be open,
and what is logged when one is refused.

uvicorn bounds only the wait between two requests of a kept-alive connection
(``timeout_keep_alive``): a client that opens a connection and sends nothing, half a request head,
or half a body holds its connection (and a file descriptor) for ever, and a few hundred of them
starve the server. :func:`protocol` is uvicorn's HTTP/1.1 protocol with three bounds:

- the request head must arrive within ``header_timeout`` seconds of the connection (or of the
  first byte after a kept-alive wait), and the body within ``body_timeout`` seconds of the head;
  past either the connection gets a 408 and is closed. A request being answered has no deadline.
- at most ``max_connections`` are open (:mod:`muster_exact.serve.budget` derives the bound from
  ``ulimit -n``). A new connection over the bound closes the one that has waited longest on its
  client (a partial head or body, or idle between requests); when every other connection has a
  request being answered, the new one gets a 503 and is closed. Either way its descriptor is
  released at once: uvicorn's ``limit_concurrency`` answers 503 only once a request head has
  arrived, so a connection that sends nothing would keep its place.
- what is refused is logged by :class:`Refusals`: one line per kind per ``LOG_INTERVAL``, with the
  count since the last line, never a line per connection. :func:`collapsed_logs` does the same for
  asyncio's "socket.accept() out of system resource" (Python 3.11 logs it with a traceback for
  every connection waiting in the backlog) and uvicorn's "Invalid HTTP request received.".
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from muster_exact.serve.budget import Limits

log = logging.getLogger(__name__)

LOG_INTERVAL = 60.0  # seconds between two log lines of one kind of refusal


class Refusals:
    """One log line per kind of refusal per ``interval`` seconds, with how many there were since
    the last line of that kind (the count of a quiet spell rides on the next line). Thread-safe."""

    def __init__(self, interval: float = LOG_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._seen: dict[str, tuple[float, int]] = {}  # kind: (when last logged, refusals since)
        self._lock = threading.Lock()

    def note(self, kind: str, what: str) -> None:
        now = self.clock()
        with self._lock:
            logged, count = self._seen.get(kind, (-math.inf, 0))
            count += 1
            if now - logged < self.interval:
                self._seen[kind] = (logged, count)
                return
            self._seen[kind] = (now, 0)
        if logged == -math.inf:
            log.warning(
                "%s (the next such line comes %g s later at the soonest, with a count)", what, self.interval
            )
        else:
            log.warning("%s: %s since the last such line", what, f"{count:,}")


class _Collapse(logging.Filter):
    """Other libraries' per-connection log records, counted by :class:`Refusals` instead."""

    KINDS: ClassVar[dict[str, tuple[str, str]]] = {
        "socket.accept() out of system resource": (
            "accept",
            "could not accept connections: the process is out of file descriptors (ulimit -n); "
            "retrying each second",
        ),
        "Invalid HTTP request received.": ("invalid", "answered 400 to requests that are not HTTP/1.1"),
    }

    def __init__(self, refusals: Refusals) -> None:
        super().__init__()
        self.refusals = refusals

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        for start, (kind, what) in self.KINDS.items():
            if message.startswith(start):
                self.refusals.note(kind, what)
                return False
        return True


@contextmanager
def collapsed_logs(refusals: Refusals) -> Iterator[None]:
    """While serving: asyncio's and uvicorn's per-connection records become :class:`Refusals` lines."""
    collapse = _Collapse(refusals)
    loggers = [logging.getLogger(name) for name in ("asyncio", "uvicorn.error")]
    for logger in loggers:
        logger.addFilter(collapse)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(collapse)


def protocol(limits: Limits, refusals: Refusals) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with these bounds (``limits.max_connections`` set)."""
    if limits.max_connections is None:
        raise ValueError("protocol() needs the connection bound; derive it first (serve.budget)")
    return type("BoundedH11", (_BoundedH11,), {"limits": limits, "refusals": refusals})


class _BoundedH11(H11Protocol):
    limits: ClassVar[Limits]
    refusals: ClassVar[Refusals]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase = ""  # what the connection waits for from its client (see _waiting)
        self._since = 0.0  # when it began to
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        cap = self.limits.max_connections
        assert cap is not None
        if sum(1 for c in self.connections if not c.transport.is_closing()) > cap and not self._make_room():
            self.refusals.note(
                "busy",
                f"refused connections: {cap:,} are open, each with a request being answered "
                "(--max-connections)",
            )
            self._end(503, f"the server has {cap:,} connections open; retry shortly", retry=True)
            return
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting(self) -> str:
        """``head`` or ``body`` (a request arriving), ``idle`` (between two requests: uvicorn's
        keep-alive timer bounds it), or empty (a request is being answered, or closing)."""
        if self.transport is None or self.transport.is_closing():
            return ""
        state = self.conn.their_state
        if state is h11.IDLE:
            return "idle" if self.timeout_keep_alive_task is not None else "head"
        return "body" if state is h11.SEND_BODY else ""

    def _follow(self) -> None:
        """Arm the deadline of what the connection now waits for (a deadline is not moved by bytes
        that arrive in the same phase: a client sending one byte a second still runs out)."""
        phase = self._waiting()
        if phase == self._phase:
            return
        self._disarm()
        self._phase, self._since = phase, self.loop.time()
        timeout = {"head": self.limits.header_timeout, "body": self.limits.body_timeout}.get(phase)
        if timeout is not None:
            self._deadline = self.loop.call_later(timeout, self._expired, phase, timeout)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, phase: str, timeout: float) -> None:
        self._deadline = None
        flag = "--header-timeout" if phase == "head" else "--body-timeout"
        self.refusals.note(
            f"{phase}-timeout",
            f"closed connections whose request {phase} did not arrive within {timeout:g} s ({flag})",
        )
        self._end(408, f"the request {phase} did not arrive within {timeout:g} s")

    def _make_room(self) -> bool:
        """Close the connection that has waited longest on its client; False when none waits."""
        waiting = [
            c for c in self.connections if c is not self and isinstance(c, _BoundedH11) and c._waiting()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._since)
        self.refusals.note(
            "evicted",
            f"closed the connections that had waited longest on their clients, to make room for new "
            f"ones ({self.limits.max_connections:,} open, --max-connections)",
        )
        if oldest._phase == "idle":
            oldest.transport.close()
        else:
            oldest._end(503, "the server needed this connection for another; retry", retry=True)
        return True

    def _end(self, status: int, detail: str, *, retry: bool = False) -> None:
        """Answer ``status`` (unless an answer has begun) and close. A request waiting for its
        body is told the client went away, so the app sends nothing after this answer."""
        self._disarm()
        cycle = self.cycle
        answering = cycle is not None and cycle.response_started and not cycle.response_complete
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        if not answering and not self.transport.get_write_buffer_size():
            self.transport.write(_response(status, detail, retry))
        self.transport.close()


def _response(status: int, detail: str, retry: bool) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, written outside h11 (which answers
    only a request it has read whole)."""
    body = json.dumps({"detail": detail}).encode()
    head = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(["retry-after: 1"] if retry else []),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body
