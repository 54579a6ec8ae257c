"""Unit vectors cached by (model id, SHA-256 of the unit text), in SQLite.

A second build of the same store, or of a store that shares units with one
built before, embeds nothing it has seen. The file is safe to share between
processes (WAL, a busy timeout); vectors are stored as float32 bytes, so a
cache hit gives back exactly the array that was computed.

A cache is a help, never a condition: in a store opened read-only nothing is
written, and a write that fails (a full disk) is logged and skipped, so the
read it serves still answers.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from muster_exact.cache.files import created_private, use_wal
from muster_exact.cache.unwritten import UNWRITTEN
from muster_exact.text.tokens import resource_dir

if TYPE_CHECKING:
    import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, sha256)
) WITHOUT ROWID;
"""
_CHUNK = 500  # keys per SELECT: below SQLite's bound-parameter limit

log = logging.getLogger(__name__)

# How a file is opened: read-write, read-only, or read-only of a file nothing can change meanwhile
# (SQLite then needs no shared-memory file beside it: what a read-only folder allows).
Access = Literal["rw", "ro", "immutable"]


def connect(path: Path | None, access: Access = "rw", **options: Any) -> sqlite3.Connection:
    """An SQLite connection to ``path`` (None: in memory) with the given access."""
    if path is None:
        target, uri = ":memory:", False
    elif access == "rw":
        target, uri = str(path), False
        created_private(path)
    else:
        query = "mode=ro&immutable=1" if access == "immutable" else "mode=ro"
        target, uri = f"file:{quote(str(path.absolute()))}?{query}", True
    db: sqlite3.Connection = sqlite3.connect(target, uri=uri, **options)
    return db


