"""The SQLite engine: a store in one file (:mod:`muster_exact.store.file` opens and checks it).

Deleted text is erased by ``secure_delete`` (set on open) and a checkpoint that copies the
write-ahead log into the file and truncates it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from muster_exact.cache.vectors import Access
from muster_exact.store.file import checkpoint
from muster_exact.store.integrity import RECORD_BYTES


class SqliteEngine:
    """A store file: erased by checkpoints, its caches in the same file."""

    name = "sqlite"
    record_bytes = RECORD_BYTES  # a record's text as the file holds it, checked before it is decoded

    def erase(self, db: sqlite3.Connection, wait_ms: int) -> bool:
        """Deleted pages (zeroed) copied into the file and the log emptied; False when a read held it back."""
        return checkpoint(db, wait_ms)

    def erased(self, db: sqlite3.Connection) -> None:
        """After the pending-erase record is cleared: that write leaves the log too."""
        checkpoint(db, 0)

    def caches(self, path: Any, access: Access, db: Any, lock: Any) -> tuple[Any, Any, Any]:
        """The vector, score and analysis caches, each on its own connection to the file (SQLite
        lets many connections read and one write; ``db`` and ``lock`` are the store's)."""
        from muster_exact.cache.vectors import AnalysisCache, ScoreCache, VectorCache

        file = Path(path)
        return VectorCache(file, access), ScoreCache(file, access), AnalysisCache(file, access)


SQLITE = SqliteEngine()
