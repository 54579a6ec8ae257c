"""Damaged bytes are never served, a new file is private, a damaged cache costs time only.

Real files, real bytes changed on disk (``open(..., 'r+b')``), the real CLI where a user meets
the problem: a record's text changed under its stored SHA-256, a store's header overwritten, a
shared vector cache made garbage, truncated or zeroed, a cached vector stored as TEXT, a full
disk (every connection capped at its file's size, as ``test_store_full`` does).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from muster_exact.core.errors import StoreCorrupt, StoreError
from muster_exact.store import Store
from tests.conftest import one_line_error, run_muster, sqlite_file
from tests.security.test_store_full import full_disk  # noqa: F401  (a fixture)

MODELS = "cpu-small"
NOTES = [f"Note {i}: the blue bike in shed {i} has a flat tyre." for i in range(8)]
QUESTION = "Which bike has a flat tyre in shed 7?"


def muster(*args: str, env: dict[str, str] | None = None) -> object:
    return run_muster(*args, env={"MUSTER_MODELS": MODELS, **(env or {})}, timeout=300)


def _replace_on_disk(path: Path, old: bytes, new: bytes) -> None:
    """``old`` (found once in the file) overwritten in place with ``new``, as a torn disk would."""
    assert len(old) == len(new)
    data = path.read_bytes()
    assert data.count(old) == 1, data.count(old)
    with open(path, "r+b") as file:
        file.seek(data.index(old))
        file.write(new)


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "notes.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(NOTES)
    return path


def _records_and_head(path: Path) -> tuple[list[tuple[str, str]], list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    db.text_factory = bytes
    records = db.execute("SELECT id, sha256 FROM records ORDER BY seq").fetchall()
    heads = db.execute("SELECT * FROM heads").fetchall()
    db.close()
    return records, heads


# --- 1. a record's text changed on disk ---------------------------------------------------


DAMAGE = {"four bytes": b"shed 7 @@@@a", "not UTF-8": b"shed 7 \xff\xfe\xff\xfea"}


@pytest.mark.parametrize("new", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_changed_record_is_store_corrupt_naming_it(stored: Path, new: bytes) -> None:
    _replace_on_disk(stored, b"shed 7 has a", new)
    with Store.open(stored, models=MODELS) as store:
        for read in (
            lambda: list(store.records()),
            lambda: list(store.export()),
            lambda: store.list_records(),
            lambda: store.context(QUESTION),
            lambda: store.metadata_of(["r8"]),
            lambda: store.verified_head(),
        ):
            with pytest.raises(StoreCorrupt, match=r"record 'r8'.*restore"):
                read()


def test_every_surface_refuses_a_damaged_record_and_then_every_write(stored: Path) -> None:
    _replace_on_disk(stored, b"shed 7 has a", b"shed 7 \xff\xfe\xff\xfea")
    notes = stored.with_name("more.txt")
    notes.write_text("One more note.\n")
    # export finds it and records it in the file; every later command, the add included, refuses.
    for args in (
        ("export", "--store", str(stored)),
        ("query", "--store", str(stored), QUESTION),
        ("info", "--store", str(stored)),
        ("forget", "--store", str(stored), "--id", "r2"),
        ("add", "--store", str(stored), str(notes)),
    ):
        line = one_line_error(muster(*args), "record 'r8'")  # type: ignore[arg-type]
        assert "\\x" not in line and "\ufffd" not in line  # no raw bytes, escaped or replaced
    before = _records_and_head(stored)
    with Store.open(stored, models=MODELS) as store:
        for write in (
            lambda: store.add("one more note"),
            lambda: store.update("r2", "a new text"),
            lambda: store.delete(["r2"]),
        ):
            with pytest.raises(StoreCorrupt, match=r"record 'r8'"):
                write()
    assert _records_and_head(stored) == before  # nothing written


def test_a_write_after_a_read_found_damage_in_the_same_process(stored: Path) -> None:
    with Store.open(stored, models=MODELS) as store:
        _replace_on_disk(stored, b"shed 7 has a", b"shed 7 @@@@a")
        with pytest.raises(StoreCorrupt):
            list(store.records())
        with pytest.raises(StoreCorrupt, match="record 'r8'"):
            store.add("one more note")


def test_a_warm_store_refuses_once_another_process_found_the_damage(stored: Path) -> None:
    """A server's store read before the damage keeps its memory; once another process (here a
    second Store, as the CLI would be) has found the damage and recorded it in the file, the warm
    one refuses reads and writes too, rather than answering from a file every other process
    refuses (`make fuzz`'s damaged-records campaign: `/v1/info` answered 200)."""
    with Store.open(stored, models=MODELS) as warm:
        assert "shed 7 has a flat tyre" in warm.context(QUESTION).text
        _replace_on_disk(stored, b"shed 7 has a", b"shed 7 @@@@a")
        with Store.open(stored, models=MODELS) as cold, pytest.raises(StoreCorrupt):
            cold.context(QUESTION)
        for call in (warm.head, lambda: warm.context(QUESTION), lambda: warm.add("one more note")):
            with pytest.raises(StoreCorrupt, match="record 'r8'"):
                call()


def test_an_intact_store_reads_and_writes_as_before(stored: Path) -> None:
    with Store.open(stored, models=MODELS) as store:
        assert [r["text"] for r in store.records()] == NOTES
        assert store.verified_head() == store.head()
        store.add("Note 8: the red bike is fine.")
        store.update("r1", "Note 0: the blue bike in shed 0 is fixed.")
        store.delete(["r2"])
        assert "shed 7 has a flat tyre" in store.context(QUESTION).text


# --- 10. a damaged header -----------------------------------------------------------------


def test_a_damaged_header_is_store_corrupt_not_another_file(stored: Path, tmp_path: Path) -> None:
    with open(stored, "r+b") as file:
        file.write(b"Not SQLite here!")  # the 16-byte magic string
    with pytest.raises(StoreCorrupt, match="header"):
        Store.open(stored)
    one_line_error(muster("info", "--store", str(stored)), "header")  # type: ignore[arg-type]
    text = tmp_path / "notes.txt"
    text.write_text("just some text, not a database at all\n" * 200)
    with pytest.raises(StoreError, match="not a MUSTER store") as refused:
        Store.open(text)
    assert not isinstance(refused.value, StoreCorrupt)
    other = sqlite_file(tmp_path / "other.db", "CREATE TABLE t (x)", "INSERT INTO t VALUES (1)")
    with open(other, "r+b") as file:
        file.write(b"Not SQLite here!")
    with pytest.raises(StoreError, match="not a MUSTER store") as refused:
        Store.open(other)
    assert not isinstance(refused.value, StoreCorrupt)


# --- 2. file modes ----------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_and_its_log_files_are_private(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "private.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(NOTES)
        store.context(QUESTION)  # the cache connections too
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        assert all(p.exists() for p in files)
        assert {p.name: oct(_mode(p)) for p in files} == {p.name: "0o600" for p in files}
    cli = tmp_path / "cli.muster"
    notes = tmp_path / "notes.txt"
    notes.write_text("\n".join(NOTES) + "\n")
    assert muster("add", "--store", str(cli), str(notes)).returncode == 0  # type: ignore[attr-defined]
    assert oct(_mode(cli)) == "0o600"


def test_a_new_shared_vector_cache_is_private(tmp_path: Path, umask_022: None) -> None:
    from muster_exact import build

    cache = tmp_path / "home" / "vectors.sqlite"
    build(NOTES, models=MODELS, cache=cache)
    assert oct(_mode(cache)) == "0o600"


def test_an_existing_file_keeps_its_mode(stored: Path) -> None:
    os.chmod(stored, 0o640)
    with Store.open(stored, models=MODELS) as store:
        store.add("one more")
    assert oct(_mode(stored)) == "0o640"


# --- 5. a damaged shared vector cache -------------------------------------------------------


def _garbage(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.write(bytes((i * 131 + 7) % 256 for i in range(size)))


def _truncated(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.truncate(size // 3)
        file.seek(0)
        file.write(b"\x00" * 200)


def _zeroed(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.seek(4096)
        file.write(b"\x00" * (size - 4096))


def _header_zeroed(path: Path) -> None:
    with open(path, "r+b") as file:
        file.write(b"\x00" * 100)


SHARED_DAMAGE = {"garbage": _garbage, "truncated": _truncated, "zeroed": _zeroed, "header": _header_zeroed}


def _checkpointed(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


@pytest.mark.parametrize("damage", SHARED_DAMAGE.values(), ids=SHARED_DAMAGE.keys())
def test_a_damaged_shared_vector_cache_is_a_help_not_a_condition(
    tmp_path: Path, damage: object, caplog: pytest.LogCaptureFixture
) -> None:
    from muster_exact import build

    home = tmp_path / "home"
    cache = home / "vectors.sqlite"
    expected = build(NOTES, models=MODELS, cache=cache).context(QUESTION).text
    _checkpointed(cache)
    damage(cache)  # type: ignore[operator]
    with caplog.at_level(logging.WARNING):
        first = build(NOTES, models=MODELS, cache=cache)
        assert first.context(QUESTION).text == expected
        assert build(NOTES, models=MODELS, cache=cache).context(QUESTION).text == expected
    warned = [r.getMessage() for r in caplog.records if "vectors.sqlite" in r.getMessage()]
    assert len(warned) <= 1 and all("damaged" in w for w in warned), warned
    chat = tmp_path / "notes.txt"
    chat.write_text("\n".join(NOTES) + "\n")
    answer = muster("query", str(chat), QUESTION, env={"MUSTER_HOME": str(home)})
    assert answer.returncode == 0, answer.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in answer.stderr  # type: ignore[attr-defined]
    assert "shed 7 has a flat tyre" in answer.stdout  # type: ignore[attr-defined]


# --- 7. a cached vector stored as TEXT ------------------------------------------------------


def test_a_vector_stored_as_text_is_a_miss(stored: Path, caplog: pytest.LogCaptureFixture) -> None:
    with Store.open(stored, models=MODELS) as store:
        expected = store.context(QUESTION)
    db = sqlite3.connect(stored)
    keys = [row[0] for row in db.execute("SELECT sha256 FROM vectors ORDER BY sha256")][::2]
    # Raw float bytes as TEXT: not UTF-8, as another program's write might leave them.
    db.executemany("UPDATE vectors SET vector = CAST(vector AS TEXT) WHERE sha256 = ?", [(k,) for k in keys])
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING), Store.open(stored, models=MODELS) as store:
        assert store.context(QUESTION) == expected
    assert any("damaged" in r.getMessage() for r in caplog.records)
    db = sqlite3.connect(stored)
    kinds = {row[0] for row in db.execute("SELECT typeof(vector) FROM vectors")}
    db.close()
    assert kinds == {"blob"}  # written again as it should be
    db = sqlite3.connect(stored)
    db.executemany("UPDATE vectors SET vector = CAST(vector AS TEXT) WHERE sha256 = ?", [(k,) for k in keys])
    db.commit()
    db.close()
    answer = muster("query", "--store", str(stored), QUESTION)
    assert answer.returncode == 0, answer.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in answer.stderr and "\ufffd" not in answer.stderr  # type: ignore[attr-defined]


# --- 14. a full disk -------------------------------------------------------------------------


def test_on_a_full_disk_vectors_are_kept_for_the_process(
    stored: Path,
    full_disk: None,  # noqa: F811
) -> None:
    with Store.open(stored, models=MODELS) as store:
        expected = store.context(QUESTION).text
        assert store.embedded > 0
    with Store.open(stored, models=MODELS) as store:  # a new store: nothing in its memory
        assert store.context(QUESTION).text == expected
        assert store.embedded == 0


# --- 1. on PostgreSQL: the same read path -----------------------------------------------------


def test_a_changed_record_in_postgres_is_store_corrupt(postgres_url: str) -> None:
    import psycopg

    with Store.open(postgres_url, models=MODELS) as store:
        store.add(NOTES)
    with psycopg.connect(postgres_url, autocommit=True) as db:  # the text changed, not its hash
        db.execute("UPDATE records SET record = replace(record, 'shed 7 has', 'shed 7 was') WHERE id = 'r8'")
    with Store.open(postgres_url, models=MODELS) as store, pytest.raises(StoreCorrupt, match="record 'r8'"):
        list(store.export())
    # A new open: the finding was recorded in the database.
    with Store.open(postgres_url, models=MODELS) as store, pytest.raises(StoreCorrupt, match="record 'r8'"):
        store.add("one more note")
