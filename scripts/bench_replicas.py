"""``make bench``'s replica table (issue 33): 1, 2 and 4 ``muster http`` replicas on one PostgreSQL
database, under one bounded mixed load of adds and contexts from several clients on loopback.

Each row starts a fresh database in a throw-away cluster (``tests/postgres.py``'s
``started_cluster``), adds LoCoMo conv-26's turns and reads once through the library (so the
vectors and the derive result are in the database and every replica starts warm), starts the
replicas, and sends the same requests: alternately one add (its own request id) and one context,
each to a replica drawn at random (a load balancer). Counted: requests/s, p50 and
p95 latency, 5xx, and records lost (acknowledged adds the database does not hold at the end).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from muster_exact.store import Store  # noqa: E402
from tests.postgres import started_cluster  # noqa: E402

REPLICAS = (1, 2, 4)


def free_port() -> int:
    """A free TCP port of 127.0.0.1 (the servers of ``bench_serve.py`` take theirs here too)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _replica(url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "muster_exact", "http", "--store", url, "--port", str(port)],
        cwd=REPO,
        env={**os.environ, "MUSTER_MODELS": "cpu-small"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"a replica did not start on {port}")


def _load(bases: list[str], questions: list[str], requests: int, clients: int) -> dict[str, Any]:
    """``requests`` requests, alternately an add and a context, from ``clients`` threads, each to
    a replica drawn for it (seeded by its number: the same draw every run). Not ``i mod n``: with
    two replicas that would send every add to one and every read to the other."""
    latencies: list[float] = []
    statuses: list[int] = []
    acknowledged: list[str] = []

    def one(i: int, client: httpx.Client) -> None:
        base = bases[random.Random(i).randrange(len(bases))]
        if i % 2 == 0:
            text = f"Load note {i}: the parcel for flat {i % 41} went to locker {i % 97}."
            path, body = (
                "/v1/add",
                {"records": [{"id": f"load-{i}", "text": text}], "request_id": f"load-{i}"},
            )
        else:
            path, body = "/v1/context", {"query": questions[i % len(questions)]}
        started = time.perf_counter()
        try:
            reply = client.post(f"{base}{path}", json=body)
            status = reply.status_code
        except httpx.HTTPError:
            status = 599  # no answer: counted with the 5xx
        latencies.append(1000 * (time.perf_counter() - started))
        statuses.append(status)
        if path == "/v1/add" and status == 200:
            acknowledged.append(f"load-{i}")

    with httpx.Client(timeout=600) as client, ThreadPoolExecutor(max_workers=clients) as pool:
        started = time.perf_counter()
        list(pool.map(lambda i: one(i, client), range(requests)))
        seconds = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "rps": requests / seconds,
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "5xx": sum(s >= 500 for s in statuses),
        "other": sum(s != 200 and s < 500 for s in statuses),
        "acknowledged": acknowledged,
    }


def replica_rows(turns: list[dict[str, str]], questions: list[str], requests: int, clients: int) -> list[str]:
    """The replica table's markdown lines, measured now."""
    lines = [
        "## Replicas on one PostgreSQL database",
        "",
        f"A throw-away PostgreSQL cluster on this machine (durability off: fsync and synchronous "
        f"commit); per row a fresh database with conv-26's {len(turns)} turns added and read once, "
        f"then {requests} requests from {clients} clients, alternately an add (its own request id) "
        "and a context, each sent to a replica drawn at random (seeded). Records lost: acknowledged adds the "
        "database does not hold at the end.",
        "",
        "| replicas | requests | requests/s | p50 ms | p95 ms | 5xx | other non-200 | adds acknowledged "
        "| records lost |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    with started_cluster() as cluster:
        for count in REPLICAS:
            name = cluster.create_database()
            url = cluster.url(name, cluster.role, cluster.role_password)
            with Store.open(url, models="cpu-small") as store:
                store.add(turns)
                store.context(questions[0])  # vectors and the derive result, kept in the database
                head_ms = _head_check_ms(store)
            replicas = [_replica(url) for _ in range(count)]
            try:
                result = _load([base for _, base in replicas], questions, requests, clients)
            finally:
                for process, _ in replicas:
                    process.terminate()
                    process.wait(timeout=30)
            with Store.open(url, models="cpu-small") as store:
                held = {line["record"]["id"] for line in store.export()}
            cluster.drop_database(name)
            lost = sum(1 for record_id in result["acknowledged"] if record_id not in held)
            lines.append(
                f"| {count} | {requests} | {result['rps']:.1f} | {result['p50']:.1f} | {result['p95']:.1f} "
                f"| {result['5xx']} | {result['other']} | {len(result['acknowledged'])} | {lost} |"
            )
    lines += [
        "",
        f"The head check a replica makes before each read (`Store.head()`, one indexed row over "
        f"loopback): median {head_ms:.2f} ms over {HEAD_CHECKS} calls.",
    ]
    return lines


HEAD_CHECKS = 500


def _head_check_ms(store: Store) -> float:
    timings = []
    for _ in range(HEAD_CHECKS):
        started = time.perf_counter()
        store.head()
        timings.append(1000 * (time.perf_counter() - started))
    return statistics.median(timings)
