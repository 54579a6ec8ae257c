"""Availability and retries (issue 55, items 10-13): a write never waits behind a read, a lost
delete answer can be retried, readiness says whether the store can be reached, and a store used
wrongly says so.

Real SQLite files, the real HTTP server in a subprocess, a real (throw-away) PostgreSQL cluster
stopped to be "down". The slow read is made deterministic by a hook in the build (it waits for the
add, up to ``SLOW_READ_S``), so the test checks the order of events, never milliseconds; the
latency itself is measured by ``scripts/bench_add_during_read.py``.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from muster_exact.core.errors import InputError, RequestConflict, StoreError
from muster_exact.store import Store
from tests.serve.test_http import TOKEN, Server

MODELS = "cpu-small"
QUESTION = "Which shelf needs water?"
NOTES = [f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(12)]
LATE = {"id": "late", "text": "Note late: the cactus on shelf 99 needs water once a month."}
# How long the hooked first read waits for the add before it goes on: on the old code the add
# queued behind the read, so it finished only after this wait (and the test saw the wrong order).
SLOW_READ_S = 8.0


# --- 11: a write during a slow first read -------------------------------------------------------


def _slow_first_read(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make the next build wait (after its snapshot, where the embedding would be) until ``added``
    is set or ``SLOW_READ_S`` passed; ``reading`` is set when it starts waiting."""
    import muster_exact.memory as memory_module

    reading, added = threading.Event(), threading.Event()
    real = memory_module.build

    def build(*args: Any, **kwargs: Any) -> Any:
        reading.set()
        added.wait(SLOW_READ_S)
        return real(*args, **kwargs)

    monkeypatch.setattr(memory_module, "build", build)
    return reading, added


def _add_during_read(
    read: Callable[[], Any], add: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """Start ``read`` in a thread, ``add`` once the read is in its build; the order they ended in."""
    reading, added = _slow_first_read(monkeypatch)
    ended: list[str] = []
    failures: list[BaseException] = []

    def reader() -> None:
        try:
            read()
        except BaseException as exc:  # reported below, not lost in the thread
            failures.append(exc)
        ended.append("read")

    thread = threading.Thread(target=reader)
    thread.start()
    assert reading.wait(120), "the read never reached its build"
    add()
    ended.append("add")
    added.set()
    thread.join(120)
    assert not failures, failures
    return ended


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_an_add_during_a_first_read_ends_before_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, engine: str
) -> None:
    """The add does not queue behind the read's build; the read after it sees the add, and the
    memory grown by it equals a fresh build of the records (the incremental == fresh property)."""
    from tests.store.test_store import assert_same_memory, rebuilt

    where = tmp_path / "slow.muster" if engine == "sqlite" else request.getfixturevalue("postgres_url")
    with Store.open(where, models=MODELS) as store:
        store.add(NOTES)
        ended = _add_during_read(lambda: store.context(QUESTION), lambda: store.add(LATE), monkeypatch)
        assert ended == ["add", "read"], "the add waited for the read to end"
        monkeypatch.undo()
        assert "shelf 99" in store.context("Which shelf has the cactus?").text  # the read after sees it
        assert store.rebuilt_because is None  # grown by the add, not built afresh
        assert_same_memory(store.memory(), rebuilt(store), [QUESTION, "Which shelf has the cactus?"])


