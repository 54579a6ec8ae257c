"""Damaged bytes are never served: every record read is checked against the SHA-256 stored with it,
a store found damaged refuses writes, and a damaged file header is told from another program's file.

A record's text is read as the bytes the file holds (:data:`RECORD_BYTES` on SQLite, where a torn
write may leave text that is not UTF-8) and hashed before it is decoded; a mismatch is
:class:`StoreCorrupt` naming the record. The first read that finds one records it in the file's
``meta`` (key :data:`DAMAGED`, best effort), so every later write there, in any process, is
refused with the same message (decision 0214). SQLite's own ``integrity_check`` cannot stand in:
it checks pages and indexes, and a record's text changed in place leaves both intact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from muster_exact.core.errors import StoreCorrupt

DAMAGED = "damaged"  # meta key: the message of the first damaged record a read found
# A record's text as the bytes the file holds (SQLite; PostgreSQL checks UTF-8 on every write).
RECORD_BYTES = "CAST(record AS BLOB)"
# What reads of a header SQLite cannot read look for: text only a MUSTER store's schema holds.
_MUSTER_SCHEMA = (b"CREATE TABLE heads (", b"CREATE TABLE unit_keys (")
_HEADER_SCAN = 1 << 20  # the schema's rows are on the first pages


def damaged(path: Path | str, namespace: str, record_id: Any) -> StoreCorrupt:
    return StoreCorrupt(
        f"{path} is damaged: record {str(record_id)!r} of namespace {namespace!r} no longer matches "
        "its stored SHA-256 (its bytes changed on disk); nothing was read or written: restore the file "
        "from a backup (writes stay refused until then)"
    )


def checked(path: Path | str, namespace: str, rows: Iterable[tuple[Any, Any, Any]]) -> list[str]:
    """The texts of ``rows`` (id, text as bytes or str, stored SHA-256), each checked against its
    hash before it is decoded; the first mismatch raises :func:`damaged`."""
    bodies = []
    for record_id, body, sha in rows:
        raw = bytes(body) if isinstance(body, (bytes, bytearray, memoryview)) else str(body).encode()
        if hashlib.sha256(raw).hexdigest() != sha:
            raise damaged(path, namespace, record_id)
        bodies.append(raw.decode() if isinstance(body, (bytes, bytearray, memoryview)) else body)
    return bodies


def found(db: Any) -> str | None:
    """The damage a read recorded in this file, if any."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (DAMAGED,)).fetchone()
    return None if row is None else str(row[0])


def record_found(db: Any, message: str) -> None:
    """Record ``message`` as the file's damage (its own transaction: the caller's write rolled back)."""
    with db:
        db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (DAMAGED, message))


def header_damaged(path: Path) -> bool:
    """Whether a file SQLite cannot read as a database holds a MUSTER store's schema: a store whose
    header is damaged, not another file. Read with ``open()``, which drops this process's POSIX
    locks on the file: a file SQLite refuses holds none worth keeping."""
    try:
        with open(path, "rb") as file:
            head = file.read(_HEADER_SCAN)
    except OSError:
        return False
    return all(text in head for text in _MUSTER_SCHEMA)
