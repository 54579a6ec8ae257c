"""The SQLite file under a :class:`~muster_exact.store.Store`: its schema and migrations, what a
path may be and how it is opened, transactions, and SQLite failures as typed errors.

A new file gets the whole schema; an existing one is checked (a MUSTER store, not another program's
file, not from a newer MUSTER) and migrated in place. Every SQLite failure leaves as a typed
:class:`StoreError` (``StoreCorrupt``, ``StoreFull``, ``StoreReadOnly``), mapped in one place
(:func:`sqlite_errors`).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from muster_exact.cache.files import use_wal
from muster_exact.cache.vectors import ANALYSES_SCHEMA, CACHE_SCHEMAS, Access, database_errors
from muster_exact.core.errors import StoreCorrupt, StoreError, StoreFull, StoreReadOnly

log = logging.getLogger(__name__)

APPLICATION = "muster-store"
SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 60_000  # a writer waits this long for another writer

# A record's history: one line per update (when, which id), never the text it had.
HISTORY_TABLE = """
CREATE TABLE history (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    action TEXT NOT NULL,
    at_utc REAL NOT NULL
);
CREATE INDEX history_by_record ON history (namespace, id);
"""

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records (
    namespace TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    record TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    request_id TEXT,
    added_utc REAL NOT NULL,
    PRIMARY KEY (namespace, seq),
    UNIQUE (namespace, id)
);
CREATE INDEX records_by_request ON records (namespace, request_id);
CREATE TABLE requests (
    namespace TEXT NOT NULL,
    request_id TEXT NOT NULL,
    result TEXT NOT NULL,
    body_sha256 TEXT,
    PRIMARY KEY (namespace, request_id)
);
CREATE TABLE heads (
    namespace TEXT PRIMARY KEY,
    records INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE TABLE unit_keys (
    namespace TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (namespace, sha256)
) WITHOUT ROWID;
"""


# What the last read derived (plan, units, parents, detection counts: muster_exact.derive.saved), by
# namespace: a new process opening the store reads it instead of detecting and cutting again.
# ``head``: the records it is of; ``settings``: what else it depends on (preset, models, version).
BUILT_SCHEMA = """
CREATE TABLE IF NOT EXISTS built (
    namespace TEXT PRIMARY KEY,
    head TEXT NOT NULL,
    settings TEXT NOT NULL,
    state BLOB NOT NULL
);
"""

HISTORY_SCHEMA = "ALTER TABLE requests ADD COLUMN body_sha256 TEXT;" + HISTORY_TABLE

# schema version N -> the SQL that brings a version N file to N + 1.
MIGRATIONS: dict[int, str] = {
    # 2: per-text analyses (muster_exact.cache.memo), so a new process re-analyses nothing.
    1: ANALYSES_SCHEMA,
    # 3: the derive result of the last read, so a new process re-cuts nothing.
    2: BUILT_SCHEMA,
    # 4: what each request id's add carried (a reuse with another body is a conflict), and a
    # record's history (an update leaves a line, never the old text).
    3: HISTORY_SCHEMA,
}


class transaction:
    """``BEGIN IMMEDIATE`` (writers wait their turn) or a deferred read transaction; commit or roll back."""

    def __init__(self, db: sqlite3.Connection, immediate: bool = True) -> None:
        self.db = db
        self.immediate = immediate

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE" if self.immediate else "BEGIN")
        return self.db

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:  # SQLite rolls some failures (a full disk) back itself
            self.db.execute("ROLLBACK")


def checkpoint(db: sqlite3.Connection, wait_ms: int) -> bool:
    """Copy the write-ahead log into the main file and truncate it; False when a reader held it back."""
    db.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    finally:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return int(busy) == 0


# --- SQLite failures, as typed errors (the one place they are mapped) -------------------------


# The store operation a caller asked for (the outermost one: ``add``, not a read it calls within).
_OPERATION: ContextVar[str | None] = ContextVar("muster_store_operation", default=None)


@contextmanager
def sqlite_errors(path: Path | str, operation: str | None = None) -> Iterator[None]:
    """SQLite failures within as typed errors; ``operation`` (``add``, ``context``...) is named by
    the message of a full disk, unless an outer operation already is."""
    token = _OPERATION.set(operation) if operation and _OPERATION.get() is None else None
    try:
        yield
    except sqlite3.Error as exc:
        raise _typed(exc, path, _OPERATION.get()) from None
    except database_errors() as exc:  # psycopg's: a store in PostgreSQL
        from muster_exact.store.engines import typed_error

        raise typed_error(exc, str(path)) from None
    finally:
        if token is not None:
            _OPERATION.reset(token)


