"""``make fuzz``'s campaigns for a service under way: a write during a slow first read, a delete whose
answer was lost (retried, and its text in no file after), and the database down under ``muster
http`` (PostgreSQL stopped and started again; skipped with a note where no cluster can be started).
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from fuzz_common import AUTH, DEADLINE_S, TOKEN, Tally, add_bytes, start_http, stop, stored_records

from muster_exact.core.errors import StoreUnavailable

JSON_HEADERS = {**AUTH, "Content-Type": "application/json"}
CARGO = ("salt", "tea", "wool", "iron")


def _records(count: int, tag: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{tag}{k}",
            "text": f"log {k}: the {CARGO[k % 4]} ship {k} passed the cape at dawn with {k % 7} masts, bound "
            "for the northern harbour before the winter storms closed the strait to every sail",
        }
        for k in range(count)
    ]


def _post(
    tally: Tally, url: str, path: str, body: dict[str, Any], status: int = 200
) -> httpx.Response | None:
    what = f"POST {path} {add_bytes(body)[:120]!r}"
    try:
        reply = httpx.post(f"{url}{path}", content=add_bytes(body), headers=JSON_HEADERS, timeout=DEADLINE_S)
    except httpx.HTTPError as exc:
        tally.unanswered.append(f"{what}: {type(exc).__name__}")
        return None
    tally.saw(reply.status_code, f"{what}: {reply.text[:160]}")
    if reply.status_code != status:
        tally.problems.append(f"{what}: {reply.status_code}, not {status}: {reply.text[:160]}")
    if reply.status_code == 200 and path == "/v1/add" and not reply.json()["replayed"]:
        tally.acknowledged += reply.json()["added"]
    return reply


# --- a write during a slow first read ----------------------------------------------------------

SLOW_RECORDS = 300
ADD_BOUND_S = 1.0  # an add that waits for the read's embedding takes seconds


def fuzz_write_during_read(tmp: Path, examples: int) -> Tally:
    tally = Tally(f"a write during a slow first read ({SLOW_RECORDS} records, HTTP)")
    start = time.monotonic()
    store = tmp / "slow-read.muster"
    process, url = start_http(store)
    try:
        _post(tally, url, "/v1/add", {"records": _records(SLOW_RECORDS, "r")})
        read: dict[str, float] = {}

        def first_read() -> None:
            began = time.monotonic()
            _post(tally, url, "/v1/context", {"query": "which ship carried tea", "units": 5})
            read["began"], read["ended"] = began, time.monotonic()

        reader = threading.Thread(target=first_read)
        reader.start()
        time.sleep(1.0)  # the read is embedding by now
        began = time.monotonic()
        _post(tally, url, "/v1/add", {"records": ["a note written while the first read embeds"]})
        added = time.monotonic()
        reader.join()
        took, read_took = added - began, read["ended"] - read["began"]
        tally.notes.append(f"the add took {took * 1000:.0f} ms during a first read of {read_took:.1f} s")
        if read["ended"] <= began:
            tally.problems.append(f"the first read ended ({read_took:.1f} s) before the add was sent")
        elif added >= read["ended"] or took > ADD_BOUND_S:
            tally.problems.append(
                f"the add took {took:.2f} s (bound {ADD_BOUND_S} s) during a {read_took:.1f} s read; "
                f"it {'waited for' if added >= read['ended'] else 'answered before'} the read's end"
            )
        _post(tally, url, "/v1/context", {"query": "a note written while the first read embeds", "units": 5})
    finally:
        stop(process)
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


# --- a delete whose answer was lost -----------------------------------------------------------

CANARY = "CANARY-55-OKAPI the locker code is 9931"


def _traces(store: Path, needle: bytes) -> list[str]:
    """Every file beside the store (main, -wal, -shm, -journal) that holds ``needle``."""
    return [
        p.name
        for p in sorted(store.parent.iterdir())
        if p.name.startswith(store.name) and needle in p.read_bytes()
    ]


def _abandoned(url: str, body: dict[str, Any]) -> None:
    """Send a request and close the connection before its answer: a client that timed out."""
    host, port = url.removeprefix("http://").split(":")
    payload = add_bytes(body)
    head = (
        f"POST /v1/delete HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head.encode() + payload)


def fuzz_lost_delete(tmp: Path, examples: int) -> Tally:
    tally = Tally("a lost delete answer, retried; deleted text in no file (HTTP)")
    start = time.monotonic()
    store = tmp / "delete.muster"
    process, url = start_http(store)
    records = _records(30, "r") + [{"id": f"secret{k}", "text": f"{CANARY} copy {k}"} for k in range(3)]
    try:
        _post(tally, url, "/v1/add", {"records": records})
        _post(tally, url, "/v1/context", {"query": "the locker code", "units": 5})  # caches hold the text now
        if not _traces(store, CANARY.encode()):
            tally.problems.append(
                "the text to delete is in no file before the delete: the check tests nothing"
            )
        # (the delete, how it is sent, the answers asked for after any abandoned one)
        deletes = [
            ({"ids": ["secret0"], "request_id": "delete-0"}, "abandoned, then retried", 1),
            ({"ids": ["secret1"], "request_id": "delete-1"}, "sent twice", 2),
            ({"ids": ["secret2", "r3"], "request_id": "delete-2"}, "sent three times", 3),
        ]
        _abandoned(url, deletes[0][0])
        time.sleep(1.0)
        for body, how, times in deletes:
            answers = [_post(tally, url, "/v1/delete", body) for _ in range(times)]
            said = [sorted(r.json()["deleted"]) for r in answers if r is not None and r.status_code == 200]
            tally.notes.append(f"delete {how}: answered 200 with deleted {said}")
        tally.acknowledged -= 4  # secret0, secret1, secret2 and r3, each deleted once
        if found := _traces(store, CANARY.encode()):
            tally.problems.append(f"deleted text still in {found} while the server runs")
        _post(tally, url, "/v1/context", {"query": "the locker code", "units": 5})
    finally:
        stop(process)
    if found := _traces(store, CANARY.encode()):
        tally.problems.append(f"deleted text still in {found} after the server stopped")
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


# --- the database down ------------------------------------------------------------------------


def fuzz_database_down(tmp: Path, examples: int) -> Tally:
    tally = Tally("the database down (PostgreSQL stopped under muster http)")
    start = time.monotonic()
    try:
        from tests.postgres import OPTIONS, ClusterUnavailable, _Server, started_cluster
    except ImportError as exc:
        tally.notes.append(f"skipped: tests.postgres cannot be imported ({exc})")
        return tally
    try:
        with started_cluster() as cluster:
            name = cluster.create_database()
            url_of_store = cluster.url(name, cluster.role, cluster.role_password)
            server = _Server(cluster.bindir, cluster.root)
            data = str(cluster.data_dir)
            options = f"-k {cluster.root} -p {cluster.port} -c listen_addresses=127.0.0.1 {OPTIONS}"
            _down_and_up(
                tally,
                tmp,
                url_of_store,
                lambda: server.run("pg_ctl", "-D", data, "-m", "fast", "-w", "stop"),
                lambda: server.run(
                    "pg_ctl", "-D", data, "-l", str(cluster.log), "-w", "-o", options, "start"
                ),
            )
            tally.stored = stored_records(url_of_store)  # type: ignore[arg-type]
    except ClusterUnavailable as exc:
        tally.notes.append(f"skipped: no PostgreSQL cluster can be started here ({exc})")
    tally.seconds = time.monotonic() - start
    return tally


def _get(tally: Tally, url: str, path: str, status: int) -> int | None:
    try:
        reply = httpx.get(f"{url}{path}", headers=AUTH, timeout=DEADLINE_S)
    except httpx.HTTPError as exc:
        tally.unanswered.append(f"GET {path}: {type(exc).__name__}")
        return None
    if reply.status_code != status:
        tally.problems.append(f"GET {path}: {reply.status_code}, not {status}: {reply.text[:160]}")
    return reply.status_code


def _until(tally: Tally, url: str, status: int, bound: float) -> float | None:
    """Seconds until ``/readyz`` answers ``status`` (None: not within ``bound``)."""
    began = time.monotonic()
    while time.monotonic() - began < bound:
        try:
            if httpx.get(f"{url}/readyz", headers=AUTH, timeout=10).status_code == status:
                return time.monotonic() - began
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    tally.problems.append(f"/readyz did not answer {status} within {bound:.0f} s")
    return None


def _down_and_up(tally: Tally, tmp: Path, store: str, halt: Any, resume: Any) -> None:
    from muster_exact.serve.http import status_of

    unavailable = status_of(StoreUnavailable("probe"))
    process, url = start_http(store, log=tmp / "postgres-server.log")
    try:
        _post(tally, url, "/v1/add", {"records": _records(20, "r")})
        _post(tally, url, "/v1/context", {"query": "which ship carried tea", "units": 5})
        _get(tally, url, "/readyz", 200)
        stopped = halt()
        if stopped.returncode != 0:
            tally.problems.append(f"pg_ctl stop failed: {stopped.stderr.strip()[:200]}")
            return
        down = _until(tally, url, unavailable, 30)
        _get(tally, url, "/healthz", 200)
        try:
            reply = httpx.post(
                f"{url}/v1/context",
                content=add_bytes({"query": "tea", "units": 5}),
                headers=JSON_HEADERS,
                timeout=DEADLINE_S,
            )
            tally.requests += 1
            tally.statuses[f"{reply.status_code} while down"] += 1
            if reply.status_code != unavailable or reply.json().get("error") != "StoreUnavailable":
                tally.problems.append(f"a read while down: {reply.status_code} {reply.text[:160]}")
        except httpx.HTTPError as exc:
            tally.unanswered.append(f"a read while the database is down: {type(exc).__name__}")
        started = resume()
        if started.returncode != 0:
            tally.problems.append(f"pg_ctl start failed: {started.stderr.strip()[:200]}")
            return
        up = _until(tally, url, 200, 60)
        _get(tally, url, "/healthz", 200)
        _post(tally, url, "/v1/add", {"records": ["written after the database came back"]})
        _post(tally, url, "/v1/context", {"query": "written after the database came back", "units": 5})
        seconds = [("never" if t is None else f"{t:.1f} s") for t in (down, up)]
        tally.notes.append(
            f"/readyz answered {unavailable} {seconds[0]} after the stop and 200 {seconds[1]} after the "
            f"start; the read while down is counted as a refusal ({unavailable} StoreUnavailable), not a 5xx"
        )
    finally:
        stop(process)
