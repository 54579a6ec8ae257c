"""A store's state over its one SQLite connection: the namespace's head and records, read in one
snapshot, and the text hashes its caches are keyed by (what ``delete`` keeps and drops)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import Access, best_effort
from muster_exact.core.errors import InputError, StoreCorrupt, StoreReadOnly
from muster_exact.store import integrity
from muster_exact.store.file import (
    guarded,
    transaction,
)
from muster_exact.store.results import EMPTY_HEAD, Head, _chain

if TYPE_CHECKING:
    from muster_exact.derive.cut import Cut, Unit
    from muster_exact.derive.plan import Plan
    from muster_exact.memory import Memory
    from muster_exact.models import Models


DEFAULT_NAMESPACE = "default"
# How long a delete waits for other connections' reads to end before it reports its erase pending.
ERASE_WAIT_MS = 5_000
PENDING_ERASURES = "pending_erasures"  # meta key: deletes whose text may still be on disk
# An open store retries a pending erase in the background: first after this many seconds, then
# twice as long each time up to the second value (a try costs one checkpoint attempt, no wait).
ERASE_RETRY_S = (0.25, 5.0)
# A grown memory's derive result is saved on close or after this many growths (saving is linear
# in the units; a growth is not): a process killed between saves costs its next open a derive.
SAVE_AFTER_GROWTHS = 32


class StoreState:
    """The state every part of a :class:`~muster_exact.store.Store` shares: one namespace of one file."""

    def __init__(
        self,
        path: Path | str,
        db: sqlite3.Connection,
        namespace: str,
        preset: str | None,
        models: Any,
        access: Access = "rw",
        reembed: bool = False,
        engine: Any = None,
    ) -> None:
        from muster_exact.store.engines.sqlite import SQLITE

        self.path = path  # a file, or a database's URL with its password hidden
        self._engine = SQLITE if engine is None else engine  # what differs by database
        self.namespace = namespace
        self.preset = preset
        self.models = models  # as named (None: $MUSTER_MODELS, else the store's own, else the preset's)
        self.reembed = reembed
        self._reads: Models | None = None  # what reads use, held to the recorded embedder
        self.access = access
        self._db = db
        self._memory: tuple[Head, Memory] | None = None
        # The records the built memory is of (by head hash): what a filter and metadata read.
        self._read_records: tuple[str, list[dict[str, Any]]] | None = None
        self._plan: tuple[str, Plan] | None = None
        self._caches: Any = None
        # One connection, shared by the threads of a server: every use of it holds this lock,
        # briefly (never across a model call, so an add never waits for a read's embedding).
        self._lock = threading.RLock()
        # The built memory and what goes with it (plan, memo, caches): a read holds this for its
        # whole build, and so do the writes that remove text (a build must not cache text they
        # erase); an add does not take it. Taken before ``_lock``, never while holding it.
        self._reading = threading.RLock()
        self._closed = threading.Event()
        self._retrying_erase = False  # a background thread retries a pending erase (under _lock)
        self.embedded = 0  # unit texts embedded by the last rebuild (0 when read from the file)
        # Why the last read built the memory afresh rather than growing the one before (None: it
        # grew it, or nothing was read yet).
        self.rebuilt_because: str | None = None
        self._unsaved = 0  # growths since the derive result was last saved
        # The damaged record a read found, here or in any process: writes and reads are refused
        # (:meth:`_refuse_damage`, which looks again while none is known).
        self._damage: str | None = integrity.found(db)
        # Per-text work of the last build (muster_exact.cache.memo): a read after an add analyses the
        # new records and the units they change, not the store. Started anew on delete.
        self.memo = Memo()
        self.progress = (
            False  # progress on stderr for a long rebuild (the CLI sets it; muster_exact.core.progress)
        )

    @property
    def read_only(self) -> bool:
        return self.access != "rw"

    @guarded
    def head(self) -> Head:
        with self._lock:
            return self._head()

    def _head(self) -> Head:
        with self._lock:
            self._refuse_damage()
            return head_of(self._db, self.namespace).read_by(self._plan_of)

    def _refuse_damage(self) -> None:
        """:class:`StoreCorrupt` once damage is known: found by this store, or recorded in the file
        by another process since this one opened it (a server's warm memory would otherwise go on
        answering, and taking writes, from a file every other process refuses). One keyed row."""
        if self._damage is None:
            self._damage = integrity.found(self._db)
        if self._damage is not None:
            raise StoreCorrupt(self._damage)

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreReadOnly(
                f"{self.path} is read-only (no write access to the file or its folder); reads work, "
                "writes need write access"
            )
        self._refuse_damage()

    @guarded
    def records(self) -> Iterator[dict[str, Any]]:
        """The namespace's records in the order they were added (a consistent snapshot)."""
        with self._lock:
            rows = self._records()
        return (json.loads(body) for body in rows)

    def _records(self) -> list[str]:
        """The namespace's records (JSON texts) in order, each checked against its SHA-256."""
        rows = self._db.execute(
            f"SELECT id, {self._engine.record_bytes}, sha256 FROM records WHERE namespace = ? ORDER BY seq",
            (self.namespace,),
        ).fetchall()
        return self._checked(rows)

    def _stored(self, record_id: str, namespace: str | None = None) -> str | None:
        """One record's text (checked), or None when the namespace does not hold it."""
        row = self._db.execute(
            f"SELECT id, {self._engine.record_bytes}, sha256 FROM records WHERE namespace = ? AND id = ?",
            (namespace or self.namespace, record_id),
        ).fetchone()
        return None if row is None else self._checked([row], namespace)[0]

    def _checked(self, rows: Iterable[tuple[Any, Any, Any]], namespace: str | None = None) -> list[str]:
        """Texts of (id, text, SHA-256) rows of ``namespace`` (this one's by default), checked
        (:mod:`muster_exact.store.integrity`); a mismatch is :class:`StoreCorrupt`, and this store
        refuses writes from then on."""
        try:
            return integrity.checked(self.path, namespace or self.namespace, rows)
        except StoreCorrupt as exc:
            self._damage = str(exc)
            raise

    def _damage_found(self) -> None:
        """After a public method met damage: record it in the file, so writes in every process
        refuse it (best effort: a read-only file keeps it to this store)."""
        if self._damage is not None and not self.read_only:
            with best_effort(f"the damage found in {self.path}"):
                integrity.record_found(self._db, self._damage)

    @guarded
    def verified_head(self) -> Head:
        """The head, once every record of the namespace was read and found to match its stored
        SHA-256 (:class:`StoreCorrupt` naming the first that does not); what ``muster info`` shows."""
        with self._lock, transaction(self._db, immediate=False):
            head = self._head()
            self._records()
        return head

    @guarded
    def namespaces(self) -> list[str]:
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT namespace FROM heads ORDER BY namespace")]

    @guarded
    def has_namespace(self, namespace: str) -> bool:
        """Whether the file holds a namespace of exactly this name."""
        with self._lock:
            return holds(self._db, namespace)

    @guarded
    def namespace_records(self) -> dict[str, int]:
        """Every namespace of the file and how many records it holds, by name (one read of the heads)."""
        with self._lock:
            rows = self._db.execute("SELECT namespace, records FROM heads ORDER BY namespace").fetchall()
        return {str(name): int(count) for name, count in rows}

    def _snapshot(self) -> tuple[Head, list[dict[str, Any]]]:
        """The head and its records, read in one transaction (no add can fall between them)."""
        from muster_exact.text.fields import StoredRecords

        with self._lock, transaction(self._db, immediate=False):
            head = self._head()
            # The store's own records: checked when written, read as stored (text.fields).
            records = StoredRecords(json.loads(body) for body in self._records())
        if not records:
            raise InputError(f"namespace {self.namespace!r} of {self.path} is empty; add records first")
        return head, records

    def _write_head(self, head: Head) -> None:
        self._db.execute(
            "INSERT INTO heads VALUES (?, ?, ?, ?) ON CONFLICT (namespace) DO UPDATE SET "
            "records = excluded.records, last_seq = excluded.last_seq, sha256 = excluded.sha256",
            (head.namespace, head.records, head.last_seq, head.sha256),
        )

    def _recomputed_head(self) -> Head:
        sha, count, last = EMPTY_HEAD, 0, 0
        for seq, record_sha in self._db.execute(
            "SELECT seq, sha256 FROM records WHERE namespace = ? ORDER BY seq", (self.namespace,)
        ):
            sha, count, last = _chain(sha, record_sha), count + 1, int(seq)
        previous = self._head()
        return Head(self.namespace, count, max(last, previous.last_seq), sha)

    def _open_caches(self) -> tuple[Any, Any]:
        if self._caches is None:
            self._caches = self._engine.caches(self.path, self.access, self._db, self._lock)
            self.memo.backing = self._caches[2]
        return self._caches[:2]  # type: ignore[no-any-return]

    def _remember_units(self, memory: Memory) -> None:
        """Which texts this namespace uses now: what ``delete`` keeps in the caches."""
        self._replace_unit_keys(_live_keys(memory.cut, memory.pieces.texts))

    def _remember_growth(self, memory: Memory) -> None:
        """The texts a grown memory added: its new records, units and pieces (the units it cut
        again no longer count, but their texts are made of records still here; the next delete
        recounts every key)."""
        assert memory.growth is not None
        keep = memory.growth.first_unit
        tail = memory.cut.units[keep:]
        pieces = memory.pieces.texts[memory.pieces.start[keep] if tail else len(memory.pieces.texts) :]
        keys = _live_keys(memory.cut, pieces, tail)
        with self._lock, transaction(self._db):
            self._db.executemany(
                "INSERT INTO unit_keys VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(self.namespace, k) for k in keys],
            )

    def _replace_unit_keys(self, keys: list[str]) -> None:
        """A read's: nothing is written (no lock of the file taken) when the keys did not change."""
        with self._lock:
            if set(keys) == self._unit_keys():
                return
            with transaction(self._db):
                self._write_unit_keys(keys)

    def _unit_keys(self) -> set[str]:
        rows = self._db.execute("SELECT sha256 FROM unit_keys WHERE namespace = ?", (self.namespace,))
        return {row[0] for row in rows}

    def _write_unit_keys(self, keys: list[str]) -> None:
        """Only the change is written (after an add: the new record's and its units' keys), in
        the caller's transaction."""
        wanted, known = set(keys), self._unit_keys()
        self._db.executemany(
            "DELETE FROM unit_keys WHERE namespace = ? AND sha256 = ?",
            [(self.namespace, k) for k in sorted(known - wanted)],
        )
        self._db.executemany(
            "INSERT INTO unit_keys VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(self.namespace, k) for k in sorted(wanted - known)],
        )

    def _plan_of(self, head: Head) -> Plan:  # the plan reader (StoreReads); a head reads by it
        raise NotImplementedError


