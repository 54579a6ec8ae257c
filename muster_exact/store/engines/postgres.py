"""The PostgreSQL engine: a store in a database named by a ``postgresql://`` URL (psycopg 3).

The store's SQL is written once, for SQLite; :class:`Connection` gives it the part of
``sqlite3.Connection`` the store uses and translates each statement by these rules, and no others
(``docs/decisions/0190-store-engines.md``; each is tested in tests/store/test_postgres.py):

1. ``?`` placeholders become ``%s`` (the store's SQL holds no ``%`` of its own: refused).
2. ``BEGIN IMMEDIATE`` (a writer) becomes a READ COMMITTED transaction that first takes the
   database's writer lock (``pg_advisory_xact_lock``): writers go one at a time, as in SQLite,
   and each statement after the lock sees every write committed before it.
3. ``BEGIN`` (a read) becomes a REPEATABLE READ transaction: the head and the records a read
   takes come from one snapshot.
4. In ``CREATE`` and ``ALTER`` statements: ``INTEGER`` is ``BIGINT``, ``REAL`` is ``DOUBLE
   PRECISION`` (SQLite's REAL is 8 bytes; PostgreSQL's is 4, and a rounded score would change a
   context), ``BLOB`` is ``BYTEA``, ``TEXT`` is ``TEXT COLLATE "C"`` (ordered by code point, as
   SQLite orders text), and ``WITHOUT ROWID`` is dropped.
5. The listing of tables (``sqlite_master``) reads ``pg_tables`` of the connection's schema.

Deleted text is erased by ``VACUUM FULL`` of the store's tables (:meth:`PostgresEngine.erase`):
it rewrites each table into new files, so the deleted rows are in none of the table's data files.
It waits for the snapshots older than the delete to end (a snapshot keeps the rows it sees);
past the wait the erase is pending, as a SQLite checkpoint held back by a reader is.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from muster_exact.cache.vectors import Access
from muster_exact.core.errors import StoreError
from muster_exact.store.file import known_tables

log = logging.getLogger(__name__)


class _Store(Protocol):
    def _finish_erasures(self, wait_ms: int) -> bool: ...


S = TypeVar("S", bound=_Store)

# The writer lock's key, one per database (advisory locks are per database): "MUST".
WRITER_LOCK = 0x4D555354
# The tables an erase rewrites: every table the schema and its migrations make, but ``meta`` (the
# store's version and bookkeeping, never a record's text), so a table added later is erased too.
ERASED_TABLES = tuple(sorted(known_tables() - {"meta"}))
_POLL_S = 0.05  # how often an erase looks again for the snapshots it waits on

_DDL = (
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
    (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"'),
    (re.compile(r"\s*\bWITHOUT ROWID\b"), ""),
)
SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
PG_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
WRITER_BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"
READER_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"


def translated(sql: str) -> str:
    """The store's SQL statement as PostgreSQL takes it (rules 1, 4 and 5 of the module's docstring)."""
    if "%" in sql:
        raise ValueError(f"the store's SQL holds no '%': {sql!r}")
    if sql.strip() == SQLITE_TABLES:
        return PG_TABLES
    if re.match(r"\s*(CREATE|ALTER)\b", sql):
        for pattern, replacement in _DDL:
            sql = pattern.sub(replacement, sql)
    return sql.replace("?", "%s")


class Connection:
    """A psycopg connection (autocommit: a statement outside a transaction commits alone) as the
    store uses an ``sqlite3.Connection``, its SQL translated (:func:`translated`)."""

    def __init__(self, raw: Any, url: str | None = None) -> None:
        self.raw = raw
        self.url = url  # to connect again after the connection was lost (None: never)
        self._began: list[bool] = []  # per ``with db:``, whether it began the transaction

    def _live(self) -> Any:
        """The connection, connected again when the last one was lost (a server restart, a
        terminated session): the statement that met the loss failed (typed, 503); the next one
        runs. Never within a transaction: the failure ended it."""
        if self.raw.closed and self.url is not None:
            from muster_exact.store.postgres_connect import connect

            log.info("the connection to %s was lost; connected again", shown(self.url))
            self.raw = connect(self.url, autocommit=True)
        return self.raw

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._live()
        statement = sql.strip()
        if statement == "BEGIN IMMEDIATE":
            self.raw.execute(WRITER_BEGIN)
            return self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
        if statement == "BEGIN":
            return self.raw.execute(READER_BEGIN)
        return self.raw.execute(translated(sql), tuple(params) or None)

    def executemany(self, sql: str, rows: Any) -> Any:
        cursor = self._live().cursor()
        rows = list(rows)
        if rows:
            cursor.executemany(translated(sql), rows)
        return cursor

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        # A lost connection has no transaction left to end (its status is UNKNOWN).
        status = self.raw.info.transaction_status
        return bool(
            status in (TransactionStatus.INTRANS, TransactionStatus.INERROR, TransactionStatus.ACTIVE)
        )

    def __enter__(self) -> Connection:
        """A transaction unless one is open (``with db:`` as sqlite3 gives it: commit or roll back;
        within an open one, a part of it)."""
        self._live()
        began = not self.in_transaction
        self._began.append(began)
        if began:
            self.raw.execute(WRITER_BEGIN)
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if self._began.pop() and self.in_transaction:
            self.raw.execute("COMMIT" if kind is None else "ROLLBACK")

    def close(self) -> None:
        self.raw.close()


def is_postgres(location: Any) -> bool:
    """Whether a store location names a PostgreSQL database (a ``postgresql://`` URL)."""
    from muster_exact.store.postgres_connect import is_postgres_url

    return isinstance(location, str) and is_postgres_url(location)


def shown(url: str) -> str:
    """The URL as messages show it: its password hidden."""
    from muster_exact.store.postgres_connect import shown_url

    return shown_url(url)


def connected(url: str) -> Connection:
    from muster_exact.store.postgres_connect import connect

    return Connection(connect(url, autocommit=True), url)


def opened(
    cls: Callable[..., S],
    url: str,
    namespace: str,
    preset: str | None,
    models: Any,
    create: bool,
    reembed: bool,
) -> S:
    """``Store.open`` of a PostgreSQL database: one namespace of the store in it, created when
    the database holds none (unless ``create=False``)."""
    from muster_exact.store.file import sqlite_errors
    from muster_exact.store.validation import check_namespace

    where = shown(url)
    with sqlite_errors(where, "open"):  # psycopg's failures too, typed
        db = connected(url)
        try:
            # No database holds a name made before the rule (0185): checked before any table is made.
            namespace = check_namespace(namespace)
            access = prepare(db, where, create)
            # The connection gives the part of sqlite3.Connection the store uses (translated).
            store = cls(where, cast(Any, db), namespace, preset, models, access, reembed, PostgresEngine(url))
            store._finish_erasures(wait_ms=0)  # a delete another replica's read held back
        except BaseException:
            db.close()
            raise
    return store


def prepare(connection: Connection, where: str, create: bool) -> Access:
    """Create the schema in a database that has none (under the writer lock: of many replicas
    starting at once, one creates it), or check and migrate the one there; the access this
    connection's role has (``ro`` when it may not insert records)."""
    from muster_exact.cache.vectors import CACHE_SCHEMAS
    from muster_exact.store import file

    db = cast(Any, connection)  # the part of sqlite3.Connection the store's functions use
    with file.transaction(db):
        tables = file._tables(db)
        if not tables:
            if not create:
                raise StoreError(f"no store at {where}; add records first (muster add --store URL FILE)")
            for statement in file._statements(
                file.SCHEMA + file.HISTORY_TABLE + CACHE_SCHEMAS + file.BUILT_SCHEMA
            ):
                db.execute(statement)
            db.execute("INSERT INTO meta VALUES ('application', ?)", (file.APPLICATION,))
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(file.SCHEMA_VERSION),))
            tables = file._tables(db)
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if meta.get("application") != file.APPLICATION:
        raise StoreError(
            f"{where} holds tables but not a MUSTER store; give an empty database or a MUSTER store"
        )
    row = db.execute("SELECT has_table_privilege('records', 'INSERT')").fetchone()
    access: Access = "rw" if row[0] else "ro"
    file._check_and_migrate(db, where, meta, access)
    return access