def database_errors() -> tuple[type[Exception], ...]:
    """The failures of the databases a store may live in: SQLite's, and psycopg's once a store in
    PostgreSQL has loaded it (:mod:`muster_exact.store.engines.postgres`)."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


@contextmanager
def best_effort(what: str) -> Iterator[None]:
    """A write that only saves work (a cache, a read's bookkeeping): one that fails (a full disk, a
    file made read-only) is skipped with one log line; it costs time, never an answer."""
    try:
        yield
    except database_errors() as exc:
        log.warning("could not write %s (%s); skipped: it costs time, never an answer", what, exc)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_path() -> Path:
    return resource_dir() / "vectors.sqlite"


# Disposable cache files found damaged in this process: not opened again (:meth:`_Table._without_file`).
_DAMAGED_FILES: set[Path] = set()


class _Table:
    """A cache table in an SQLite file (``path=None``: in memory), or on ``db`` under ``lock``, a
    store's own connection to its database and the lock its uses hold
    (:mod:`muster_exact.store.engines`): its schema made when the file is writable, keyed reads in
    chunks, writes that never fail a read (:func:`best_effort`)."""

    def __init__(
        self,
        path: Path | None,
        access: Access,
        schema: str,
        db: Any = None,
        lock: Any = None,
        disposable: bool = False,
    ) -> None:
        self.path = path
        self.writable = access == "rw"
        self._schema = schema
        # A file holding nothing but this cache (the shared one): damaged, it is left as it is and
        # this process goes on with one in memory (:meth:`_without_file`).
        self._disposable = disposable
        self._lock = threading.Lock() if lock is None else lock
        self._owned = db is None  # a store's connection is the store's to close
        if db is not None:  # the store's schema made the table
            self._db = db
            return
        if path is not None and path in _DAMAGED_FILES:  # found damaged before: said once
            self._without_file(None)
            return
        if path is not None and self.writable:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = connect(path, access, timeout=60, check_same_thread=False)
            if self.writable:
                if path is not None:
                    use_wal(self._db, wait_s=60)
                self._db.executescript(schema)
        except sqlite3.DatabaseError as exc:
            if not self._damage(exc):
                raise
            self._without_file(exc)

    def _damage(self, exc: sqlite3.DatabaseError) -> bool:
        """Whether ``exc`` says the file of a disposable cache is damaged."""
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        return self._disposable and code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)

    def _without_file(self, exc: sqlite3.DatabaseError | None) -> None:
        """Go on with a cache in memory: a cache is a help, never a condition. The damaged file is
        left as it is (another process may have it open; it holds nothing that cannot be computed)
        and this process opens it no more; the warning is given once."""
        if exc is not None and self.path is not None:
            _DAMAGED_FILES.add(self.path)
            log.warning(
                "the cache %s is damaged (%s); this process goes on without it (it only saves "
                "time): delete the file to start a new one",
                self.path,
                exc,
            )
        if getattr(self, "_db", None) is not None:
            with best_effort(f"closing the damaged cache {self.path}"):
                self._db.close()
        self.path, self.writable = None, True
        self._db = connect(None, check_same_thread=False)
        self._db.executescript(self._schema)

    def _select_in(self, select: str, fixed: Sequence[Any], keys: Sequence[str]) -> list[Any]:
        """Rows of ``select ... IN (keys)``, the keys bound ``_CHUNK`` at a time."""
        rows: list[Any] = []
        with self._lock:
            try:
                for first in range(0, len(keys), _CHUNK):
                    chunk = list(keys[first : first + _CHUNK])
                    marks = ",".join("?" * len(chunk))
                    rows.extend(self._db.execute(f"{select} ({marks})", [*fixed, *chunk]))
            except sqlite3.DatabaseError as exc:
                if not self._damage(exc):
                    raise
                self._without_file(exc)
                return []
        return rows

    def _write(self, what: str, statement: str, rows: Sequence[tuple[Any, ...]]) -> bool:
        """Whether ``rows`` were written (or there was nothing to write)."""
        if not rows:
            return True
        if not self.writable:
            return False
        with best_effort(what), self._lock:
            try:
                with self._db:
                    self._db.executemany(statement, rows)
            except sqlite3.DatabaseError as exc:
                if not self._damage(exc):
                    raise
                self._without_file(exc)
                with self._db:
                    self._db.executemany(statement, rows)
            return True
        return False

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._db.close()


class VectorCache(_Table):
    """A (model, text hash) -> vector map; ``path=None`` keeps it in memory."""

    def __init__(
        self,
        path: Path | None = None,
        access: Access = "rw",
        db: Any = None,
        lock: Any = None,
        disposable: bool = False,
    ) -> None:
        super().__init__(path, access, SCHEMA, db, lock, disposable)

    def get(self, model: str, keys: Sequence[str]) -> dict[str, bytes]:
        """The cached vectors of these keys. A damaged row (a blob that is not ``dim`` float32s,
        or not the size of the model's other vectors) is a miss: one log line, and the row is
        dropped so that the vector embedded again takes its place."""
        # SQLite keeps any type in any column: a vector stored as TEXT (maybe not UTF-8) is read
        # as NULL, a miss, never decoded (PostgreSQL's column holds bytes only).
        vector = "CASE WHEN typeof(vector) = 'blob' THEN vector END" if self._owned else "vector"
        select = f"SELECT sha256, dim, {vector} FROM vectors WHERE model = ? AND sha256 IN"
        rows = self._select_in(select, [model], keys)
        whole = [(k, v) for k, dim, v in rows if isinstance(v, bytes) and 0 < len(v) == 4 * dim]
        size = Counter(len(v) for _, v in whole).most_common(1)[0][0] if whole else 0
        found = {k: v for k, v in whole if len(v) == size}
        damaged = [(model, k) for k, _, _ in rows if k not in found]
        if damaged:
            log.warning(
                "%d cached vector(s) of %s are damaged (the wrong size or type); embedded again",
                len(damaged),
                model,
            )
            self._write(
                "the removal of damaged vectors",
                "DELETE FROM vectors WHERE model = ? AND sha256 = ?",
                damaged,
            )
        if len(found) < len(keys):  # what a full disk kept from being written
            found.update(UNWRITTEN.get(model, [k for k in keys if k not in found]))
        return found

    def put(self, model: str, items: Sequence[tuple[str, bytes, int]]) -> None:
        """Write the vectors; those a write fails to keep (a full disk) are kept in memory for
        the process (:mod:`muster_exact.cache.unwritten`), so the next read embeds them no more."""
        rows = [(model, key, dim, blob) for key, blob, dim in items]
        insert = "INSERT INTO vectors (model, sha256, dim, vector) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
        if self.writable and not self._write(f"{len(rows)} vectors", insert, rows):
            UNWRITTEN.keep(model, [(key, blob) for key, blob, _ in items])


SCORES_SCHEMA = """
CREATE TABLE IF NOT EXISTS rerank_scores (
    model TEXT NOT NULL,
    query_sha256 TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (model, query_sha256, text_sha256)
) WITHOUT ROWID;
"""


class ScoreCache(_Table):
    """Cross-encoder scores by (model, query hash, unit text hash): a repeated question costs no
    cross-encoder call, in this process or the next."""

    def __init__(
        self, path: Path | None = None, access: Access = "rw", db: Any = None, lock: Any = None
    ) -> None:
        super().__init__(path, access, SCORES_SCHEMA, db, lock)

    def scored(
        self, model: str, query: str, texts: Sequence[str], score: Callable[[str, list[str]], list[float]]
    ) -> tuple[list[float], int]:
        """Scores for ``texts`` against ``query`` (in order) and how many had to be computed."""
        query_key = text_key(query)
        keys = [text_key(t) for t in texts]
        select = (
            "SELECT text_sha256, score FROM rerank_scores WHERE model = ? AND query_sha256 = ? "
            "AND text_sha256 IN"
        )
        found: dict[str, float] = dict(self._select_in(select, [model, query_key], sorted(set(keys))))
        first_index: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in found and key not in first_index:
                first_index[key] = i
        if first_index:
            fresh = score(query, [texts[i] for i in first_index.values()])
            new = dict(zip(first_index, fresh, strict=True))
            rows = [(model, query_key, key, float(value)) for key, value in new.items()]
            insert = "INSERT INTO rerank_scores VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
            self._write(f"{len(rows)} cross-encoder scores", insert, rows)
            found.update(new)
        return [found[k] for k in keys], len(first_index)


ANALYSES_SCHEMA = """
CREATE TABLE IF NOT EXISTS analyses (
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (kind, sha256)
) WITHOUT ROWID;
"""


class AnalysisCache(_Table):
    """Per-text analyses (:mod:`muster_exact.cache.memo`) by (kind, text hash), as JSON: a new process
    opening a store reads its records' counts, terms and entities instead of computing them."""

    def __init__(
        self, path: Path | None = None, access: Access = "rw", db: Any = None, lock: Any = None
    ) -> None:
        super().__init__(path, access, ANALYSES_SCHEMA, db, lock)

    def get(self, kind: str, keys: Sequence[str]) -> dict[str, str]:
        select = "SELECT sha256, value FROM analyses WHERE kind = ? AND sha256 IN"
        return dict(self._select_in(select, [kind], keys))

    def put(self, kind: str, items: Sequence[tuple[str, str]]) -> None:
        rows = [(kind, key, value) for key, value in items]
        # Replaced: a value is a function of its text, so a row written again (one that could not
        # be read) is only ever replaced by the same value.
        upsert = (
            "INSERT INTO analyses VALUES (?, ?, ?) "
            "ON CONFLICT (kind, sha256) DO UPDATE SET value = excluded.value"
        )
        self._write(f"{len(rows)} analyses", upsert, rows)


# Every cache table: a store file holds them beside its records (muster_exact.store.file).
CACHE_SCHEMAS = SCHEMA + SCORES_SCHEMA + ANALYSES_SCHEMA


def drop_texts_not_in(db: sqlite3.Connection, live: str) -> tuple[int, int]:
    """Delete every cached vector, cross-encoder score and analysis of a text whose hash the query
    ``live`` (``SELECT sha256 FROM ...``) does not list, in the caller's transaction on ``db``: a
    store's delete, which keeps only what its records still use. (Vectors, scores) dropped."""
    vectors = db.execute(f"DELETE FROM vectors WHERE sha256 NOT IN ({live})").rowcount
    scores = db.execute(f"DELETE FROM rerank_scores WHERE text_sha256 NOT IN ({live})").rowcount
    # Counts, terms and entities of text no namespace holds any more.
    db.execute(f"DELETE FROM analyses WHERE sha256 NOT IN ({live})")
    return int(vectors), int(scores)


def embed_cached(
    texts: Sequence[str],
    model_id: str,
    embed: Callable[[list[str]], np.ndarray],
    cache: VectorCache,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (rows in order) and how many had to be computed."""
    import numpy as np

    keys = [text_key(t) for t in texts]
    cached = cache.get(model_id, sorted(set(keys)))
    first_index: dict[str, int] = {}
    for i, key in enumerate(keys):
        if key not in cached and key not in first_index:
            first_index[key] = i
    missing = list(first_index.items())
    if missing:
        fresh = embed([texts[i] for _, i in missing])
        cache.put(model_id, [(k, fresh[j].tobytes(), fresh.shape[1]) for j, (k, _) in enumerate(missing)])
        cached.update((k, fresh[j].tobytes()) for j, (k, _) in enumerate(missing))
    rows = [np.frombuffer(cached[k], dtype=np.float32) for k in keys]
    if not rows:
        return np.zeros((0, 0), dtype=np.float32), 0
    return np.vstack(rows), len(missing)