def head_of(db: sqlite3.Connection, namespace: str) -> Head:
    """The head of ``namespace`` in the file ``db`` is connected to (an empty one when it has none)."""
    row = db.execute(
        "SELECT records, last_seq, sha256 FROM heads WHERE namespace = ?", (namespace,)
    ).fetchone()
    if row is None:
        return Head(namespace, 0, 0, EMPTY_HEAD)
    return Head(namespace, int(row[0]), int(row[1]), str(row[2]))


def holds(db: sqlite3.Connection, namespace: str) -> bool:
    """Whether the file ``db`` is connected to holds a namespace of exactly this name."""
    try:
        row = db.execute("SELECT 1 FROM heads WHERE namespace = ?", (namespace,)).fetchone()
    except UnicodeEncodeError:  # a lone surrogate: no file holds one
        return False
    return row is not None


def _live_keys(cut: Cut, piece_texts: Sequence[str], units: Sequence[Unit] | None = None) -> list[str]:
    """Text hashes the caches key by: records and units (counts, terms, entities, cross-encoder
    scores) and pieces (vectors). ``units``: only these units and their records (a growth's)."""
    chosen = cut.units if units is None else units
    records = (
        cut.source.records
        if units is None
        else [cut.source.records[r] for r in sorted({r for u in chosen for r in u.records})]
    )
    texts = (
        *(cut.source.record_text(r) for r in records),
        *(cut.text(u) for u in chosen),
        *(cut.retrieval_text(u) for u in chosen),
        *piece_texts,
    )
    return sorted({hashlib.sha256(t.encode()).hexdigest() for t in texts})
