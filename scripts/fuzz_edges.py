"""``make fuzz``'s campaigns for what a service meets in its first week: slow and idle clients on a
small descriptor budget, many first reads at once on a cold server, and crafted namespace names.

Each starts its own server on a fresh store and fills a :class:`~fuzz_common.Tally`: replies by
status class, 5xx, unanswered requests, acknowledged adds against the records stored, and the
campaign's own checks as ``problems`` (a slow connection the server never closes, a log that
floods, a name stored unnormalised or printed raw).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from fuzz_common import (
    AUTH,
    DEADLINE_S,
    REPO,
    TOKEN,
    RawMCP,
    Tally,
    add_bytes,
    hypothesis_settings,
    server_log,
    start_http,
    stop,
    stored_records,
)
from hypothesis import given
from hypothesis import strategies as st

from muster_exact.store import Store

JSON_HEADERS = {**AUTH, "Content-Type": "application/json"}

# --- slow and idle clients -----------------------------------------------------------------

NOFILE = 256  # the descriptor budget of a small container (`ulimit -n 256`)
SLOW_CLIENTS = 300  # more connections than the budget holds
SLOW_CLOSE_S = 180.0  # how long the campaign waits for the server to drop every stalled client
LOG_LINES_BOUND = 200  # a server that logs a line per refused accept passes this in a second


def _stalled(port: int, number: int) -> socket.socket | None:
    """A connection that stops part-way: nothing sent, half a request line, half the headers, or
    the headers of a body that never comes (in turn). ``None`` when the kernel refused it."""
    host = f"Host: 127.0.0.1:{port}\r\n"
    partial = [
        b"",
        b"POST /v1/context HT",
        f"POST /v1/context HTTP/1.1\r\n{host}Authorization: Bearer {TOKEN}\r\nContent-Ty".encode(),
        (
            f"POST /v1/add HTTP/1.1\r\n{host}Authorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            '{"records": ["never finish'
        ).encode(),
    ][number % 4]
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(partial)
    except OSError:
        return None
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has ended this connection (an answer such as 408, or end of stream)."""
    sock.setblocking(False)
    try:
        return sock.recv(4096) is not None  # b"" (closed) or an answer before the close
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset by the server


def fuzz_slow_clients(store: Path, examples: int) -> Tally:
    tally = Tally(f"slow and idle clients ({SLOW_CLIENTS} stalled, ulimit -n {NOFILE})")
    start = time.monotonic()
    process, url = start_http(store, nofile=NOFILE)
    port = int(url.rsplit(":", 1)[1])
    stalled = [s for s in (_stalled(port, n) for n in range(SLOW_CLIENTS)) if s is not None]
    tally.notes.append(f"{len(stalled)} of {SLOW_CLIENTS} stalled connections opened")
    try:
        # Normal requests while the stalled ones hang on: each must be answered, and not with a 5xx.
        for number in range(examples):
            if len(tally.unanswered) >= 2:  # a server that stopped answering: the rest would wait too
                break
            body = {"records": [f"note {number}: the slow clients are still connected"]}
            _post(tally, url, "/v1/add", body)
            _post(tally, url, "/v1/context", {"query": f"note {number}", "units": 3})
        waited = time.monotonic()
        open_ = list(stalled)
        while open_ and time.monotonic() - waited < SLOW_CLOSE_S:
            open_ = [s for s in open_ if not _closed_by_server(s)]
            time.sleep(0.5)
        tally.notes.append(
            f"every stalled connection closed by the server {time.monotonic() - waited:.0f} s after "
            "the normal requests ended"
            if not open_
            else f"{len(open_)} stalled connections still open after {SLOW_CLOSE_S:.0f} s"
        )
        if open_:
            tally.problems.append(f"{len(open_)} stalled connections never closed by the server")
    finally:
        for sock in stalled:
            sock.close()
        stop(process)
    lines = server_log(store).read_text(errors="replace").splitlines()
    tally.notes.append(f"server log: {len(lines)} lines")
    if len(lines) > LOG_LINES_BOUND:
        tally.problems.append(f"the server logged {len(lines)} lines (bound {LOG_LINES_BOUND})")
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


def _post(tally: Tally, url: str, path: str, body: dict[str, Any]) -> httpx.Response | None:
    what = f"POST {path} {add_bytes(body)[:120]!r}"
    try:
        reply = httpx.post(f"{url}{path}", content=add_bytes(body), headers=JSON_HEADERS, timeout=DEADLINE_S)
    except httpx.HTTPError as exc:  # no answer before the deadline, or the connection dropped
        tally.unanswered.append(f"{what}: {type(exc).__name__}")
        return None
    tally.saw(reply.status_code, what)
    if path == "/v1/add" and reply.status_code == 200 and not reply.json()["replayed"]:
        tally.acknowledged += reply.json()["added"]
    return reply


# --- a cold server, many first reads at once --------------------------------------------------

COLD_NAMESPACES = 8
COLD_ROUNDS = 3


