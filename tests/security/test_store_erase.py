"""``delete`` erases the text from every file beside the store, or says the erase is pending.

A second connection holding a read transaction keeps SQLite from truncating
the write-ahead log (and from copying the zeroed pages into the main file), so
the deleted text would stay on disk. Real SQLite files, a real reader in
another process, the real CLI for ``info``; every file beside the store is
read byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from muster_exact.core.errors import ErasePending, StoreError
from muster_exact.store import Store
from tests.conftest import run_muster

MODELS = "cpu-small"  # delete recomputes the live unit keys: the embedder's tokenizer, no model
CANARY = "CANARY-7f3e-OKAPI-55190 the locker code"


# Read in another process: closing any file descriptor of the store's files in this process would
# drop every POSIX lock this process holds on them (SQLite's included), and with them the condition.
_GREP = """
import sys
from pathlib import Path
path, needle = Path(sys.argv[1]), sys.argv[2].encode()
for p in sorted(path.parent.iterdir()):
    if p.name.startswith(path.name) and needle in p.read_bytes():
        print(p.name)
"""

# Another process in the middle of a read: it holds its transaction until told to let go.
_READER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN")
print(db.execute("SELECT COUNT(*) FROM records").fetchone()[0], flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print("done", flush=True)
sys.stdin.readline()
"""


def traces(path: Path) -> list[str]:
    """Every file beside the store (main, -wal, -shm, -journal) that still holds the canary."""
    found = subprocess.run(
        [sys.executable, "-c", _GREP, str(path), CANARY], capture_output=True, text=True, check=True
    )
    return found.stdout.split()


class Reader:
    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _READER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        assert self.stdout.readline().strip() == "13"

    def let_go(self) -> None:
        self.stdin.write("\n")
        self.stdin.flush()
        assert self.stdout.readline().strip() == "done"

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture
def reader_holding(tmp_path: Path) -> Iterator[tuple[Path, Reader]]:
    """A store with the canary, and another process in the middle of a read transaction."""
    path = tmp_path / "erase.muster"
    with Store.open(path, models=MODELS) as store:
        store.add([f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(12)])
        store.add({"id": "secret", "text": CANARY})
    reader = Reader(path)
    yield path, reader
    reader.close()


def test_delete_under_a_reader_says_the_erase_is_pending_and_the_next_write_finishes_it(
    reader_holding: tuple[Path, Reader],
) -> None:
    path, reader = reader_holding
    with Store.open(path, models=MODELS) as store:
        with pytest.raises(ErasePending, match="still on disk") as raised:
            store.delete(["secret"])
        assert isinstance(raised.value, StoreError)
        assert raised.value.result.deleted == ("secret",)  # the records are gone for every reader
        assert all(r["id"] != "secret" for r in store.records())
        assert traces(path), "the reader should keep the text on disk (the condition under test)"
        assert store.pending_erasures() == 1
        # `info` (a fresh process, its own open) reports it while the reader still holds on.
        info = run_muster("info", "--store", str(path), "--json", env={"MUSTER_MODELS": MODELS})
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["pending_erasures"] == 1
        reader.let_go()
        store.add("A later note: the window in the hall sticks.")  # the next write retries the erase
        assert store.pending_erasures() == 0
        assert traces(path) == []
    assert traces(path) == []