def test_a_servers_add_during_a_first_read_ends_before_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through the backend every server calls (one open Store per namespace)."""
    from muster_exact.serve.backend import Backend

    backend = Backend(tmp_path / "served.muster", models=MODELS)
    try:
        backend.remember(NOTES)
        ended = _add_during_read(
            lambda: backend.recall(QUESTION), lambda: backend.remember(LATE), monkeypatch
        )
        assert ended == ["add", "read"], "the server's add waited for its read to end"
        monkeypatch.undo()
        assert "shelf 99" in backend.recall("Which shelf has the cactus?")["context"]
    finally:
        backend.close()


# --- 12: a delete whose answer was lost ---------------------------------------------------------


def test_a_retried_delete_with_its_request_id_is_answered_as_done(tmp_path: Path) -> None:
    with Store.open(tmp_path / "retry.muster", models=MODELS) as store:
        store.add([{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}, {"id": "c", "text": "gamma"}])
        first = store.delete(["a", "b"], request_id="del-1")
        again = store.delete(["a", "b"], request_id="del-1")  # the answer was lost: retried
        assert first.deleted == again.deleted == ("a", "b")
        assert again.head == store.head() and store.head().records == 1
        with pytest.raises(InputError, match="no record 'a'"):  # without its request id: refused
            store.delete(["a"])
        with pytest.raises(RequestConflict, match="del-1"):  # the same id for another delete
            store.delete(["c"], request_id="del-1")
        assert [r["id"] for r in store.records()] == ["c"]


def test_a_lost_delete_answer_retried_over_http_is_200(tmp_path: Path) -> None:
    running = Server(tmp_path / "served.muster")
    try:
        added = httpx.post(
            f"{running.url}/v1/add",
            json={"records": [{"id": "k", "text": "kept"}, {"id": "g", "text": "gone"}]},
            timeout=60,
        )
        assert added.status_code == 200, added.text
        body = {"ids": ["g"], "request_id": "forget-g"}
        first = httpx.post(f"{running.url}/v1/delete", json=body, timeout=120)
        retry = httpx.post(f"{running.url}/v1/delete", json=body, timeout=120)
        assert first.status_code == 200 and first.json()["deleted"] == ["g"], first.text
        assert retry.status_code == 200 and retry.json()["deleted"] == ["g"], retry.text
        update = {"record": {"text": "kept, changed"}}
        for _ in range(2):  # an update retried is the same record again: done, nothing changed
            replaced = httpx.put(f"{running.url}/v1/records/k", json=update, timeout=120)
            assert replaced.status_code == 200, replaced.text
        assert replaced.json()["changed"] is False
    finally:
        running.stop()


def test_a_retried_delete_over_mcp_and_the_cli_is_done(tmp_path: Path) -> None:
    import sys

    from muster_exact.serve.backend import Backend

    path = tmp_path / "cli.muster"
    backend = Backend(path, models=MODELS)
    try:
        backend.remember([{"id": "x", "text": "ex"}, {"id": "y", "text": "why"}])
        # The MCP tool ``forget`` is this call with the arguments as sent.
        assert backend.forget(["x"], "forget-x")["deleted"] == ["x"]
        assert backend.forget(["x"], "forget-x")["deleted"] == ["x"]
    finally:
        backend.close()
    command = [
        sys.executable,
        "-m",
        "muster_exact",
        "forget",
        "--store",
        str(path),
        "--id",
        "y",
        "--request-id",
        "forget-y",
    ]
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr


# --- 13: readiness ------------------------------------------------------------------------------


def test_readyz_answers_200_for_a_reachable_store_and_needs_no_token(tmp_path: Path) -> None:
    running = Server(tmp_path / "ready.muster", "--token", TOKEN)
    try:
        ready = httpx.get(f"{running.url}/readyz", timeout=30)
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
    finally:
        running.stop()


def test_readyz_answers_503_while_postgres_is_down(tmp_path: Path) -> None:
    """/healthz stays 200 (the process is alive), /readyz is 503 with the reason, never the URL."""
    from tests.postgres import ClusterUnavailable, _Server, started_cluster

    try:
        cluster_block = started_cluster()
        cluster = cluster_block.__enter__()
    except ClusterUnavailable as exc:
        pytest.skip(str(exc))
    try:
        name = cluster.create_database()
        url = cluster.url(name, cluster.role, cluster.role_password)
        running = Server(None, "--store", url)
        try:
            assert httpx.get(f"{running.url}/readyz", timeout=30).status_code == 200
            _Server(cluster.bindir, cluster.root).run(
                "pg_ctl", "-D", str(cluster.data_dir), "-m", "immediate", "-w", "stop", timeout=60
            )
            down = httpx.get(f"{running.url}/readyz", timeout=60)
            assert down.status_code == 503, down.text
            assert down.json()["status"] == "unavailable" and down.json()["detail"], down.text
            assert cluster.role_password not in down.text and str(cluster.port) not in down.text
            assert httpx.get(f"{running.url}/healthz", timeout=30).status_code == 200  # alive
        finally:
            running.stop()
    finally:
        cluster_block.__exit__(None, None, None)


# --- 10: a store used wrongly says so -----------------------------------------------------------


def test_a_closed_store_says_it_is_closed(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "closed.muster", models=MODELS)
    store.close()
    for use in (store.head, lambda: store.add("late"), lambda: store.context("q")):
        with pytest.raises(StoreError, match="is closed") as raised:
            use()
        assert "Store.open" in str(raised.value) and "Cannot operate" not in str(raised.value)
    store.close()  # closing again is still allowed


def test_open_refuses_a_missing_path_by_name() -> None:
    with pytest.raises(InputError, match="path"):
        Store.open(None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="path"):
        Store.open(3)  # type: ignore[arg-type]


def test_open_refuses_unknown_models_with_the_first_reads_message(tmp_path: Path) -> None:
    path = tmp_path / "models.muster"
    with pytest.raises(InputError, match="unknown model profile 'bogus'; choose one of"):
        Store.open(path, models="bogus")
    assert not path.exists()  # refused before any file was made
