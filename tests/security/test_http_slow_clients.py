"""Slow and idle clients cannot starve `muster http` (issue 32): under `ulimit -n 256`, 300
connections that send nothing, half a request head or half a body are each answered 408 (or 503
when a newer connection needed the place) and closed within the timeouts, a normal request is
answered while they hang on, and the server's log says so in a few lines, never a traceback per
connection (before: they stayed open for ever, normal requests timed out, and the log grew by
megabytes a second of "too many open files" tracebacks)."""

from __future__ import annotations

import resource
import socket
import time
from pathlib import Path

import pytest

from tests.serve.test_http import Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

FD_LIMIT = 256
SLOW = 300
TIMEOUT = 2  # --header-timeout and --body-timeout, short to keep the test quick
STARTS = {
    "nothing": b"",
    "half a head": b"POST /v1/add HTTP/1.1\r\nHost: localhost\r\n",
    "half a body": b"POST /v1/add HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b'Content-Length: 1000\r\n\r\n{"records": ["',
}


def limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def slow_client(port: int, start: bytes) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    client.sendall(start)
    return client


def ended(client: socket.socket) -> bytes:
    """What the server sent before it closed the connection (b"" when it sent nothing)."""
    received = b""
    try:
        while chunk := client.recv(4096):
            received += chunk
    except ConnectionResetError:  # closed with bytes of ours unread: ended all the same
        pass
    finally:
        client.close()
    return received


def test_slow_and_idle_clients_are_cut_off_and_never_starve_the_server(tmp_path: Path) -> None:
    server = Server(
        tmp_path / "agent.muster",
        *("--header-timeout", str(TIMEOUT), "--body-timeout", str(TIMEOUT)),
        preexec_fn=limit_descriptors,
    )
    try:
        kinds = list(STARTS)
        clients = [slow_client(server.port, STARTS[kinds[i % len(kinds)]]) for i in range(SLOW)]
        started = time.monotonic()
        with httpx.Client(timeout=30) as normal:  # while the slow clients hang on
            added = normal.post(f"{server.url}/v1/add", json={"records": ["The red mug is on the shelf."]})
            read = normal.post(f"{server.url}/v1/context", json={"query": "Where is the mug?"})
        answers = [ended(client) for client in clients]
        waited = time.monotonic() - started
        log = server.stderr
        later = httpx.get(f"{server.url}/healthz", timeout=10)
    finally:
        server.stop()
    assert added.status_code == 200 and read.status_code == 200, (added.text, read.text)
    assert "The red mug is on the shelf." in read.json()["context"]
    # Every slow connection was closed by the server, within the timeout (and a generous margin).
    statuses = {answer.split(b"\r\n")[0] for answer in answers}
    assert statuses <= {b"HTTP/1.1 408 Request Timeout", b"HTTP/1.1 503 Service Unavailable", b""}, statuses
    assert sum(answer.startswith(b"HTTP/1.1 408") for answer in answers) >= 10, statuses
    assert waited < 10 * TIMEOUT + 30, waited
    assert later.status_code == 200
    # A few lines, one per kind of refusal: no traceback, no line per connection.
    assert "Traceback" not in log and "Too many open files" not in log, log[-2000:]
    assert len(log.splitlines()) <= 10 and len(log) < 4000, log
