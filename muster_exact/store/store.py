"""``Store``: open and close a store file, ``add`` and ``delete`` records (validated first, one
transaction each, idempotent by ``request_id``), and the secure erase a delete ends with."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import connect
from muster_exact.core.errors import (
    ErasePending,
    InputError,
    StoreError,
    StoreReadOnly,
)
from muster_exact.store.file import (
    access_of,
    check_path,
    checkpoint,
    guarded,
    prepare,
    sqlite_errors,
    transaction,
)
from muster_exact.store.reads import StoreReads
from muster_exact.store.results import AddResult, DeleteResult, Head, _chain, _replayed, no_record
from muster_exact.store.state import DEFAULT_NAMESPACE, ERASE_WAIT_MS, PENDING_ERASURES
from muster_exact.store.validation import (
    canonical,
    check_namespace,
    checked_delete,
    checked_request_id,
    validate,
)

log = logging.getLogger(__name__)


class Store(StoreReads):
    """One namespace of a MUSTER store file. Open with :meth:`open`; use as a context manager."""

    @classmethod
    def open(
        cls,
        path: str | Path,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        preset: str | None = None,
        models: Any = None,
        create: bool = True,
        reembed: bool = False,
    ) -> Store:
        """Open (or, unless ``create=False``, create) the store file at ``path`` and one namespace in it.

        Without write access to the file or its folder the store opens read-only. Reads keep to
        the embedder the namespace was first read with (:mod:`muster_exact.store.models`);
        ``reembed=True`` lets ``models`` replace it, and the next read embeds every unit anew.
        """
        path = Path(path)
        check_namespace(namespace)
        exists = check_path(path)
        if not exists and not create:
            raise StoreError(f"no store at {path}; add records first (muster add --store {path} FILE)")
        access = access_of(path)
        if not exists and access != "rw":
            raise StoreReadOnly(f"cannot create {path}: the folder {path.parent} is read-only")
        with sqlite_errors(path):
            db = connect(path, access, timeout=60, isolation_level=None, check_same_thread=False)
            try:
                prepare(db, path, exists, access)
                store = cls(path, db, namespace, preset, models, access, reembed)
                store._finish_erasures(wait_ms=0)  # a delete that a reader held back: try again now
            except BaseException:
                db.close()
                raise
        return store

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._unsaved and self._memory is not None and not self.read_only:
            try:
                self._save(*self._memory)
            except StoreError as exc:  # only a cache: the next open derives afresh
                log.warning("%s: the derive result was not saved on close (%s)", self.path, exc)
        if self._caches is not None:
            for cache in self._caches:
                cache.close()
            self._caches = None
        self._memory = None
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @guarded
    def add(self, records: Any, request_id: str | None = None) -> AddResult:
        """Write ``records`` (one or a list) in one transaction; no model is called.

        A ``request_id`` applied before returns that add's result and writes nothing.
        """
        if request_id is not None:
            checked_request_id(request_id)
        items = validate(records)
        self._check_writable()
        with self._lock:
            result = self._add(items, request_id)
            self._finish_erasures(wait_ms=0)
        return result

    def _add(self, items: list[dict[str, Any]], request_id: str | None) -> AddResult:
        with transaction(self._db):
            if request_id is not None:
                previous = self._db.execute(
                    "SELECT result FROM requests WHERE namespace = ? AND request_id = ?",
                    (self.namespace, request_id),
                ).fetchone()
                if previous is not None:
                    return _replayed(json.loads(previous[0]))
            head = self._head()
            seq, sha = head.last_seq, head.sha256
            now = time.time()
            ids = []
            given = {item["id"] for item in items if "id" in item}
            for item in items:
                seq += 1
                record_sha = self._insert(item, seq, given, request_id, now)
                sha = _chain(sha, record_sha)
                ids.append(item["id"])
            new_head = Head(self.namespace, head.records + len(items), seq, sha)
            self._write_head(new_head)
            result = AddResult(request_id, tuple(ids), new_head)
            if request_id is not None:
                self._db.execute(
                    "INSERT INTO requests VALUES (?, ?, ?)",
                    (self.namespace, request_id, json.dumps(result.to_dict())),
                )
        return result

    @guarded
    def delete(
        self, record_ids: Sequence[str] | None = None, *, request_id: str | None = None
    ) -> DeleteResult:
        """Remove records (by id, or all that one request added) and every cached trace of them.

        An id the namespace does not hold is refused and nothing is deleted; a request id that
        added nothing here deletes nothing. Returns when the text is gone from the file and its
        write-ahead log. When another connection's read keeps the old pages for
        ``ERASE_WAIT_MS``, raises :class:`ErasePending` (its ``result`` is this delete's): the
        records are deleted, the erase is recorded in the file and retried on the next open or
        write.
        """
        record_ids, request_id = checked_delete(record_ids, request_id)
        self._check_writable()
        with self._lock:
            result = self._delete(record_ids, request_id)
            if not self._finish_erasures(wait_ms=ERASE_WAIT_MS):
                raise ErasePending(
                    f"deleted {len(result.deleted)} record(s) from {self.path}, but their text is still on "
                    "disk: another connection is in the middle of a read; the erase is retried on the "
                    "store's next open or write (`muster info` shows it pending)",
                    result,
                )
        return result

    def _delete(self, record_ids: Sequence[str] | None, request_id: str | None) -> DeleteResult:
        with transaction(self._db):
            if request_id is not None:
                rows = self._db.execute(
                    "SELECT id FROM records WHERE namespace = ? AND request_id = ? ORDER BY seq",
                    (self.namespace, request_id),
                ).fetchall()
                wanted = [row[0] for row in rows]
            else:
                wanted = list(record_ids or [])  # checked: each id once
                missing = [i for i in wanted if not self._has(i)]
                if missing:
                    raise no_record(missing[0], self.namespace)
            self._db.executemany(
                "DELETE FROM records WHERE namespace = ? AND id = ?", [(self.namespace, i) for i in wanted]
            )
            self._write_head(self._recomputed_head())
            # The saved derive result names slots (words of the records): it goes with them.
            self._db.execute("DELETE FROM built WHERE namespace = ?", (self.namespace,))
            # Recorded with the delete itself: a process killed before the erase leaves it pending.
            self._db.execute(
                "INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET value = value + 1",
                (PENDING_ERASURES,),
            )
        vectors, scores = self._forget_units()
        self._memory = self._plan = None
        self.memo = Memo(self.memo.backing)  # nothing of the deleted text stays in this process
        return DeleteResult(tuple(wanted), self._head(), vectors, scores)

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreReadOnly(
                f"{self.path} is read-only (no write access to the file or its folder); reads work, "
                "writes need write access"
            )

    def _finish_erasures(self, wait_ms: int) -> bool:
        """Erase what pending deletes left on disk; True when nothing is pending any more.

        A full checkpoint copies every page (the zeroed ones included) into the main file and
        empties the write-ahead log; a reader holding older pages makes it give up after
        ``wait_ms``. The pending record is cleared only after the erase succeeded.
        """
        with self._lock:
            if self.read_only or not self._pending():
                return True
            if not checkpoint(self._db, wait_ms):
                log.info("%s: erasing deleted text is still pending (another connection reads)", self.path)
                return False
            with transaction(self._db):
                self._db.execute("DELETE FROM meta WHERE key = ?", (PENDING_ERASURES,))
            checkpoint(self._db, 0)  # the cleared record itself holds no deleted text
            return True

    def _pending(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (PENDING_ERASURES,)).fetchone()
        return 0 if row is None else int(row[0])

    @guarded
    def pending_erasures(self) -> int:
        """Deletes whose text may still be on disk (another connection's read held the erase back)."""
        with self._lock:
            return self._pending()

    def _insert(
        self, item: dict[str, Any], seq: int, given: set[str], request_id: str | None, now: float
    ) -> str:
        """Insert one record (the caller holds the transaction); its SHA-256.

        A record without an id is named ``r<seq>``, or ``r<seq>.2``, ``.3``... when a caller's
        own id already holds that name: the unique index says so, no lookup first.
        """
        generated = "id" not in item
        base, n = f"r{seq}", 1
        while True:
            if generated:
                item["id"] = base if n == 1 else f"{base}.{n}"
            if not (generated and item["id"] in given):
                body = canonical(item)
                record_sha = hashlib.sha256(body.encode()).hexdigest()
                inserted = self._db.execute(
                    "INSERT OR IGNORE INTO records VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (self.namespace, seq, item["id"], body, record_sha, request_id, now),
                ).rowcount
                if inserted:
                    return record_sha
                if not generated:
                    raise InputError(
                        f"record id {item['id']!r} is already in namespace {self.namespace!r}; ids are unique"
                    )
            n += 1

    def _has(self, record_id: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM records WHERE namespace = ? AND id = ?", (self.namespace, record_id)
        ).fetchone()
        return row is not None
