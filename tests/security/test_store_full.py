"""A full disk: reads of the records keep working, writes fail whole with one line naming them.

The disk is made full for real, without root: every SQLite connection the store opens is capped
at the file's present size (``PRAGMA max_page_count``), so any write that needs one more page
gets SQLITE_FULL from SQLite itself, as on a disk with no space left. A read then must not
depend on the bookkeeping it writes (vectors, analyses, the saved derive result, unit keys);
a write fails whole, with one typed error that names it.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_exact.core.errors import StoreFull
from muster_exact.store import Store

MODELS = "cpu-small"
NOTES = [f"Note {i}: the blue bike in shed {i} has a flat tyre." for i in range(40)]
QUESTION = "Which bike has a flat tyre in shed 7?"
LONG = "A long note: " + "words that need pages of their own " * 2000


def _capped(connect: Any) -> Any:
    def capped(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.execute("PRAGMA max_page_count = 1")  # SQLite keeps it at the present size: no growth
        return db

    return capped


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every connection a store opens from now on may not grow its file."""
    import muster_exact.cache.vectors as vectors
    import muster_exact.store.store as store_module

    capped = _capped(vectors.connect)
    monkeypatch.setattr(vectors, "connect", capped)
    monkeypatch.setattr(store_module, "connect", capped)
    yield
    from muster_exact.cache.unwritten import UNWRITTEN

    UNWRITTEN.clear()  # what the full disk kept in memory: no later test reads it


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    """A store never read (nothing cached), and the context a read of it gives with space left."""
    path = tmp_path / "full.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(NOTES)
    spare = tmp_path / "spare.muster"
    shutil.copyfile(path, spare)
    with Store.open(spare, models=MODELS) as store:
        return path, store.context(QUESTION).text


def test_reads_work_on_a_full_disk(
    stored: tuple[Path, str], full_disk: None, caplog: pytest.LogCaptureFixture
) -> None:
    path, expected = stored
    with caplog.at_level(logging.WARNING), Store.open(path, models=MODELS) as store:
        assert store.context(QUESTION).text == expected
        assert store.context(QUESTION).text == expected  # and again, from the memory
        assert [r["text"] for r in store.records()] == NOTES
    assert any("full" in r.getMessage() for r in caplog.records)  # skipped, and said so


def test_writes_on_a_full_disk_fail_whole_naming_the_operation(
    stored: tuple[Path, str], full_disk: None
) -> None:
    path, expected = stored
    with Store.open(path, models=MODELS) as store:
        before = store.head()
        with pytest.raises(StoreFull, match=r"^add .*full.*nothing was written"):
            store.add([f"{LONG} {i}" for i in range(5)])
        with pytest.raises(StoreFull, match=r"^update .*full.*nothing was written"):
            store.update("r1", LONG)
        assert store.head() == before and [r["text"] for r in store.records()] == NOTES
        assert store.context(QUESTION).text == expected
