"""Namespace names: one form (NFC), no character that does not show, and printed escaped.

``café`` typed in NFC and in NFD is one memory; a name holding a control character, an invisible
format character (zero-width, bidi controls, BOM), a line or paragraph separator, a surrogate or
an unassigned code point is refused with one error naming the code point, through the library and
the real CLI (the servers: tests/serve/test_one_validation.py). A store made before these rules
may hold such a name: it still opens as it is stored, and the CLI prints it, and any record id,
escaped, so that a crafted name or id cannot forge an output line or drive the terminal
(docs/decisions/0185-namespace-names.md).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import unicodedata
from pathlib import Path

import pytest

from muster_exact.core.errors import InputError
from muster_exact.store import Store
from tests.conftest import one_line_error, run_muster

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
# One character of each refused kind, and the code point the refusal names.
REFUSED = {
    "NUL": ("\x00", "U+0000"),
    "escape": ("\x1b", "U+001B"),
    "newline": ("\n", "U+000A"),
    "delete": ("\x7f", "U+007F"),
    "zero-width space": ("\u200b", "U+200B"),
    "right-to-left override": ("\u202e", "U+202E"),
    "byte order mark": ("\ufeff", "U+FEFF"),
    "language tag": ("\U000e0001", "U+E0001"),
    "line separator": ("\u2028", "U+2028"),
    "paragraph separator": ("\u2029", "U+2029"),
    "surrogate": ("\udcff", "U+DCFF"),
    "unassigned": ("\u0378", "U+0378"),
    "noncharacter": ("\uffff", "U+FFFF"),
}
# What the CLI cannot be given as an argument (a NUL ends a C string).
NOT_IN_ARGV = {"NUL"}
CRAFTED = "ops\n\x1b[31mFORGED LINE\x1b[0m\u202e"


def muster(*args: str) -> subprocess.CompletedProcess[str]:
    return run_muster(*args, env={"MUSTER_MODELS": "cpu-small"}, timeout=120)


def notes(tmp_path: Path, *texts: str) -> Path:
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    return path


def test_nfc_and_nfd_are_one_memory_in_the_library(tmp_path: Path) -> None:
    path = tmp_path / "s.muster"
    with Store.open(path, NFC) as store:
        store.add(["The kettle is on the stove."])
    with Store.open(path, NFD) as store:
        assert store.namespace == NFC
        assert store.head().records == 1, "the NFD name opened another memory"
        store.add(["The mug is in the sink."])
        assert store.namespaces() == [NFC]
    with Store.open(path, NFC) as store:
        assert store.head().records == 2


def test_nfc_and_nfd_are_one_memory_through_the_cli(tmp_path: Path) -> None:
    store = str(tmp_path / "s.muster")
    added = muster("add", "--store", store, "--namespace", NFD, str(notes(tmp_path, "The kettle is on.")))
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(f"1 records added (namespace {NFC}: 1 records"), added.stdout
    again = muster("add", "--store", store, "--namespace", NFC, str(notes(tmp_path, "The mug is here.")))
    assert again.returncode == 0 and f"(namespace {NFC}: 2 records" in again.stdout, again.stdout
    listed = muster("list", "--store", store, "--namespace", NFD, "--json")
    assert [json.loads(line)["namespace"] for line in listed.stdout.splitlines()] == [NFC, NFC]


@pytest.mark.parametrize("kind", list(REFUSED))
def test_each_refused_kind_is_one_error_naming_the_code_point(tmp_path: Path, kind: str) -> None:
    char, code_point = REFUSED[kind]
    path = tmp_path / "s.muster"
    for name in (f"ops{char}", f"{char}ops", char * 3):
        with pytest.raises(InputError) as refused:
            Store.open(path, name)
        message = str(refused.value)
        assert code_point in message and "choose" in message, message
        assert message.isprintable(), message  # the name in the message is escaped too
    assert not path.exists()  # refused before a file is made
    with Store.open(path) as store:  # and on a store that exists
        store.add(["The kettle is on the stove."])
    with pytest.raises(InputError, match=code_point.replace("+", r"\+")):
        Store.open(path, f"ops{char}")
    with Store.open(path) as store:
        assert store.namespaces() == ["default"]
    if kind in NOT_IN_ARGV:
        return
    for command in ("add", "list", "info"):
        extra = [str(notes(tmp_path, "x"))] if command == "add" else []
        result = muster(command, "--store", str(path), "--namespace", f"ops{char}", *extra)
        line = one_line_error(result, code_point)
        assert line.isprintable(), line


def crafted_store(tmp_path: Path) -> Path:
    """A store as one made before these rules may hold it: a namespace whose name carries a newline,
    terminal escapes and a bidi override, and a record id that carries them too (written by the
    library of the time under a plain name, then renamed in the file with sqlite3)."""
    path = tmp_path / "old.muster"
    with Store.open(path, "ops") as store:
        store.add([{"text": "The kettle is on the stove.", "id": "k1"}, "The mug is in the sink."])
    db = sqlite3.connect(path)
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        if "namespace" in columns:
            db.execute(f"UPDATE {table} SET namespace = ? WHERE namespace = 'ops'", (CRAFTED,))
    db.execute("UPDATE meta SET key = ? WHERE key = 'embedder:ops'", (f"embedder:{CRAFTED}",))
    db.commit()
    db.close()
    return path


def assert_clean(text: str, lines: int) -> None:
    """Output that forges nothing: no escape or bidi character, and the lines expected."""
    assert "\x1b" not in text and "\u202e" not in text and "FORGED LINE\n" not in text, text
    assert len(text.splitlines()) == lines, text


def test_info_prints_a_stored_crafted_name_escaped_on_one_line(tmp_path: Path) -> None:
    path = crafted_store(tmp_path)
    info = muster("info", "--store", str(path))
    assert info.returncode == 0, info.stderr
    assert_clean(info.stdout, 2)
    assert f"namespaces: {CRAFTED!a}" in info.stdout.splitlines()[0], info.stdout


def test_a_stored_crafted_name_stays_readable_and_deletable(tmp_path: Path) -> None:
    path = crafted_store(tmp_path)
    with Store.open(path, CRAFTED) as store:  # the name exactly as stored opens it
        assert store.namespace == CRAFTED and store.head().records == 2
    listed = muster("list", "--store", str(path), "--namespace", CRAFTED)
    assert listed.returncode == 0, listed.stderr
    assert_clean(listed.stdout, 2)
    assert_clean(listed.stderr, 1)
    assert listed.stderr.strip() == f"records 1-2 of 2 (namespace {CRAFTED!a})"
    forgot = muster("forget", "--store", str(path), "--namespace", CRAFTED, "--id", "k1")
    assert forgot.returncode == 0, forgot.stderr
    assert_clean(forgot.stdout, 1)
    assert forgot.stdout.startswith(f"1 records deleted (namespace {CRAFTED!a}: 1 records")
    exported = muster("export", "--store", str(path))
    assert [json.loads(line)["namespace"] for line in exported.stdout.splitlines()] == [CRAFTED]
    # The dump goes back into the file that holds the name; a new file refuses the name.
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported.stdout)
    again = muster("import", "--store", str(path), str(dump))
    assert again.returncode == 0 and again.stdout == "imported 0 records (none); 1 already there\n"
    one_line_error(muster("import", "--store", str(tmp_path / "new.muster"), str(dump)), "line 1: namespace")


@pytest.mark.parametrize("record_id", ["k1\n\x1b[2Jforged", "k1\u202efdp.exe", "k1\u2028x"])
def test_record_ids_are_printed_escaped(tmp_path: Path, record_id: str) -> None:
    path = tmp_path / "s.muster"
    with Store.open(path) as store:
        store.add([{"text": "The kettle is on the stove.", "id": record_id}])
    listed = muster("list", "--store", str(path))
    assert listed.returncode == 0, listed.stderr
    assert_clean(listed.stdout, 1)
    assert listed.stdout.startswith(ascii(record_id) + "\t"), listed.stdout
    updated = muster("update", "--store", str(path), record_id, "The kettle is in the cupboard.")
    assert updated.returncode == 0, updated.stderr
    assert_clean(updated.stdout, 1)
    assert updated.stdout.startswith(f"record {record_id!a} updated"), updated.stdout
