"""The file descriptors a server may hold, shared out at start-up between open namespaces and
client connections, so that neither runs the process out of them (``ulimit -n``).

An open namespace that has been read holds ``FDS_PER_NAMESPACE`` descriptors (its SQLite
connections, each with the file and its ``-wal``; ``tests/security/test_http_fds.py`` measures
it), a connection one. What the process holds at start (the interpreter, the listening socket)
and ``FDS_SPARE`` for passing needs (SQLite's temporary files, a model file being read) are set
aside first. Of the rest, a server takes connections up to half (at most
``DEFAULT_MAX_CONNECTIONS``) and namespaces from what is left (at most ``DEFAULT_MAX_OPEN``);
a bound given explicitly is kept, and refused in one line when it cannot fit. Under
``ulimit -n 256`` that is about 50 connections and 13 namespaces; from about 1,024 up, 200 and
64 (``tests/serve/test_budget.py``).
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass

from muster_exact.serve.backend import DEFAULT_MAX_OPEN, ServeError, check_max_open

FDS_PER_NAMESPACE = 8  # measured: 4 SQLite connections once read (store, caches), each file and -wal
FDS_SPARE = 32  # SQLite's temporary files, a model file being read, a connection being torn down
FDS_PER_CONNECTION = 2  # its own, and its place in one accept burst (the backlog is the bound)
DEFAULT_MAX_CONNECTIONS = 200
MIN_CONNECTIONS = 8  # fewer, and a few slow clients would take every place
_UNKNOWN_IN_USE = 64  # where the open descriptors cannot be counted (no /proc/self/fd, /dev/fd)
DEFAULT_HEADER_TIMEOUT = 10.0  # seconds for a request head: a program sends it in one packet
DEFAULT_BODY_TIMEOUT = 60.0  # seconds for a body: the largest (--max-body) over a slow link


@dataclass(frozen=True)
class Limits:
    """How long a connection may wait on its client, and how many may be open (None: derived from
    ``ulimit -n`` at start, :func:`muster_exact.serve.budget.budget`)."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    max_connections: int | None = None

    def __post_init__(self) -> None:
        for flag, value in (("--header-timeout", self.header_timeout), ("--body-timeout", self.body_timeout)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ServeError(f"{flag} must be a number of seconds above 0, not {value!r}")
        cap = self.max_connections
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ServeError(f"--max-connections must be at least 1, not {cap!r}")


@dataclass(frozen=True)
class Budget:
    """How many namespaces may be open and connections accepted at once (0: no connections)."""

    namespaces: int
    connections: int


def descriptor_limit() -> int:
    """The descriptors this process may open (``ulimit -n``, the soft limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


def descriptors_in_use() -> int:
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder)) - 1  # listing the folder opened one
        except OSError:
            continue
    return _UNKNOWN_IN_USE


def budget(
    max_open: int | None,
    max_connections: int | None = None,
    *,
    serves_connections: bool = True,
    limit: int | None = None,
    in_use: int | None = None,
) -> Budget:
    """The shares for a server starting now: ``max_open`` and ``max_connections`` as given, or
    derived when None (``serves_connections=False``: a stdio server, no connections). A
    :class:`ServeError` names the flag, what it needs and what fits when a given bound does not."""
    if max_open is not None:
        check_max_open(max_open)
    limit = descriptor_limit() if limit is None else limit
    in_use = descriptors_in_use() if in_use is None else in_use
    free = limit - in_use - FDS_SPARE
    least = 0 if not serves_connections else 1 if max_connections is not None else MIN_CONNECTIONS
    if not serves_connections:
        connections = 0
    elif max_connections is not None:
        connections = max_connections
    elif max_open is not None:
        connections = (free - _held(max_open)) // FDS_PER_CONNECTION
    else:
        connections = max(MIN_CONNECTIONS, free // 2 // FDS_PER_CONNECTION)
    connections = min(connections, DEFAULT_MAX_CONNECTIONS) if max_connections is None else connections
    namespaces = max_open
    if namespaces is None:
        namespaces = min(DEFAULT_MAX_OPEN, (free - connections * FDS_PER_CONNECTION) // FDS_PER_NAMESPACE)
    if (
        namespaces >= 1
        and connections >= least
        and _held(namespaces) + connections * FDS_PER_CONNECTION <= free
    ):
        return Budget(namespaces, connections)
    raise ServeError(_too_many(max_open, max_connections, limit, in_use, least))


def _held(namespaces: int) -> int:
    """The descriptors ``namespaces`` open namespaces hold: the default namespace, and at least
    one other at a time (:class:`~muster_exact.serve.backend.Backend`)."""
    return max(namespaces, 2) * FDS_PER_NAMESPACE


def _too_many(max_open: int | None, max_connections: int | None, limit: int, in_use: int, least: int) -> str:
    """Why the descriptors do not fit, naming the flag given (or ulimit -n when none was)."""
    free = limit - in_use - FDS_SPARE
    where = f"this process may open {limit:,} file descriptors (ulimit -n) and holds {in_use:,} already"
    if max_open is None and max_connections is None:
        return f"too few file descriptors to serve: {where}; raise ulimit -n"
    kept = max(least, max_connections or 0) * FDS_PER_CONNECTION
    if max_open is not None:
        fits = max(0, (free - kept) // FDS_PER_NAMESPACE)
        return (
            f"--max-open-namespaces {max_open:,} needs about {_held(max_open):,} file descriptors, "
            f"and {kept + FDS_SPARE:,} more are kept for connections and passing needs; {where}: "
            f"give at most {fits:,}, or raise ulimit -n"
        )
    assert max_connections is not None
    fits = max(0, (free - _held(1)) // FDS_PER_CONNECTION)
    return (
        f"--max-connections {max_connections:,} needs about {max_connections * FDS_PER_CONNECTION:,} "
        f"file descriptors; {where}: give at most {fits:,}, or raise ulimit -n"
    )
