"""What may be a store file, one normalisation of input text, empty records, delete's report.

Real files: device and FIFO paths, SQLite files made by "another program"
with the ``sqlite3`` module, and the real CLI reading files with a BOM or NUL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact import derive
from muster_exact.core.errors import InputError, StoreError
from muster_exact.store import Store
from muster_exact.text.records import from_records, from_text
from tests.conftest import REPO, beside, one_line_error, run_muster, sqlite_file

MODELS = "cpu-small"  # delete recomputes the live unit keys: the embedder's tokenizer, no model


def muster(*args: str) -> subprocess.CompletedProcess[str]:
    return run_muster(*args, env={"MUSTER_MODELS": MODELS}, timeout=60)


# --- the store path -------------------------------------------------------------------------


def test_a_device_is_not_a_store(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("A note.\n")
    assert not Path("/dev/null-journal").exists()
    one_line_error(muster("add", "--store", "/dev/null", str(notes)), "not a regular file")
    with pytest.raises(StoreError, match="not a regular file"):
        Store.open("/dev/null")
    assert not Path("/dev/null-journal").exists()
    assert not Path("/dev/null-wal").exists()


def test_a_fifo_is_not_a_store(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(StoreError, match="not a regular file"):
        Store.open(pipe)
    assert beside(pipe) == ["pipe"]


@pytest.mark.parametrize(
    "statements",
    [
        ("PRAGMA user_version = 3",),  # an app that versions its (still empty) file
        ("PRAGMA application_id = 1179598148",),
    ],
)
def test_another_programs_empty_sqlite_file_is_never_converted(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    path = tmp_path / "app.db"
    before = sqlite_file(path, *statements).read_bytes()
    with pytest.raises(StoreError, match="not a MUSTER store"):
        Store.open(path)
    notes = tmp_path / "notes.txt"
    notes.write_text("A note.\n")
    one_line_error(muster("add", "--store", str(path), str(notes)), "not a MUSTER store")
    assert path.read_bytes() == before
    assert beside(path) == ["app.db", "notes.txt"]  # no -wal, -shm or -journal beside it


def test_a_store_holding_a_foreign_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.muster"
    with Store.open(path) as store:
        store.add("A note.")
    before = sqlite_file(path, "CREATE TABLE invoices (n INTEGER)").read_bytes()
    with pytest.raises(StoreError, match="invoices"):
        Store.open(path)
    assert path.read_bytes() == before


# --- one normalisation for derive and add ---------------------------------------------------------


def test_a_bom_is_stripped_by_derive_and_add_alike(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffHello from the first note.\n\nThe second note.\n".encode())
    plan = json.loads(muster("derive", str(path), "--json").stdout)
    assert plan["stats"]["records"] == 2
    store = tmp_path / "s.muster"
    assert muster("add", "--store", str(store), str(path)).returncode == 0
    with Store.open(store) as opened:
        texts = [r["text"] for r in opened.records()]
    assert texts == ["Hello from the first note.", "The second note."]
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes('\ufeff{"text": "A record."}\n'.encode())
    assert muster("derive", str(jsonl)).returncode == 0
    assert muster("add", "--store", str(store), str(jsonl)).returncode == 0


@pytest.mark.parametrize("name", ["nul.txt", "nul.jsonl"])
def test_a_nul_byte_is_refused_by_derive_and_add_alike(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    body = '{"text": "a\x00b"}\n' if name.endswith("jsonl") else "first\x00note\n"
    path.write_bytes(body.encode())
    store = tmp_path / "s.muster"
    one_line_error(muster("derive", str(path)), "NUL")
    one_line_error(muster("add", "--store", str(store), str(path)), "NUL")
    assert not store.exists()


@pytest.mark.parametrize("text", ["\x00", "\u200b\u200b", " \u200b\x00\ufeff\u2060 \n"])
def test_text_of_only_nul_or_zero_width_characters_is_empty(tmp_path: Path, text: str) -> None:
    with Store.open(tmp_path / "e.muster") as store:
        with pytest.raises(InputError, match="empty text"):
            store.add({"text": text})
        with pytest.raises(InputError, match="empty text"):
            store.add(["a real note", text])
        assert store.head().records == 0
    with pytest.raises(InputError, match="empty text"):
        from_records([{"text": text}])
    with pytest.raises(InputError, match="empty"):
        from_text(text)
    with pytest.raises(InputError, match="empty"):
        derive([text])


# --- delete reports each record once -----------------------------------------------------------------


def test_delete_reports_each_id_once(tmp_path: Path) -> None:
    with Store.open(tmp_path / "d.muster", models=MODELS) as store:
        store.add([{"id": f"k{i}", "text": f"Note {i} about the harbour."} for i in range(1, 4)])
        result = store.delete(["k2", "k2"])
        assert result.deleted == ("k2",)
        assert [r["id"] for r in store.records()] == ["k1", "k3"]
        assert store.head().records == 2


def test_opening_a_second_namespace_keeps_another_process_s_writes(tmp_path: Path) -> None:
    """Opening a store must not touch the file outside SQLite: closing any descriptor of it drops
    this process's POSIX locks, and another process could then reset the log under an open
    connection, losing a write it was told had landed."""
    path = tmp_path / "two.muster"
    first = Store.open(path)
    first.add("first namespace, first record")
    second = Store.open(path, "other")
    second.add("second namespace, first record")
    for n in range(3):
        added = subprocess.run(
            [sys.executable, "-m", "muster_exact", "add", "--store", str(path), "-"],
            input=f"from the command line, record {n}\n",
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert added.returncode == 0, added.stderr
        first.add(f"first namespace, record {n + 2}")
        second.add(f"second namespace, record {n + 2}")
        Store.open(path, f"third-{n}").close()
    first.close()
    second.close()
    with Store.open(path) as reopened:
        texts = [r["text"] for r in reopened.records()]
    assert sum("from the command line" in t for t in texts) == 3, texts
    assert sum("first namespace" in t for t in texts) == 4, texts