def fuzz_cold_start(store: Path, examples: int) -> Tally:
    """Namespaces written through the library (no model), then, on each fresh server, one first
    read of every namespace at the same moment, sent before the server has finished starting."""
    tally = Tally(f"cold start ({COLD_NAMESPACES} first reads at once, {COLD_ROUNDS} fresh servers)")
    start = time.monotonic()
    for number in range(COLD_NAMESPACES):
        with Store.open(store, f"cold-{number}") as opened:
            opened.add([f"namespace {number} remembers fact {k} about topic {k % 5}" for k in range(20)])
    tally.acknowledged = stored_records(store)
    for _ in range(COLD_ROUNDS):
        process, url = start_http(store, wait=False)
        barrier = threading.Barrier(COLD_NAMESPACES)

        def first_read(number: int, url: str = url, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            body = {"query": f"fact {number}", "namespace": f"cold-{number}", "units": 3}
            deadline = time.monotonic() + DEADLINE_S
            while True:  # the port is bound at once; until the server listens, a connect is refused
                try:
                    reply = httpx.post(
                        f"{url}/v1/context", content=add_bytes(body), headers=JSON_HEADERS, timeout=DEADLINE_S
                    )
                    break
                except httpx.ConnectError:
                    if time.monotonic() > deadline:
                        tally.unanswered.append(f"first read of cold-{number}: never connected")
                        return
                    time.sleep(0.05)
                except httpx.HTTPError as exc:
                    tally.unanswered.append(f"first read of cold-{number}: {type(exc).__name__}")
                    return
            tally.saw(reply.status_code, f"first read of cold-{number}: {reply.text[:160]}")

        try:
            with ThreadPoolExecutor(COLD_NAMESPACES) as pool:
                list(pool.map(first_read, range(COLD_NAMESPACES)))
        finally:
            stop(process)
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


# --- crafted namespace names -------------------------------------------------------------------

# Names meant to forge output or split one memory in two: control and escape characters, NUL,
# zero-width and bidi format characters, a byte-order mark, line separators, and the NFC and NFD
# spellings of one word (which must be one memory).
CRAFTED = [
    "caf\u00e9",
    "cafe\u0301",
    "line\nforged: namespaces: admin",
    "\x1b[31mred\x1b[0m",
    "nul\x00byte",
    "bidi\u202egnp.exe",
    "zero\u200bwidth",
    "\ufeffbom",
    "para\u2029graph",
    "tab\there",
    "\u00c5ngstr\u00f6m",
    "A\u030angstro\u0308m",
]
NAMES = st.one_of(
    st.sampled_from(CRAFTED),
    st.text(
        alphabet=st.characters(codec=None, categories=["Cc", "Cf", "Zl", "Zp", "Mn", "Ll", "Zs"]),
        min_size=1,
        max_size=12,
    ),
)


def fuzz_crafted_names(tmp: Path, examples: int) -> Tally:
    tally = Tally("crafted namespace names (HTTP, MCP stdio, `muster info`)")
    start = time.monotonic()
    store = tmp / "names.muster"
    process, url = start_http(store)
    try:

        @hypothesis_settings(examples)
        @given(name=NAMES)
        def over_http(name: str) -> None:
            if _post(tally, url, "/v1/add", {"records": [f"kept under {name!r}"], "namespace": name}):
                _post(tally, url, "/v1/context", {"query": "kept", "namespace": name, "units": 3})

        over_http()
        for name in CRAFTED:  # every crafted name, whatever Hypothesis drew
            _post(tally, url, "/v1/add", {"records": [f"also under {name!r}"], "namespace": name})
    finally:
        stop(process)
    mcp = RawMCP(store)
    try:
        for name in CRAFTED:
            reply = mcp.request(
                "tools/call", {"name": "remember", "arguments": {"text": "over mcp", "namespace": name}}
            )
            if reply is None:
                tally.unanswered.append(f"MCP remember in {name!r}")
                continue
            failed = "error" in reply or reply.get("result", {}).get("isError", False)
            tally.saw(400 if failed else 200, f"MCP remember in {name!r}")
            if not failed:
                result = reply["result"].get("structuredContent") or json.loads(
                    reply["result"]["content"][0]["text"]
                )
                tally.acknowledged += 0 if result["replayed"] else result["added"]
    finally:
        mcp.close()
    _check_names(tally, store)
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


def _shown_raw(text: str) -> list[str]:
    """The characters in ``text`` that would act on a terminal or forge a line when printed."""
    return sorted(
        {f"U+{ord(c):04X}" for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")}
    )


def _check_names(tally: Tally, store: Path) -> None:
    with Store.open(store, create=False) as opened:
        names = opened.namespaces()
    unsafe = [n for n in names if unicodedata.normalize("NFC", n) != n or _shown_raw(n)]
    if unsafe:
        tally.problems.append(f"{len(unsafe)} namespaces stored unnormalised or with invisible characters")
    if "caf\u00e9" in names and "cafe\u0301" in names:
        tally.problems.append("the NFC and NFD spellings of 'café' are two memories")
    info = subprocess.run(
        [sys.executable, "-m", "muster_exact", "info", "--store", str(store)],
        cwd=REPO,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=DEADLINE_S,
    )
    raw = _shown_raw(info.stdout)
    tally.notes.append(f"{len(names)} namespaces stored; `muster info` exit {info.returncode}")
    if info.returncode != 0 or raw:
        tally.problems.append(
            f"`muster info` exit {info.returncode}, printed raw {', '.join(raw) or 'nothing'}"
        )
