"""Several `muster http` replicas on one PostgreSQL database (issue 33): a write acknowledged by one
is in the next read of any other; concurrent adds from several replicas lose nothing and double
nothing (the request id decides); a replica killed with SIGKILL mid-write loses only what it had
not acknowledged. Real servers, a real database (tests/postgres.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from muster_exact.store import Store
from tests.serve.test_http import JSON, Server

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.slow

FACTS = [
    ("Quillborne's locker code is 55190.", "What is the locker code of Quillborne?", "55190"),
    ("The ferry to Ossen leaves at 07:40 on weekdays.", "When does the ferry to Ossen leave?", "07:40"),
    ("Marisol's cat is called Pepperbrook.", "What is the name of Marisol's cat?", "Pepperbrook"),
    ("The attic key hangs behind the kitchen clock.", "Where is the attic key?", "kitchen clock"),
]
FILLER = [f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(30)]


@pytest.fixture
def replicas(postgres_url: str) -> Iterator[list[Server]]:
    """Two replicas of one database, started on a store that already holds some records."""
    with Store.open(postgres_url, models="cpu-small") as store:
        store.add(FILLER)
    running: list[Server] = []
    try:
        for _ in range(2):
            running.append(Server(postgres_url))  # type: ignore[arg-type]  # a URL, not a file
        yield running
    finally:
        for server in running:
            server.stop()


def post(server: Server, path: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, headers=JSON, timeout=120)


def context(server: Server, query: str) -> str:
    reply = post(server, "/v1/context", {"query": query, "units": 5})
    assert reply.status_code == 200, reply.text
    return str(reply.json()["context"])


def test_a_write_on_one_replica_is_in_the_next_read_of_the_other(replicas: list[Server]) -> None:
    for number, (fact, question, answer) in enumerate(FACTS):
        writer, reader = replicas[number % 2], replicas[(number + 1) % 2]
        context(reader, question)  # the reader has built its memory before the write
        added = post(writer, "/v1/add", {"records": [{"id": f"fact-{number}", "text": fact}]})
        assert added.status_code == 200, added.text
        assert answer in context(reader, question), f"replica missed fact {number} written by the other"
    # An update and a forget on one replica are what the other reads next.
    reply = httpx.put(
        f"{replicas[0].url}/v1/records/fact-0",
        json={"record": {"text": "Quillborne's locker code is 77301."}},
        timeout=120,
    )
    assert reply.status_code == 200, reply.text
    shown = context(replicas[1], FACTS[0][1])
    assert "77301" in shown and "55190" not in shown
    forgot = post(replicas[1], "/v1/delete", {"ids": ["fact-1"]})
    assert forgot.status_code in (200, 202), forgot.text
    assert "07:40" not in context(replicas[0], FACTS[1][1])


def test_concurrent_adds_from_two_replicas_lose_nothing_and_double_nothing(
    replicas: list[Server], postgres_url: str
) -> None:
    """Every request id sent to both replicas at once, from several threads: each is applied
    once (one add, the other a replay of it), and every record is stored exactly once."""
    requests = [
        (f"req-{n}", [f"record {n}a about harbour {n}", f"record {n}b about lantern {n}"]) for n in range(24)
    ]
    applied: list[int] = []
    lock = threading.Lock()

    def send(job: tuple[Server, str, list[str]]) -> None:
        server, request_id, texts = job
        reply = post(server, "/v1/add", {"records": texts, "request_id": request_id})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        with lock:
            applied.append(0 if body["replayed"] else body["added"])

    jobs = [(server, rid, texts) for rid, texts in requests for server in replicas]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(send, jobs))
    assert sum(applied) == 2 * len(requests)  # each request applied once, replayed once
    with Store.open(postgres_url, models="cpu-small") as store:
        texts = [line["record"]["text"] for line in store.export()]
    added = [text for _, pair in requests for text in pair]
    assert sorted(t for t in texts if t.startswith("record ")) == sorted(added)  # once each
    assert len(texts) == len(FILLER) + len(added)


def test_a_replica_killed_mid_write_loses_only_what_it_had_not_acknowledged(
    replicas: list[Server], postgres_url: str
) -> None:
    victim, survivor = replicas
    acknowledged: list[str] = []
    stop = threading.Event()

    def write() -> None:
        number = 0
        while not stop.is_set():
            record_id = f"w-{number}"
            try:
                reply = post(
                    victim, "/v1/add", {"records": [{"id": record_id, "text": f"written {number} " * 50}]}
                )
            except httpx.HTTPError:
                return  # the replica is gone: this add was never acknowledged
            if reply.status_code == 200:
                acknowledged.append(record_id)
            number += 1

    writer = threading.Thread(target=write)
    writer.start()
    while len(acknowledged) < 20:
        assert writer.is_alive()
        threading.Event().wait(0.02)
    victim.process.kill()  # SIGKILL, mid-stream
    victim.process.wait()
    stop.set()
    writer.join(timeout=60)
    with Store.open(postgres_url, models="cpu-small") as store:
        stored = {line["record"]["id"]: line["record"]["text"] for line in store.export()}
    written = {i: t for i, t in stored.items() if i.startswith("w-")}
    assert set(acknowledged) <= set(written), "an acknowledged add is missing"
    # At most the one add in flight when the replica died is there unacknowledged, and whole.
    assert len(set(written) - set(acknowledged)) <= 1
    for record_id, text in written.items():
        assert text == f"written {record_id[2:]} " * 50
    # The survivor serves the database as it is, the victim's last writes included.
    last = acknowledged[-1]
    assert f"written {last[2:]}" in context(survivor, f"written {last[2:]}")
