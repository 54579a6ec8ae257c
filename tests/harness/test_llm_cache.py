"""The LLM response cache opens only its own files, and never alters anyone else's (real SQLite)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from harness.llm import CacheError, ResponseCache
from tests.conftest import beside, sqlite_file

# The cache's table as the harness created it before caches carried an application id.
LEGACY_SCHEMA = (
    "CREATE TABLE replies (key TEXT PRIMARY KEY, request TEXT NOT NULL, reply TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)"
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("statements", "message"),
    [
        (
            ("CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('keep me')"),
            "not an LLM response cache",
        ),
        (("PRAGMA application_id = 1234", "CREATE TABLE t (x)"), "not an LLM response cache"),
        (("PRAGMA user_version = 7",), "not an LLM response cache"),
        (("CREATE TABLE replies (key TEXT, other TEXT)",), "not an LLM response cache"),
    ],
)
def test_another_applications_database_is_refused_unchanged(
    tmp_path: Path, statements: tuple[str, ...], message: str
) -> None:
    path = sqlite_file(tmp_path / "app.db", *statements)
    before, files = digest(path), beside(path)
    with pytest.raises(CacheError, match=message) as raised:
        ResponseCache(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
    assert digest(path) == before and beside(path) == files  # no table, no -wal, no -shm


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"a text file\n" * 20, "not an SQLite file"),
        (b"SQLite format 3\x00" + b"\xff" * 84 + b"\x00" * 4000, "damaged"),
        (b"SQLite format 3\x00\x10", "damaged"),
    ],
)
def test_a_file_that_is_not_a_readable_cache_is_refused_unchanged(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "responses.sqlite"
    path.write_bytes(content)
    with pytest.raises(CacheError, match=message):
        ResponseCache(path)
    assert path.read_bytes() == content and beside(path) == ["responses.sqlite"]


def test_a_cache_from_before_the_application_id_still_opens_with_its_replies(tmp_path: Path) -> None:
    path = sqlite_file(
        tmp_path / "responses.sqlite",
        LEGACY_SCHEMA,
        "INSERT INTO replies VALUES ('k', '{}', 'Lisbon', 3, 1, 0)",
    )
    cache = ResponseCache(path)
    assert cache.get("k") == ("Lisbon", 3, 1)
    cache.close()


def test_a_new_cache_is_marked_as_one_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "llm" / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", "{}", "Porto", 2, 1)
    cache.close()
    again = ResponseCache(path)
    assert again.get("k") == ("Porto", 2, 1)
    again.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] != 0
    db.close()
