"""``Store``: a memory that grows, in one SQLite file.

    with Store.open("agent.muster", models="cpu-small") as store:
        store.add({"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon."},
                  request_id="turn-1")
        print(store.context("Where does Caroline live?").text)

* ``add`` validates first, then writes every given record in one
  transaction and calls no model. A ``request_id`` seen before returns the
  original result and writes nothing (retries are safe, also from two
  processes at once: writers are serialised by SQLite).
* The next read gives exactly what a fresh :func:`muster_exact.build` of the
  same records gives. After adds it grows the last read's memory
  (:meth:`Memory.grown`): detection's running counts take the new records,
  the last unit and the new records are cut, and only the changed units are
  analysed and embedded; a delete, or new records that change the branch,
  build afresh (``rebuilt_because`` says why). Per-text work (token counts,
  BM25 terms, entities, word pieces: :mod:`muster_exact.cache.memo`), unit vectors,
  cross-encoder scores and the last derive result (plan, units, parents:
  :mod:`muster_exact.derive.saved`) are kept in the same file, so a new process
  cuts nothing and analyses or embeds only texts never seen before.
* ``delete`` removes records and every cached trace of them: vectors and
  scores of units that no longer exist are dropped, deleted pages are zeroed
  (``secure_delete``) and the write-ahead log is copied into the file and
  truncated. It returns when the text is gone from every file, or raises
  :class:`ErasePending` when another connection's read holds the old pages:
  the pending erase is recorded in the file and retried on the next open or
  write (``pending_erasures()``, ``muster info``). A request whose records
  were deleted stays applied: retrying it does not bring them back.
* Namespaces: one file holds independent memories (``namespace="user-42"``);
  a read sees only its own.

The file is WAL-mode SQLite with a versioned schema (``meta.schema_version``)
and migrations applied on open; a file from a newer MUSTER is refused, as is
a file that is not a MUSTER store (or holds another program's tables), and
another program's file is never altered. A killed process leaves each
``add`` either whole or absent. A file without write access (or in a folder
without it) opens read-only: reads work and cache nothing. Every SQLite
failure leaves as a typed :class:`StoreError` (``StoreCorrupt``,
``StoreFull``, ``StoreReadOnly``), mapped in one place.

Here: the :class:`Store` and its results. The file itself (schema, migrations, opening, typed
SQLite errors) is :mod:`muster_exact.store.file`; what ``add`` accepts,
:mod:`muster_exact.store.validation`; records from a file for ``muster add``,
:mod:`muster_exact.store.input`. Their public names are importable from here too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import Access, connect, drop_texts_not_in
from muster_exact.core.errors import (
    ErasePending,
    InputError,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreReadOnly,
)
from muster_exact.core.limits import MAX_ADD_CHARS, MAX_ID_CHARS, MAX_METADATA_DEPTH, MAX_RECORD_CHARS
from muster_exact.store.file import (
    BUILT_SCHEMA,
    MIGRATIONS,
    SCHEMA,
    SCHEMA_VERSION,
    access_of,
    check_path,
    checkpoint,
    prepare,
    sqlite_errors,
    transaction,
)
from muster_exact.store.input import read_records_file
from muster_exact.store.validation import (
    canonical,
    check_namespace,
    check_unicode,
    checked_delete,
    checked_request_id,
    validate,
)

if TYPE_CHECKING:
    from muster_exact.derive import Derived
    from muster_exact.derive.cut import Cut, Unit
    from muster_exact.derive.plan import Plan
    from muster_exact.memory import Memory
    from muster_exact.models import Models
    from muster_exact.retrieve.assemble import Context

# The public names, and those callers imported from here before the file, validation and input
# concerns had modules of their own (store_file, store_validation, store_input).
__all__ = [
    "BUILT_SCHEMA",
    "MAX_ADD_CHARS",
    "MAX_ID_CHARS",
    "MAX_METADATA_DEPTH",
    "MAX_RECORD_CHARS",
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "AddResult",
    "DeleteResult",
    "ErasePending",
    "Head",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreReadOnly",
    "canonical",
    "check_namespace",
    "check_unicode",
    "read_records_file",
    "validate",
]

log = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "default"
# How long a delete waits for other connections' reads to end before it reports its erase pending.
ERASE_WAIT_MS = 5_000
PENDING_ERASURES = "pending_erasures"  # meta key: deletes whose text may still be on disk
EMPTY_HEAD = hashlib.sha256(b"muster-store").hexdigest()
# A grown memory's derive result is saved on close or after this many growths (saving is linear
# in the units; a growth is not): a process killed between saves costs its next open a derive.
SAVE_AFTER_GROWTHS = 32


@dataclass(frozen=True)
class Head:
    """The current version of one namespace: record count, last sequence number, content hash."""

    namespace: str
    records: int
    last_seq: int
    sha256: str

    @property
    def plan(self) -> Plan:
        """The plan of this head's records, as :meth:`Store.plan` gives it (the one
        :meth:`Store.explain` explains): the saved derive result's plan when the store holds one
        for these records, else derived. Raises InputError for an empty namespace, a head the
        store has moved on from, or a head not read from a store."""
        planner: Callable[[Head], Plan] | None = self.__dict__.get("_planner")
        if planner is None:
            raise InputError("this head was not read from an open store; use Store.head().plan")
        return planner(self)

    def read_by(self, planner: Callable[[Head], Plan]) -> Head:
        """This head, its :attr:`plan` read by ``planner`` (a Store's). Not one of the fields:
        equality, ``to_dict``, ``dataclasses.fields`` and ``asdict`` are as they were."""
        object.__setattr__(self, "_planner", planner)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "records": self.records,
            "last_seq": self.last_seq,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class AddResult:
    request_id: str | None
    ids: tuple[str, ...]
    head: Head
    replayed: bool = False  # True: this request_id was applied before; nothing was written now

    @property
    def added(self) -> int:
        return len(self.ids)

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "added": self.added,
            "ids": list(self.ids),
            "head": self.head.to_dict(),
            "replayed": self.replayed,
        }


@dataclass(frozen=True)
class DeleteResult:
    deleted: tuple[str, ...]
    head: Head
    vectors_dropped: int
    scores_dropped: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "deleted": list(self.deleted),
            "head": self.head.to_dict(),
            "vectors_dropped": self.vectors_dropped,
            "scores_dropped": self.scores_dropped,
        }


def no_record(record_id: str, namespace: str) -> InputError:
    """The refusal of a delete naming an id the namespace does not hold."""
    return InputError(f"no record {record_id!r} in namespace {namespace!r}; nothing deleted")


def _chain(previous: str, record_sha: str) -> str:
    return hashlib.sha256(f"{previous}:{record_sha}".encode()).hexdigest()


# --- the store -------------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")


def _guarded(method: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """A public method whose SQLite failures leave as typed store errors."""

    @functools.wraps(method)
    def guarded(store: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with sqlite_errors(store.path):
            return method(store, *args, **kwargs)

    return guarded


class Store:
    """One namespace of a MUSTER store file. Open with :meth:`open`; use as a context manager."""

    def __init__(
        self,
        path: Path,
        db: sqlite3.Connection,
        namespace: str,
        preset: str | None,
        models: Any,
        access: Access = "rw",
        reembed: bool = False,
    ) -> None:
        self.path = path
        self.namespace = namespace
        self.preset = preset
        self.models = models  # as named (None: the preset's, $MUSTER_MODELS, or the store's own)
        self.reembed = reembed
        self._reads: Models | None = None  # what reads use, held to the recorded embedder
        self.access = access
        self._db = db
        self._memory: tuple[Head, Memory] | None = None
        self._plan: tuple[str, Plan] | None = None
        self._caches: Any = None
        # One connection, shared by the threads of a server: every use of it holds this lock.
        self._lock = threading.RLock()
        self.embedded = 0  # unit texts embedded by the last rebuild (0 when read from the file)
        # Why the last read built the memory afresh rather than growing the one before (None: it
        # grew it, or nothing was read yet).
        self.rebuilt_because: str | None = None
        self._unsaved = 0  # growths since the derive result was last saved
        # Per-text work of the last build (muster_exact.cache.memo): a read after an add analyses the
        # new records and the units they change, not the store. Started anew on delete.
        self.memo = Memo()
        self.progress = (
            False  # progress on stderr for a long rebuild (the CLI sets it; muster_exact.core.progress)
        )

    @property
    def read_only(self) -> bool:
        return self.access != "rw"

    # -- opening

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

    # -- writing

    @_guarded
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

    @_guarded
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

    @_guarded
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

    # -- reading

    @_guarded
    def head(self) -> Head:
        with self._lock:
            return self._head()

    def _head(self) -> Head:
        row = self._db.execute(
            "SELECT records, last_seq, sha256 FROM heads WHERE namespace = ?", (self.namespace,)
        ).fetchone()
        if row is None:
            return Head(self.namespace, 0, 0, EMPTY_HEAD).read_by(self._plan_of)
        return Head(self.namespace, int(row[0]), int(row[1]), str(row[2])).read_by(self._plan_of)

    @_guarded
    def records(self) -> Iterator[dict[str, Any]]:
        """The namespace's records in the order they were added (a consistent snapshot)."""
        with self._lock:
            rows = self._records()
        return (json.loads(body) for body in rows)

    def _records(self) -> list[str]:
        rows = self._db.execute(
            "SELECT record FROM records WHERE namespace = ? ORDER BY seq", (self.namespace,)
        ).fetchall()
        return [body for (body,) in rows]

    @_guarded
    def namespaces(self) -> list[str]:
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT namespace FROM heads ORDER BY namespace")]

    @_guarded
    def plan(self) -> Plan:
        """The plan a fresh build of the current records uses (derived; no model is loaded)."""
        with self._lock:
            return self._planned()

    @_guarded
    def _plan_of(self, head: Head) -> Plan:
        """:meth:`plan`, for ``head`` (``Head.plan``): refused once the namespace has moved on."""
        with self._lock:
            now = self._head()
            if now.sha256 != head.sha256:
                raise InputError(
                    f"namespace {self.namespace!r} changed since this head was read ({head.records} "
                    f"records then, {now.records} now); read store.head() again"
                )
            return self._planned()

    def _planned(self) -> Plan:
        head = self._head()
        if self._plan is not None and self._plan[0] == head.sha256:
            return self._plan[1]  # unchanged: no need to read every record again
        known = self._known_plan(head)
        if known is not None:
            self._plan = (head.sha256, known)
            return known
        head, records = self._snapshot()
        self._open_caches()  # the memo reads the file's analyses
        if self._plan is None or self._plan[0] != head.sha256:
            from muster_exact.memory import planned

            self._plan = (head.sha256, planned(records, self.preset, self.read_models(), memo=self.memo)[0])
        return self._plan[1]

    def _known_plan(self, head: Head) -> Plan | None:
        """The plan of ``head``'s records without deriving: the built memory's, else the saved
        derive result's (read alone, no record read); None when neither is for these records
        (equal to a fresh derive: a grown memory and its saved result are what a fresh build
        gives, tested)."""
        if self._memory is not None and self._memory[0].sha256 == head.sha256:
            return self._memory[1].plan
        state = self._saved_state(head)
        if state is None:
            return None
        from muster_exact.derive import saved

        try:
            return saved.plan_of(state)
        except ValueError as exc:
            log.debug("%s: the saved plan is unreadable (%s); derived instead", self.path, exc)
            return None

    def explain(self) -> str:
        from muster_exact.retrieve.explain import explain

        return explain(self.plan())

    @_guarded
    def memory(self) -> Memory:
        """The built memory of the current records: the last one when nothing changed, grown by
        the records added since when only adds happened, else built afresh."""
        with self._lock:
            if self._memory is not None and self._memory[0].sha256 == self._head().sha256:
                return self._memory[1]
            return self._grown() or self._rebuild()

    def _rebuild(self) -> Memory:
        head, records = self._snapshot()
        from muster_exact.memory import build

        vectors, scores = self._open_caches()
        saved = self._saved(head, records)
        memory = build(
            records,
            self.preset,
            self.read_models(),
            cache=vectors,
            scores=scores,
            memo=self.memo,
            progress=self.progress,
            derived=saved,
        )
        self.embedded = memory.embedded
        if not self.read_only:
            self._record_embedder(memory.models)
            self._remember_units(memory)
            if saved is None:
                self._save(head, memory)
        self._memory = (head, memory)
        return memory

    def read_models(self) -> Models:
        """The models reads use: those named, held to the embedder the namespace recorded (a
        different one is :class:`EmbedderMismatch` unless the store was opened with ``reembed``)."""
        if self._reads is None:
            from muster_exact.store import models as store_models

            embedder = store_models.recorded(self._db, self.namespace)
            self._reads = store_models.chosen(
                self.preset, self.models, embedder, self.namespace, self.reembed
            )
        return self._reads

    def _record_embedder(self, models: Models) -> None:
        from muster_exact.store import models as store_models

        if store_models.recorded(self._db, self.namespace) != models.embedder.key:
            with self._db:
                store_models.record(self._db, self.namespace, models.embedder.key)

    def _settings(self) -> str:
        """What a saved derive result depends on besides the records."""
        from muster_exact import __version__
        from muster_exact.derive import saved
        from muster_exact.memory import models_for

        models = models_for(self.preset, self.read_models())
        return json.dumps(
            [saved.FORMAT, __version__, self.preset, models.name, models.embedder.key],
            separators=(",", ":"),
        )

    def _saved(self, head: Head, records: list[dict[str, Any]]) -> Derived | None:
        """The derive result saved for exactly these records and settings, else None (absent,
        stale, or unreadable: then it is derived afresh, and a damaged one says so in the log)."""
        state = self._saved_state(head)
        if state is None:
            return None
        from muster_exact.derive import saved
        from muster_exact.text.records import from_records

        try:
            return saved.load(state, from_records(records))
        except ValueError as exc:
            log.warning("%s: the saved derive result is unreadable (%s); derived afresh", self.path, exc)
            return None

    def _saved_state(self, head: Head) -> bytes | None:
        """The bytes of the derive result saved for exactly ``head``'s records and these
        settings, else None."""
        row = self._db.execute(
            "SELECT head, settings, state FROM built WHERE namespace = ?", (self.namespace,)
        ).fetchone()
        if row is None or row[0] != head.sha256 or row[1] != self._settings():
            return None
        return bytes(row[2])

    def _save(self, head: Head, memory: Memory) -> None:
        if memory.derived is None:
            return
        from muster_exact.derive import saved

        self._unsaved = 0
        state = saved.dump(memory.derived)
        with transaction(self._db):
            # Only for the records as they are now: had another process deleted some since this
            # memory was read, saving it would write their words back into the file.
            if self._head().sha256 != head.sha256:
                return
            self._db.execute(
                "INSERT OR REPLACE INTO built VALUES (?, ?, ?, ?)",
                (self.namespace, head.sha256, self._settings(), state),
            )

    def _grown(self) -> Memory | None:
        """The last read's memory grown by the records added since (:meth:`Memory.grown`), when
        records were only added: the head is the last read's hash chained over the new records.
        None when something else happened (a delete, here or in another process), or when the
        new records change the branch (``rebuilt_because`` says which)."""
        if self._memory is None:
            self.rebuilt_because = "the first read"
            return None
        seen, memory = self._memory
        with self._lock, transaction(self._db, immediate=False):
            head = self._head()
            rows = self._db.execute(
                "SELECT record, sha256 FROM records WHERE namespace = ? AND seq > ? ORDER BY seq",
                (self.namespace, seen.last_seq),
            ).fetchall()
        chained = seen.sha256
        for _, record_sha in rows:
            chained = _chain(chained, record_sha)
        if not rows or chained != head.sha256 or head.records != seen.records + len(rows):
            self.rebuilt_because = "records were deleted or replaced since the last read"
            return None
        from muster_exact.core.progress import shown

        self._open_caches()
        with shown(self.progress):
            grown = memory.grown([json.loads(body) for body, _ in rows], self.memo)
        if isinstance(grown, str):
            log.info("%s: built afresh: %s", self.path, grown)
            self.rebuilt_because = grown
            return None
        self.rebuilt_because = None
        self.embedded = grown.embedded
        if not self.read_only:
            self._remember_growth(grown)
            # Saving writes every unit again; after a growth it waits (for close, or a batch).
            self._unsaved += 1
            if self._unsaved >= SAVE_AFTER_GROWTHS:
                self._save(head, grown)
        self._memory = (head, grown)
        return grown

    @_guarded
    def context(self, query: str, units: int | None = None) -> Context:
        """The context for ``query`` over every record of this namespace, as a fresh build gives it."""
        return self.memory().context(query, units)

    @_guarded
    def explain_query(self, query: str, units: int | None = None) -> tuple[Context, dict[str, Any]]:
        """:meth:`context` with the reasons: floors, proposals, rerank order, why each unit is kept."""
        return self.memory().explain_query(query, units)

    # -- internals

    def _snapshot(self) -> tuple[Head, list[dict[str, Any]]]:
        """The head and its records, read in one transaction (no add can fall between them)."""
        with self._lock, transaction(self._db, immediate=False):
            head = self._head()
            records = [json.loads(body) for body in self._records()]
        if not records:
            raise InputError(f"namespace {self.namespace!r} of {self.path} is empty; add records first")
        return head, records

    def _write_head(self, head: Head) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO heads VALUES (?, ?, ?, ?)",
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
            from muster_exact.cache.vectors import AnalysisCache, ScoreCache, VectorCache

            analyses = AnalysisCache(self.path, self.access)
            self._caches = (VectorCache(self.path, self.access), ScoreCache(self.path, self.access), analyses)
            self.memo.backing = analyses
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
        with transaction(self._db):
            self._db.executemany(
                "INSERT OR IGNORE INTO unit_keys VALUES (?, ?)", [(self.namespace, k) for k in keys]
            )

    def _replace_unit_keys(self, keys: list[str]) -> None:
        """Only the change is written (after an add: the new record's and its units' keys)."""
        wanted = set(keys)
        rows = self._db.execute("SELECT sha256 FROM unit_keys WHERE namespace = ?", (self.namespace,))
        known = {row[0] for row in rows}
        if wanted == known:
            return
        with transaction(self._db):
            self._db.executemany(
                "DELETE FROM unit_keys WHERE namespace = ? AND sha256 = ?",
                [(self.namespace, k) for k in sorted(known - wanted)],
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO unit_keys VALUES (?, ?)",
                [(self.namespace, k) for k in sorted(wanted - known)],
            )

    def _forget_units(self) -> tuple[int, int]:
        """Drop vectors and scores of unit texts no namespace uses any more."""
        records = [json.loads(body) for body in self._records()]
        keys: list[str] = []
        if records:
            from muster_exact.memory import embedding_pieces, planned, rules_of

            plan, cut, models, _ = planned(records, self.preset, self.read_models())
            # The pieces need the embedder's tokenizer only, never the model itself.
            keys = _live_keys(cut, embedding_pieces(cut, models, rules_of(plan)).texts)
        self._replace_unit_keys(keys)
        self._open_caches()
        with transaction(self._db):
            return drop_texts_not_in(self._db, "SELECT sha256 FROM unit_keys")


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


def _replayed(result: dict[str, Any]) -> AddResult:
    original = result["head"]
    return AddResult(
        result["request_id"],
        tuple(result["ids"]),
        Head(original["namespace"], original["records"], original["last_seq"], original["sha256"]),
        replayed=True,
    )