class PostgresEngine:
    """A store in a PostgreSQL database: erased by ``VACUUM FULL``, its caches in its tables."""

    name = "postgres"
    record_bytes = "record"  # PostgreSQL holds only valid UTF-8: the text is hashed as read

    def __init__(self, url: str) -> None:
        self.url = url

    def erase(self, db: Connection, wait_ms: int) -> bool:
        """Rewrite every table that may hold deleted text; False when another connection's
        snapshot (one that may see the deleted rows) or lock outlasts ``wait_ms``."""
        deadline = time.monotonic() + wait_ms / 1000
        while self._snapshots_held(db):
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        left = max(1, int((deadline - time.monotonic()) * 1000))
        db.execute(f"SET lock_timeout = {left if wait_ms else 1}")
        try:
            db.execute(f"VACUUM FULL {', '.join(ERASED_TABLES)}")
        except Exception as exc:
            from psycopg.errors import LockNotAvailable

            if isinstance(exc, LockNotAvailable):
                return False
            raise
        finally:
            db.execute("SET lock_timeout = 0")
        return True

    @staticmethod
    def _snapshots_held(db: Connection) -> bool:
        """Whether another session of this database holds a snapshot (it may see the deleted rows)."""
        row = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND backend_xmin IS NOT NULL"
        ).fetchone()
        return bool(row[0])

    def erased(self, db: Connection) -> None:
        """The cleared pending-erase record holds no deleted text: nothing more to rewrite."""

    def caches(self, path: Any, access: Access, db: Connection, lock: Any) -> tuple[Any, Any, Any]:
        """The vector, score and analysis caches, on the store's own connection under its lock
        (their tables are the store's, made with its schema): one connection per open namespace,
        so N replicas with M namespaces open need N x M of the server's connections."""
        from muster_exact.cache.vectors import AnalysisCache, ScoreCache, VectorCache

        return (
            VectorCache(None, access, db=db, lock=lock),
            ScoreCache(None, access, db=db, lock=lock),
            AnalysisCache(None, access, db=db, lock=lock),
        )
