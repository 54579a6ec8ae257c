"""``Store``: a memory that grows, in one SQLite file.

    with Store.open("agent.muster", models="cpu-small") as store:
        store.add({"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon."},
                  request_id="turn-1")
        print(store.context("Where does Caroline live?").text)

* ``add`` validates first, then writes every given record in one
  transaction and calls no model. A ``request_id`` seen before with the same
  records returns the original result and writes nothing (retries are safe,
  also from two processes at once: writers are serialised by SQLite); with
  other records it is :class:`RequestConflict` and writes nothing, so a
  client's reused id cannot lose new text unseen.
* ``update`` replaces one record in place (same id, same place in the
  order); its old text is erased as ``delete`` erases, and one history line
  says when it changed, never what it said.
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
  the pending erase is recorded in the file, retried in the background while
  the store stays open (it finishes soon after the last such read ends), on
  close, and on the next open or write (``pending_erasures()``, ``muster
  info``). A request whose records were deleted stays applied: retrying it
  does not bring them back.
* Namespaces: one file holds independent memories (``namespace="user-42"``);
  a read sees only its own. A name is normalised to NFC and may not hold a
  character that does not show (control, invisible format, line separator,
  surrogate, unassigned: :func:`check_namespace`); a name a file made before
  that rule already holds opens as it is stored.

The file is WAL-mode SQLite with a versioned schema (``meta.schema_version``)
and migrations applied on open; a file from a newer MUSTER is refused, as is
a file that is not a MUSTER store (or holds another program's tables), and
another program's file is never altered. A killed process leaves each
``add`` either whole or absent. A file without write access (or in a folder
without it) opens read-only: reads work and cache nothing. Every SQLite
failure leaves as a typed :class:`StoreError` (``StoreCorrupt``,
``StoreFull``, ``StoreReadOnly``), mapped in one place.

The same store lives in a PostgreSQL database when ``path`` is a URL
(``Store.open("postgresql://user:password@host/db")``, also ``postgres://``;
psycopg 3, ``muster-memory[postgres]``): the same API, SQL and schema
(:mod:`muster_exact.store.engines`), writers one at a time per database (an
advisory lock, also across processes and hosts), each read in one snapshot,
and a delete erased by ``VACUUM FULL`` (``docs/security.md``). Contexts are
byte-equal to the file's over the same records.

Here: the package's public names. The :class:`Store` is :mod:`muster_exact.store.store` (open,
add, delete, erase) over :mod:`.reads` (plan, memory, context) and :mod:`.state` (head, records,
cache keys); its results are :mod:`.results`. The file itself (schema, migrations, opening, typed
SQLite errors) is :mod:`muster_exact.store.file`; what ``add`` accepts,
:mod:`muster_exact.store.validation`; records from a file for ``muster add``,
:mod:`muster_exact.store.input`. Their public names are importable from here too.
"""

from __future__ import annotations

from muster_exact.core.errors import (
    ErasePending,
    RequestConflict,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
)
from muster_exact.core.limits import MAX_ADD_CHARS, MAX_ID_CHARS, MAX_METADATA_DEPTH, MAX_RECORD_CHARS
from muster_exact.store.file import BUILT_SCHEMA, MIGRATIONS, SCHEMA, SCHEMA_VERSION
from muster_exact.store.input import read_records_file
from muster_exact.store.results import AddResult, DeleteResult, Head, UpdateResult
from muster_exact.store.state import DEFAULT_NAMESPACE
from muster_exact.store.store import Store
from muster_exact.store.validation import canonical, check_namespace, check_unicode, validate

# The public names, and those callers imported from here before the file, validation and input
# concerns had modules of their own (store_file, store_validation, store_input).
__all__ = [
    "BUILT_SCHEMA",
    "DEFAULT_NAMESPACE",
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
    "RequestConflict",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreReadOnly",
    "StoreUnavailable",
    "UpdateResult",
    "canonical",
    "check_namespace",
    "check_unicode",
    "read_records_file",
    "validate",
]
