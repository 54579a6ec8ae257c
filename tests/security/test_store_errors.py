"""SQLite failures reach users as one typed line, never as an ``sqlite3`` traceback.

Real damage to real files: pages overwritten with garbage, a dropped table, a
schema version that is not a number, a page limit the add runs into, and
files and folders without write permission. The read-only cases run the real
CLI with the permission bits enforced: as a normal user they are, and as root
(CI) the command runs without the capabilities that let root ignore them
(``setpriv --bounding-set=-dac_override,-dac_read_search``), which is exactly
what a user without write access sees.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact.core.errors import StoreCorrupt, StoreFull
from muster_exact.store import Store
from tests.conftest import one_line_error, run_muster

NOTES = [f"Note {i}: the blue bike in shed {i} has a flat tyre." for i in range(40)]
NO_OVERRIDE = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


def muster(*args: str, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    prefix: tuple[str, ...] = NO_OVERRIDE if unprivileged and os.geteuid() == 0 else ()
    return run_muster(*args, prefix=prefix, env={"MUSTER_MODELS": "cpu-small"}, timeout=300)


def permission_bits_hold() -> bool:
    """Whether a file without write permission refuses writes to the commands run here."""
    if os.geteuid() != 0:
        return True
    if shutil.which("setpriv") is None:
        return False
    probe = subprocess.run(
        [*NO_OVERRIDE, sys.executable, "-c", "open('/proc/1/environ', 'rb')"], capture_output=True
    )
    return probe.returncode != 0  # without the override root cannot read another user's file either


needs_permissions = pytest.mark.skipif(
    not permission_bits_hold(),
    reason="running as root and root's permission override cannot be dropped here (no setpriv)",
)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.muster"
    with Store.open(path) as store:
        store.add(NOTES)
    return path


# --- damage ---------------------------------------------------------------------------


def test_garbage_pages_are_reported_as_a_damaged_store(store_path: Path) -> None:
    data = bytearray(store_path.read_bytes())
    page = 4096
    assert len(data) > 2 * page
    noise = random.Random(7).randbytes(len(data) - page)
    data[page:] = noise  # every page but the first (the header and the table list)
    store_path.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt, match="damaged"), Store.open(store_path) as store:
        list(store.records())
    one_line_error(muster("info", "--store", str(store_path)), "damaged")
    notes = store_path.with_name("notes.txt")
    notes.write_text("A note for a damaged store.\n")
    one_line_error(muster("add", "--store", str(store_path), str(notes)), "damaged")


def test_a_dropped_table_is_reported_as_a_damaged_store(store_path: Path) -> None:
    db = sqlite3.connect(store_path)
    db.execute("DROP TABLE heads")
    db.commit()
    db.close()
    with pytest.raises(StoreCorrupt, match="heads"):
        Store.open(store_path)
    one_line_error(muster("info", "--store", str(store_path)), "heads")


def test_a_table_dropped_while_open_is_reported_too(store_path: Path) -> None:
    with Store.open(store_path) as store:
        db = sqlite3.connect(store_path)
        db.execute("DROP TABLE records")
        db.commit()
        db.close()
        with pytest.raises(StoreCorrupt, match="records"):
            store.add("one more note")
        with pytest.raises(StoreCorrupt, match="records"):
            list(store.records())


def test_a_schema_version_that_is_not_a_number(store_path: Path) -> None:
    db = sqlite3.connect(store_path)
    db.execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    before = store_path.read_bytes()
    with pytest.raises(StoreCorrupt, match="schema version 'two'"):
        Store.open(store_path)
    one_line_error(muster("info", "--store", str(store_path)), "schema version")
    assert store_path.read_bytes() == before


# --- full -------------------------------------------------------------------------------


def test_a_full_disk_is_one_line_and_writes_nothing(store_path: Path) -> None:
    with Store.open(store_path) as store:
        before = store.head()
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        # The file may not grow: what a full disk does to the next write (SQLITE_FULL).
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreFull, match="full"):
            store.add([f"A long note {i}: " + "words to fill pages " * 400 for i in range(20)])
        assert store.head() == before
        assert [r["text"] for r in store.records()] == NOTES
        store._db.execute("PRAGMA max_page_count = 1073741823")
        assert store.add("after space was freed").head.records == len(NOTES) + 1


# --- read-only ------------------------------------------------------------------------------


@needs_permissions
def test_a_read_only_file_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "ro.muster"
    with Store.open(path) as store:
        store.add(NOTES)
    path.chmod(0o444)
    before = path.read_bytes()
    info = muster("info", "--store", str(path), unprivileged=True)
    assert info.returncode == 0 and f"{len(NOTES)} records" in info.stdout, info.stderr
    # A read needs no write access: the vectors it embeds are not cached, nothing is written.
    answer = muster("query", "--store", str(path), "Which bike has a flat tyre in shed 7?", unprivileged=True)
    assert answer.returncode == 0 and "shed 7 has a flat tyre" in answer.stdout, answer.stderr
    notes = tmp_path / "more.txt"
    notes.write_text("A note that cannot be written.\n")
    one_line_error(muster("add", "--store", str(path), str(notes), unprivileged=True), "read-only")
    assert path.read_bytes() == before
    with Store.open(path) as store:  # written by nothing above
        assert store.head().records == len(NOTES)


@needs_permissions
def test_a_store_in_a_read_only_folder_is_read_only_not_foreign(tmp_path: Path) -> None:
    folder = tmp_path / "shelf"
    folder.mkdir()
    path = folder / "kept.muster"
    with Store.open(path) as store:
        store.add(NOTES)
    folder.chmod(0o555)
    try:
        info = muster("info", "--store", str(path), unprivileged=True)
        assert info.returncode == 0 and f"{len(NOTES)} records" in info.stdout, info.stderr
        notes = tmp_path / "more.txt"
        notes.write_text("A note that cannot be written.\n")
        line = one_line_error(muster("add", "--store", str(path), str(notes), unprivileged=True), "read-only")
        assert "not a MUSTER store" not in line
        new = folder / "new.muster"
        one_line_error(muster("add", "--store", str(new), str(notes), unprivileged=True), "read-only")
        assert sorted(p.name for p in folder.iterdir()) == ["kept.muster"]
    finally:
        folder.chmod(0o755)
