"""``Store``: open and close a store file, ``add`` and ``delete`` records (validated first, one
transaction each, idempotent by ``request_id``), and the secure erase a delete ends with."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import best_effort, connect, database_errors
from muster_exact.core.errors import (
    ErasePending,
    InputError,
    RequestConflict,
    StoreError,
    StoreReadOnly,
)
from muster_exact.store.arguments import add_sha, check_open, record_delete, replayed_delete
from muster_exact.store.dump import StoreDump
from muster_exact.store.file import (
    access_of,
    check_path,
    guarded,
    prepare,
    sqlite_errors,
    transaction,
)
from muster_exact.store.reads import StoreReads
from muster_exact.store.results import (
    AddResult,
    DeleteResult,
    Head,
    UpdateResult,
    _chain,
    _replayed,
    no_record,
)
from muster_exact.store.state import (
    DEFAULT_NAMESPACE,
    ERASE_RETRY_S,
    ERASE_WAIT_MS,
    PENDING_ERASURES,
    holds,
)
from muster_exact.store.validation import (
    canonical,
    check_namespace,
    checked_delete,
    checked_fields,
    checked_id,
    checked_request_id,
    patched,
    validate,
)

log = logging.getLogger(__name__)


class Store(StoreDump, StoreReads):
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

        ``path`` may instead be a ``postgresql://`` (or ``postgres://``) URL: the store is then
        that database's (its schema made by the first open; :mod:`muster_exact.store.engines`).

        ``namespace`` is checked by :func:`~muster_exact.store.validation.check_namespace` (taken
        in NFC; a name the file already holds opens as stored). Without write access to the file
        or its folder the store opens read-only. Reads keep to the embedder the namespace was
        first read with (:mod:`muster_exact.store.models`); ``reembed=True`` lets ``models``
        replace it, and the next read embeds every unit anew.
        """
        from muster_exact.store.engines import postgres

        check_open(path, models)  # before anything is opened: a bad argument makes no file
        if postgres.is_postgres(path):
            return postgres.opened(cls, str(path), namespace, preset, models, create, reembed)
        path = Path(path)
        exists = check_path(path)
        if not exists:
            namespace = check_namespace(namespace)  # a refused name makes no file
            if not create:
                raise StoreError(f"no store at {path}; add records first (muster add --store {path} FILE)")
        access = access_of(path)
        if not exists and access != "rw":
            raise StoreReadOnly(f"cannot create {path}: the folder {path.parent} is read-only")
        with sqlite_errors(path, "open"):
            db = connect(path, access, timeout=60, isolation_level=None, check_same_thread=False)
            try:
                prepare(db, path, access)
                namespace = check_namespace(namespace, held=partial(holds, db))
                store = cls(path, db, namespace, preset, models, access, reembed)
                store._finish_erasures(wait_ms=0)  # a delete that a reader held back: try again now
            except BaseException:
                db.close()
                raise
        return store

    def close(self) -> None:
        with self._reading, self._lock:  # after a read in progress: its build ends first
            self._close()

    def _close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()  # the erase retrier stops; no new one starts
        if self._unsaved and self._memory is not None and not self.read_only:
            with best_effort(f"the derive result of {self.path} on close"):  # the next open derives
                self._save(*self._memory)
        if self._caches is not None:
            for cache in self._caches:
                cache.close()
            self._caches = None
        self._memory = None
        with best_effort(f"the pending erase of {self.path} on close"):  # the next open retries it
            self._finish_erasures(wait_ms=0)  # the reads that held it back may have ended since
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
            with best_effort(f"the pending erase of {self.path}"):  # the add is written: say so
                self._finish_erasures(wait_ms=0)
        return result

    def _add(self, items: list[dict[str, Any]], request_id: str | None) -> AddResult:
        body_sha = add_sha(items)  # before ids are given: the body as the caller sent it
        with transaction(self._db):
            if request_id is not None:
                previous = self._db.execute(
                    "SELECT result, body_sha256 FROM requests WHERE namespace = ? AND request_id = ?",
                    (self.namespace, request_id),
                ).fetchone()
                if previous is not None:
                    # NULL: written before bodies were recorded (schema 3), a replay as it was then.
                    if previous[1] is not None and previous[1] != body_sha:
                        raise RequestConflict(
                            f"request_id {request_id!r} was used in namespace {self.namespace!r} for "
                            "an add with a different body; nothing was written. Use a new request id "
                            "for new records (the same body again is a replay)"
                        )
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
                    "INSERT INTO requests VALUES (?, ?, ?, ?)",
                    (self.namespace, request_id, json.dumps(result.to_dict()), body_sha),
                )
        return result

    @guarded
    def delete(
        self, record_ids: Sequence[str] | None = None, *, request_id: str | None = None
    ) -> DeleteResult:
        """Remove records (by id, or all that one request added) and every cached trace of them.
        With ids, ``request_id`` is the delete's own: a retry of it is answered as done.
        An id the namespace does not hold is refused and nothing is deleted; a request id alone
        that added nothing here deletes nothing. Returns when the text is gone from the file and its
        write-ahead log. When another connection's read keeps the old pages for
        ``ERASE_WAIT_MS``, raises :class:`ErasePending` (its ``result`` is this delete's): the
        records are deleted, the erase is recorded in the file and retried in the background while
        this store stays open (``ERASE_RETRY_S``), on close, and on the next open or write.
        """
        record_ids, request_id = checked_delete(record_ids, request_id)
        self._check_writable()
        with self._reading, self._lock:  # a read's build must not cache the text this erases
            result = self._delete(record_ids, request_id)
            self._erase(result, f"deleted {len(result.deleted)} record(s) from {self.path}, but their text")
        return result

    @guarded
    def update(self, record_id: Any, record: Any) -> UpdateResult:
        """Replace one record (its text, speaker, time and metadata) in place: its id and its place
        in the stored order stay, and the next read equals a fresh build over the records as they
        are now; a field the new record lacks is gone (:meth:`patch` keeps what it is not given).
        The old text is erased as :meth:`delete` erases it (:class:`ErasePending` the same way);
        one history line says when the record changed, never what it said."""
        record_id = checked_id(record_id, "the record id")
        item = validate([record])[0]
        if item.setdefault("id", record_id) != record_id:
            raise InputError(
                f"the record carries id {item['id']!r} but updates {record_id!r}; an update keeps the "
                "record's id (leave 'id' out, or delete and add to rename)"
            )
        return self._replace(record_id, lambda _stored: item)

    @guarded
    def patch(self, record_id: Any, fields: Any) -> UpdateResult:
        """Change the fields given and keep the others, as :meth:`update` otherwise: a JSON merge
        patch (RFC 7396; a field given as None is removed, ``metadata`` merges key by key), read and
        written in one transaction, so a concurrent change is never lost."""
        record_id = checked_id(record_id, "the record id")
        fields = checked_fields(fields, record_id)
        return self._replace(record_id, lambda stored: patched(stored, fields, record_id))

    def _replace(self, record_id: str, new: Callable[[dict[str, Any]], dict[str, Any]]) -> UpdateResult:
        self._check_writable()
        with self._reading, self._lock:  # as delete
            result = self._update(record_id, new)
            if result.changed:
                self._erase(result, f"updated record {record_id!r} in {self.path}, but its old text")
        return result

    def _update(self, record_id: str, new: Callable[[dict[str, Any]], dict[str, Any]]) -> UpdateResult:
        with transaction(self._db):
            stored = self._stored(record_id)
            if stored is None:
                raise no_record(record_id, self.namespace, "nothing updated")
            body = canonical(new(json.loads(stored)))
            if stored == body:  # the same record again: nothing to write, nothing to erase
                return UpdateResult(record_id, self._head(), changed=False)
            self._db.execute(
                "UPDATE records SET record = ?, sha256 = ? WHERE namespace = ? AND id = ?",
                (body, hashlib.sha256(body.encode()).hexdigest(), self.namespace, record_id),
            )
            self._db.execute(
                "INSERT INTO history VALUES (?, ?, 'updated', ?)", (self.namespace, record_id, time.time())
            )
            self._write_head(self._recomputed_head())
            vectors, scores = self._text_removed()
        self._forget_in_process()
        return UpdateResult(record_id, self._head(), True, vectors, scores)

    def _erase(self, result: DeleteResult | UpdateResult, what: str) -> None:
        """Finish the erase a delete or an update started, or say it is pending (:class:`ErasePending`)."""
        if not self._finish_erasures(wait_ms=ERASE_WAIT_MS):
            raise ErasePending(
                f"{what} is still on disk: another connection is in the middle of a read; the erase is "
                "retried while the store stays open and on its next open or write (`muster info` shows "
                "it pending)",
                result,
            )

    def _text_removed(self) -> tuple[int, int]:
        """Within a write that removed text: drop the saved derive result (it names slots, words of
        the records), keep in the caches only texts still in use, and record the erase, so a
        process killed before it leaves it pending. In the write's one transaction: on a full disk
        it fails whole. The vectors and scores dropped."""
        self._db.execute("DELETE FROM built WHERE namespace = ?", (self.namespace,))
        self._db.execute(
            "INSERT INTO meta VALUES (?, '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(meta.value AS INTEGER) + 1",
            (PENDING_ERASURES,),
        )
        return self._forget_units()

    def _forget_in_process(self) -> None:
        """After a write that removed text: nothing of it stays in this process."""
        self._memory = self._plan = self._read_records = None
        self.memo = Memo(self.memo.backing)

    def _delete(self, record_ids: Sequence[str] | None, request_id: str | None) -> DeleteResult:
        with transaction(self._db):
            if record_ids is None:  # every record the add with this request id added
                rows = self._db.execute(
                    "SELECT id FROM records WHERE namespace = ? AND request_id = ? ORDER BY seq",
                    (self.namespace, request_id),
                ).fetchall()
                wanted = [row[0] for row in rows]
            else:
                wanted = list(record_ids)  # checked: each id once
                if request_id is not None and replayed_delete(self._db, self.namespace, request_id, wanted):
                    return DeleteResult(tuple(wanted), self._head(), 0, 0)  # a retry: done before
                missing = [i for i in wanted if not self._has(i)]
                if missing:
                    raise no_record(missing[0], self.namespace)
                if request_id is not None:  # this delete's own id: a retry of it finds it
                    record_delete(self._db, self.namespace, request_id, wanted)
            gone = [(self.namespace, i) for i in wanted]
            self._db.executemany("DELETE FROM records WHERE namespace = ? AND id = ?", gone)
            self._db.executemany("DELETE FROM history WHERE namespace = ? AND id = ?", gone)
            self._write_head(self._recomputed_head())
            vectors, scores = self._text_removed()
        self._forget_in_process()
        return DeleteResult(tuple(wanted), self._head(), vectors, scores)

    def _finish_erasures(self, wait_ms: int) -> bool:
        """Erase what pending deletes left on disk; True when nothing is pending any more.

        A full checkpoint copies every page (the zeroed ones included) into the main file and
        empties the write-ahead log; a reader holding older pages makes it give up after
        ``wait_ms``. The pending record is cleared only after the erase succeeded.
        """
        with self._lock:
            if self.read_only or not self._pending():
                return True
            if not self._engine.erase(self._db, wait_ms):
                if not self._retrying_erase:  # one line, not one per background retry
                    log.info("%s: erasing deleted text is pending (another connection reads)", self.path)
                self._retry_erasures_later()
                return False
            # Erased; a record left behind (a full disk) only makes the next open or write check again.
            with best_effort(f"the end of a pending erase in {self.path}"):
                with transaction(self._db):
                    self._db.execute("DELETE FROM meta WHERE key = ?", (PENDING_ERASURES,))
                self._engine.erased(self._db)  # the cleared record itself holds no deleted text
            return True

    def _retry_erasures_later(self) -> None:
        """Start the thread that retries the pending erase until it succeeds or the store closes
        (the caller holds the lock): the erase then ends soon after the last read holding it back
        does, with no write or open after it."""
        if self._retrying_erase or self._closed.is_set():
            return
        self._retrying_erase = True
        threading.Thread(target=self._erase_when_free, name="muster-erase", daemon=True).start()

    def _erase_when_free(self) -> None:
        wait, longest = ERASE_RETRY_S
        while True:
            self._closed.wait(wait)
            with self._lock:
                if self._closed.is_set() or self._erased_in_background():
                    self._retrying_erase = False
                    return
            wait = min(2 * wait, longest)

    def _erased_in_background(self) -> bool:
        """One retry of the pending erase: True when it is done (or cannot be retried here)."""
        try:
            return self._finish_erasures(wait_ms=0)
        except database_errors() as exc:
            log.warning(
                "%s: retrying the pending erase failed (%s); it is retried on the next open or write",
                self.path,
                exc,
            )
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
                    "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
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