def test_a_pending_erase_finishes_once_the_reader_ends_with_no_write_after_it(
    reader_holding: tuple[Path, Reader],
) -> None:
    """An open store (a server's) retries a pending erase on its own: once the reader lets go,
    the text leaves every file, the write-ahead log included, with no write or open after it."""
    path, reader = reader_holding
    with Store.open(path, models=MODELS) as store:
        with pytest.raises(ErasePending):
            store.delete(["secret"])
        assert traces(path), "the reader should keep the text on disk (the condition under test)"
        reader.let_go()  # its connection stays open; only its read ends
        deadline = time.monotonic() + 60
        while traces(path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert traces(path) == [], "the erase waited for a write that never came"
        assert store.pending_erasures() == 0


def test_the_next_open_retries_a_pending_erase(reader_holding: tuple[Path, Reader]) -> None:
    path, reader = reader_holding
    with Store.open(path, models=MODELS) as store, pytest.raises(ErasePending):
        store.delete(["secret"])
    assert traces(path)
    reader.let_go()
    with Store.open(path, models=MODELS) as store:
        assert store.pending_erasures() == 0
        assert traces(path) == []
    info = run_muster("info", "--store", str(path))
    assert info.returncode == 0 and "pending" not in info.stdout, info.stdout + info.stderr


def test_a_delete_without_readers_erases_at_once(tmp_path: Path) -> None:
    path = tmp_path / "plain.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(["One note about the bikes.", {"id": "secret", "text": CANARY}])
        assert store.delete(["secret"]).deleted == ("secret",)
        assert store.pending_erasures() == 0
        assert traces(path) == []


def test_a_delete_after_a_read_leaves_no_term_entity_or_count_of_the_text(tmp_path: Path) -> None:
    """A read keeps per-text analyses in the file (BM25 terms, entities, counts): a delete takes
    those of the deleted text too, and the next process finds nothing of it."""
    path = tmp_path / "read.muster"
    with Store.open(path, models=MODELS) as store:
        store.add([f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(12)])
        store.add({"id": "secret", "text": CANARY})
        assert "OKAPI" in store.context("What is the locker code?").text
        # Its analyses are in the file: the entity as extracted, the BM25 terms as analysed.
        assert traces(path) and _traces_of(path, "okapi")
        store.delete(["secret"])
    assert traces(path) == [] and _traces_of(path, "okapi") == [] and _traces_of(path, "55190") == []


def _traces_of(path: Path, needle: str) -> list[str]:
    found = subprocess.run(
        [sys.executable, "-c", _GREP, str(path), needle], capture_output=True, text=True, check=True
    )
    return found.stdout.split()


def test_a_delete_on_a_numbered_log_leaves_no_slot_name_in_the_saved_cut(tmp_path: Path) -> None:
    """On a numbered log the saved derive result names each line's slot (words of the line): a
    delete drops it with the records, after a read has saved it and after a growth too."""
    path = tmp_path / "log.muster"
    with Store.open(path, models=MODELS) as store:
        store.add([f"{i}. The shelf of plant {i} is in the greenhouse." for i in range(1, 30)])
        store.context("Where is plant 3?")  # built and saved
        store.add({"id": "secret", "text": "30. The locker of Quillborne Vantrask is locker 55190."})
        assert "Quillborne" in store.context("Which locker is Quillborne's?").text  # grown and saved
        assert _traces_of(path, "vantrask")  # the slot name (lowered) is in the saved cut
        store.delete(["secret"])  # and no read after it: the delete alone must take the name
    assert _traces_of(path, "vantrask") == [] and _traces_of(path, "quillborne") == []
    assert _traces_of(path, "Quillborne") == []


def test_a_reader_closing_after_another_connection_deleted_does_not_save_the_deleted_words(
    tmp_path: Path,
) -> None:
    """A memory grown in one connection is saved on close; had another connection deleted a
    record since, saving it would write the record's slot name back. It is not saved."""
    path = tmp_path / "two.muster"
    lines = [f"{i}. The shelf of plant {i} is in the greenhouse." for i in range(1, 30)]
    with Store.open(path, models=MODELS) as writer:
        writer.add(lines)
    reader = Store.open(path, models=MODELS)
    reader.context("Where is plant 3?")
    with Store.open(path, models=MODELS) as writer:
        writer.add({"id": "secret", "text": "30. The locker of Quillborne Vantrask is locker 55190."})
    assert "Quillborne" in reader.context("Which locker is Quillborne's?").text  # grown, unsaved
    with Store.open(path, models=MODELS) as writer:
        writer.delete(["secret"])
    reader.close()  # saves the grown memory only if its records are still the store's
    assert _traces_of(path, "vantrask") == [] and _traces_of(path, "Quillborne") == []


# --- the same promise over the CLI, HTTP and MCP -------------------------------------------------


def _store_with_the_canary(path: Path) -> None:
    with Store.open(path, models=MODELS) as store:
        store.add([f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(12)])
        store.add({"id": "secret", "text": CANARY}, request_id="the-secret")
        assert "OKAPI" in store.context("What is the locker code?").text  # its analyses are cached too
    assert traces(path)


def test_muster_forget_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "cli.muster"
    _store_with_the_canary(path)
    env = {"MUSTER_MODELS": MODELS}
    done = run_muster("forget", "--store", str(path), "--request-id", "the-secret", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["deleted"] == ["secret"] and not json.loads(done.stdout)["erase_pending"]
    assert traces(path) == [] and _traces_of(path, "okapi") == []


def test_forget_over_http_leaves_no_trace_while_the_server_runs(tmp_path: Path) -> None:
    httpx = pytest.importorskip("httpx")
    from tests.serve.test_http import Server

    path = tmp_path / "http.muster"
    _store_with_the_canary(path)
    server = Server(path, "--token", "t0ken")
    try:
        auth = {"Authorization": "Bearer t0ken"}
        url = f"{server.url}/v1/delete"
        assert httpx.post(url, json={"ids": ["secret"]}, timeout=60).status_code == 401  # a write: token
        reply = httpx.post(url, json={"ids": ["secret"]}, headers=auth, timeout=120)
        assert reply.status_code == 200, reply.text
        assert reply.json()["deleted"] == ["secret"] and reply.json()["erase_pending"] is False
        assert traces(path) == [] and _traces_of(path, "okapi") == []  # the server's connection is open
    finally:
        server.stop()
    assert traces(path) == []


def test_forget_over_http_under_a_reader_is_202_and_the_next_write_erases(
    reader_holding: tuple[Path, Reader],
) -> None:
    httpx = pytest.importorskip("httpx")
    from tests.serve.test_http import Server

    path, reader = reader_holding
    server = Server(path)
    try:
        reply = httpx.post(f"{server.url}/v1/delete", json={"ids": ["secret"]}, timeout=120)
        assert reply.status_code == 202, reply.text
        assert reply.json()["deleted"] == ["secret"] and reply.json()["erase_pending"] is True
        assert traces(path), "the reader should keep the text on disk (the condition under test)"
        reader.let_go()
        httpx.post(f"{server.url}/v1/add", json={"records": ["A later note."]}, timeout=60).raise_for_status()
        assert traces(path) == []
    finally:
        server.stop()


def test_muster_forget_under_a_reader_exits_3_and_says_so(reader_holding: tuple[Path, Reader]) -> None:
    path, reader = reader_holding
    done = run_muster("forget", "--store", str(path), "--id", "secret", env={"MUSTER_MODELS": MODELS})
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("1 records deleted") and "erase pending" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    reader.let_go()
    with Store.open(path, models=MODELS):  # the next open erases
        pass
    assert traces(path) == []


def test_forget_over_mcp_leaves_no_trace_while_the_server_runs(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.security.test_mcp_stdio import RawClient, tool_call

    path = tmp_path / "mcp.muster"
    _store_with_the_canary(path)
    client = RawClient(path)
    try:
        reply = client.request(json.loads(tool_call(1, "forget", '{"ids":["secret"]}')))
        assert reply["result"]["isError"] is False, reply
        result = reply["result"]["structuredContent"]
        assert result["deleted"] == ["secret"] and result["erase_pending"] is False
        assert traces(path) == [] and _traces_of(path, "okapi") == []
        again = client.request(json.loads(tool_call(2, "forget", '{"ids":["secret"]}')))
        assert again["result"]["isError"] is True and "no record 'secret'" in str(again["result"]), again
    finally:
        client.close()
    assert traces(path) == []


# --- update: the old text goes as a delete's does ----------------------------------------------


def test_an_update_after_a_read_leaves_no_trace_of_the_old_text(tmp_path: Path) -> None:
    """The old text, its analyses (terms, entities, counts) and its vectors' keys are gone from
    every file; the history keeps one line (when, which id), never the text."""
    path = tmp_path / "update.muster"
    with Store.open(path, models=MODELS) as store:
        store.add([f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(12)])
        store.add({"id": "secret", "text": CANARY, "metadata": {"room": "hall"}})
        assert "OKAPI" in store.context("What is the locker code?").text
        assert traces(path) and _traces_of(path, "okapi")
        result = store.update(
            "secret", {"text": "The locker code was changed; ask the desk.", "metadata": {}}
        )
        assert result.changed and store.pending_erasures() == 0
        assert "ask the desk" in store.context("What is the locker code?").text
        history = store._db.execute("SELECT namespace, id, action FROM history").fetchall()
        assert history == [("default", "secret", "updated")]
    assert traces(path) == [] and _traces_of(path, "okapi") == [] and _traces_of(path, "55190") == []
    assert _traces_of(path, '"room"') == []  # the old metadata too


def test_an_update_under_a_reader_is_pending_like_a_delete(reader_holding: tuple[Path, Reader]) -> None:
    path, reader = reader_holding
    with Store.open(path, models=MODELS) as store:
        with pytest.raises(ErasePending, match="old text is still on disk") as raised:
            store.update("secret", "Nothing secret here any more.")
        assert raised.value.result.changed
        assert [r["text"] for r in store.records() if r["id"] == "secret"] == [
            "Nothing secret here any more."
        ]
        assert traces(path) and store.pending_erasures() == 1
        reader.let_go()
        store.add("A later note: the window in the hall sticks.")
        assert traces(path) == [] and store.pending_erasures() == 0


def test_a_delete_takes_the_history_lines_of_its_records(tmp_path: Path) -> None:
    path = tmp_path / "history.muster"
    with Store.open(path, models=MODELS) as store:
        store.add([{"id": "a", "text": "First note."}, {"id": "b", "text": "Second note."}])
        store.update("a", "First note, corrected.")
        store.update("b", "Second note, corrected.")
        store.delete(["a"])
        assert store._db.execute("SELECT id FROM history").fetchall() == [("b",)]