def _typed(exc: sqlite3.Error, path: Path | str, operation: str | None = None) -> StoreError:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code
    detail = str(exc)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or detail.startswith("no such "):
        return StoreCorrupt(
            f"{path} is damaged ({detail}); restore it from a backup (`sqlite3 {path} .recover` may "
            "save its records)"
        )
    if code == sqlite3.SQLITE_FULL:
        return StoreFull(
            f"{operation or 'a write'} on {path} failed: the disk is full (or the file reached its "
            "size limit); it was rolled back and nothing was written; free some space and retry"
        )
    if code == sqlite3.SQLITE_READONLY:
        return StoreReadOnly(
            f"{path} is read-only ({detail}); reads work, writes need write access to the file and its folder"
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(f"{path} is locked by another process ({detail}); retry when it is done")
    return StoreError(f"{path} cannot be used as a store ({detail})")


# --- opening: what the path is, how it may be opened, what the file holds ---------------------

_CREATED_TABLE = re.compile(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)")


def check_path(path: Path) -> bool:
    """Whether a store file is there (non-empty); refuse anything but a regular file or nothing."""
    try:
        info = path.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise StoreError(f"cannot use {path} as a store: {exc.strerror}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path} is a directory; give a file path for the store")
    if info is not None and not stat.S_ISREG(info.st_mode):
        # A device or FIFO: SQLite would write a journal beside it (/dev/null-journal) or wait forever.
        raise StoreError(f"{path} is not a regular file (a device, FIFO or socket); give a file path")
    if not path.parent.is_dir():
        raise StoreError(f"cannot create {path}: the directory {path.parent} does not exist")
    return info is not None and info.st_size > 0


def access_of(path: Path) -> Access:
    """``rw`` when the file (if there) and its folder are writable, else read-only.

    Read-only in a read-only folder with no write-ahead log beside the file is ``immutable``: no
    write can be pending and none can start (a writer would have to create the log), and SQLite
    can then read without creating its shared-memory file there.
    """

    def writable(p: Path) -> bool:
        return os.access(p, os.W_OK, effective_ids=os.access in os.supports_effective_ids)

    folder = writable(path.parent)
    if folder and (not path.exists() or writable(path)):
        return "rw"
    if folder or path.with_name(path.name + "-wal").exists():
        return "ro"
    return "immutable"


def prepare(db: sqlite3.Connection, path: Path, access: Access) -> None:
    """Create the schema in a new (or empty) file, or check and migrate an existing one.

    Another program's SQLite file is refused before anything is written to it.
    """
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    tables = _first_read(db, path)
    if not tables:
        if access != "rw":
            raise StoreReadOnly(f"{path} holds no store yet and is read-only; it cannot be created")
        tables = _created(db, path)
    _check_and_migrate(db, path, _check_not_foreign(db, path, tables), access)
    if access == "rw":
        use_wal(db, wait_s=BUSY_TIMEOUT_MS / 1000)
        db.execute("PRAGMA secure_delete=ON")  # deleted text is overwritten, not left in free pages


def _created(db: sqlite3.Connection, path: Path) -> set[str]:
    """The schema made in a file that had none, unless another process made it first: the tables
    are read again under the write lock (``BEGIN IMMEDIATE`` waits for a creator's transaction to
    end), so of many processes opening one new path at once one creates and the rest open what it
    made. Another program's empty file is refused before anything is written to it."""
    with transaction(db):
        tables = _tables(db)
        if not tables:
            _check_not_foreign(db, path, tables)
            for statement in _statements(SCHEMA + HISTORY_TABLE + CACHE_SCHEMAS + BUILT_SCHEMA):
                db.execute(statement)
            db.execute("INSERT INTO meta VALUES ('application', ?)", (APPLICATION,))
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    return tables or _tables(db)


def _first_read(db: sqlite3.Connection, path: Path) -> set[str]:
    """The file's tables, read through SQLite. The header is never read with ``open()``: closing
    any descriptor of the file drops every POSIX lock this process holds on it, and another
    process could then reset the write-ahead log under a live connection (a lost write)."""
    try:
        return _tables(db)
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_NOTADB:
            from muster_exact.store.integrity import header_damaged

            if header_damaged(path):
                raise StoreCorrupt(
                    f"{path} is a MUSTER store whose header is damaged (SQLite cannot read it); "
                    "restore it from a backup"
                ) from None
            raise StoreError(
                f"{path} is not a MUSTER store (not an SQLite file); give a new path or a store file"
            ) from None
        raise


def _tables(db: sqlite3.Connection) -> set[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {row[0] for row in rows if not row[0].startswith("sqlite_")}


def known_tables() -> set[str]:
    """Every table a MUSTER store holds: made by the schema or by a migration."""
    scripts = [SCHEMA, HISTORY_TABLE, CACHE_SCHEMAS, BUILT_SCHEMA, *MIGRATIONS.values()]
    return {name for script in scripts for name in _CREATED_TABLE.findall(script)}


def _check_not_foreign(db: sqlite3.Connection, path: Path, tables: set[str]) -> dict[str, str]:
    """The ``meta`` of a MUSTER store; any other SQLite file is refused, and nothing is written to it.

    A MUSTER store never sets ``user_version`` or ``application_id``; another program's file may.
    """
    for pragma in ("user_version", "application_id"):
        value = db.execute(f"PRAGMA {pragma}").fetchone()[0]
        if value:
            raise StoreError(
                f"{path} is an SQLite file of another program ({pragma} {value}), not a MUSTER store; "
                "give a new path or a store file"
            )
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if tables and meta.get("application") != APPLICATION:
        raise StoreError(f"{path} is an SQLite file but not a MUSTER store; give a new path or a store file")
    return meta


def _check_and_migrate(
    db: sqlite3.Connection, path: Path | str, meta: dict[str, str], access: Access
) -> None:
    version = _schema_version(meta.get("schema_version", "0"), path)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer MUSTER (store schema {version}; this one reads up to "
            f"{SCHEMA_VERSION}); upgrade muster-memory to open it"
        )
    if version < SCHEMA_VERSION and access != "rw":
        raise StoreReadOnly(
            f"{path} needs a migration to store schema {SCHEMA_VERSION} but is read-only; open it once "
            "with write access"
        )
    while version < SCHEMA_VERSION:
        with transaction(db):
            # Read again under the write lock: another process opening the file may have migrated it.
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = _schema_version("0" if row is None else row[0], path)
            if version >= SCHEMA_VERSION:
                break
            migration = MIGRATIONS.get(version)
            if migration is None:
                raise StoreError(f"{path}: no migration from store schema {version}; it cannot be opened")
            for statement in _statements(migration):
                db.execute(statement)
            version += 1
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
        log.info("migrated %s to store schema %d", path, version)
    _check_tables(path, _tables(db))


def _schema_version(value: str, path: Path | str) -> int:
    if not value.isdigit():
        raise StoreCorrupt(
            f"{path} is damaged: its schema version {value!r} is not a number; restore it from a backup"
        )
    return int(value)


def _check_tables(path: Path | str, tables: set[str]) -> None:
    known = known_tables()
    if missing := sorted(known - tables):
        raise StoreCorrupt(
            f"{path} is damaged: table {', '.join(missing)} is missing; restore it from a backup"
        )
    if foreign := sorted(tables - known):
        raise StoreError(
            f"{path} holds tables MUSTER does not make ({', '.join(foreign)}): another program's file? "
            "give a MUSTER store or a new path"
        )


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


class _OfAFile(Protocol):
    path: Path | str  # a file, or a database's URL (its password hidden)


S = TypeVar("S", bound=_OfAFile)
P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store's public method whose SQLite failures leave as typed store errors (:func:`sqlite_errors`)."""

    @functools.wraps(method)
    def call(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        closed = getattr(store, "_closed", None)
        if closed is not None and closed.is_set():  # SQLite's own words name neither store nor fix
            raise StoreError(
                f"{store.path} is closed (Store.close, or the end of its with block); "
                "open it again with Store.open to use it"
            )
        try:
            with sqlite_errors(store.path, method.__name__.lstrip("_")):
                return method(store, *args, **kwargs)
        except StoreCorrupt:
            # A damaged record found: recorded once the method's transactions have ended.
            found = getattr(store, "_damage_found", None)
            if found is not None:
                with sqlite_errors(store.path):
                    found()
            raise

    return call
