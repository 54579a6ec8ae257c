"""``muster mcp`` and ``muster http``: one backend, its models loaded at start-up, served."""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Callable
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING

from muster_exact.store.engines.postgres import is_postgres

if TYPE_CHECKING:
    from muster_exact.serve.backend import Backend

log = logging.getLogger("muster_exact.cli")


def _backend(args: argparse.Namespace, namespaces: int | None = None) -> Backend:
    """The served backend, with ``namespaces`` open at most (None: what the file descriptors
    leave room for, or ``--max-open-namespaces`` when it fits: :mod:`muster_exact.serve.budget`)."""
    from muster_exact.serve.backend import Backend
    from muster_exact.serve.budget import budget

    if namespaces is None:  # a stdio server: no connections share the descriptors
        namespaces = budget(args.max_open_namespaces, serves_connections=False).namespaces
    return Backend(
        args.store,
        namespace=args.namespace,
        preset=args.preset,
        models=args.models,
        max_open=namespaces,
    )


def _load_models(backend: Backend, quiet: bool) -> None:
    """A server's models, loaded before it takes requests and said in one line. From here on a
    request's build or read that has worked for about 2 s says so in the server's log (its
    progress lines, at INFO: shown unless -q; issue 53)."""
    if not quiet:
        # What a server says in its ordinary course (loaded, serving, stopped, progress) is INFO,
        # shown unless -q; WARNING is kept for what needs the operator (no token on a network).
        for name in ("muster_exact.core.progress", log.name):
            logging.getLogger(name).setLevel(logging.INFO)
    names, seconds = backend.load_models()
    log.info("loaded %s in %.2f s, before the first request", names, seconds)


def _cmd_mcp(args: argparse.Namespace) -> int:
    from muster_exact.core.optional import Extra, require

    require("mcp", Extra("mcp"))
    from muster_exact.serve import mcp

    backend = _backend(args)

    def run() -> None:
        _load_models(backend, args.quiet)
        stopped = mcp.serve(backend)  # the event loop took the signals: raised as they would be
        if stopped == signal.SIGTERM:
            raise _Terminated
        if stopped == signal.SIGINT:
            raise KeyboardInterrupt

    return _served(backend, run)


def _cmd_http(args: argparse.Namespace) -> int:
    from muster_exact.core.optional import Extra, require

    require("fastapi", Extra("http"))
    from muster_exact.serve import http
    from muster_exact.serve.budget import Limits, budget
    from muster_exact.serve.guard import check_max_body, token_of

    token = token_of(args.token)
    check_max_body(args.max_body)
    limits = Limits(args.header_timeout, args.body_timeout, args.max_connections)
    sock = http.listen(args.host, args.port)  # a bad or busy port fails here, before the store is opened
    try:
        shares = budget(args.max_open_namespaces, limits.max_connections)  # of the descriptors left now
        limits = replace(limits, max_connections=shares.connections)
        backend = _backend(args, shares.namespaces)
    except BaseException:
        sock.close()
        raise

    def run() -> None:
        try:
            _load_models(backend, args.quiet)
        except BaseException:
            sock.close()
            raise
        # The bound address is a name of this server too (unless it is every address).
        hosts = [*args.allow_host, *([] if args.host in ("0.0.0.0", "::", "") else [args.host])]
        log.info(
            "serving %s on http://%s:%d (%s)",
            backend.store().path if is_postgres(args.store) else args.store,  # a URL's password hidden
            args.host,
            args.port,
            "token required" if token else "no token",
        )
        http.serve(
            backend,
            sock,
            token,
            args.max_body,
            hosts=hosts,
            origins=args.allow_origin,
            declared_records=args.declared_records,
            limits=limits,
        )

    return _served(backend, run)


# --- stopping: SIGTERM closes the store as SIGINT does (docs/decisions/0181-sigterm-closes.md) ---


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt, so that the store is
    closed on the way out. Not an Exception: no ``except Exception`` on the way may swallow it."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough; a second must not cut the close short
    raise _Terminated


def _served(backend: Backend, run: Callable[[], None]) -> int:
    """``run()`` (load the models, serve), then the store closed, however it ends. On SIGTERM
    (systemctl stop, docker stop, kill) as on SIGINT: uvicorn shuts down and raises the signal
    again, which the default handler answered by ending the process before the store was closed
    (exit 143, a pending erase's text left in the -wal). Here SIGTERM raises
    :class:`_Terminated`, the store is closed, and the exit is 0: a stop that was asked for and
    done. SIGINT stays KeyboardInterrupt (the CLI's "interrupted", exit 130)."""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        try:
            run()
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the close is not cut short
            backend.close()
    except _Terminated:
        log.info("stopped by SIGTERM; the store is closed")
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0
