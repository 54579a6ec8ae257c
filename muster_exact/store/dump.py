"""What a store holds, as data: a page of a namespace's records (``list_records``), every record of
the file as JSON lines (``export``), and those lines written back (``import_records``).

One line per record, in stored order (namespaces by name, records by sequence)::

    {"namespace": "default", "record": {"id": "r1", "text": "...", "metadata": {...}}, "request_id": null}

``record`` is the record as the store keeps it (its canonical form: the id, the text, speaker,
time and metadata as added), so an export of an import of an export is byte-equal to the first.
An import writes every new record of every line in one transaction, each into its namespace after
the records already there, and checks everything before it writes anything: a line that is not
such an object, a record ``add`` would refuse, or an id the namespace holds with another record
is refused with its line number. A record already there as it is in the dump is skipped, so
importing a dump twice adds nothing. A line's namespace is checked as a name given to
:meth:`Store.open` is (in NFC; one the file written to already holds, as it is). Request ids
stay with their records, and a request id a namespace did not know is recorded as applied (a
client retrying it gets a replay).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_RECORDS_PER_CALL
from muster_exact.store.file import guarded, transaction
from muster_exact.store.results import AddResult, Head, _chain
from muster_exact.store.state import StoreState, head_of
from muster_exact.store.validation import (
    canonical,
    check_namespace,
    checked_request_id,
    validate,
)

LINE_KEYS = ("namespace", "record", "request_id")
DEFAULT_PAGE = 100


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote: records added and skipped (already there, the same), per namespace."""

    added: dict[str, int]
    skipped: int

    def to_dict(self) -> dict[str, Any]:
        return {"added": dict(self.added), "total_added": sum(self.added.values()), "skipped": self.skipped}


class StoreDump(StoreState):
    """Listing, export and import: the records of a store as data."""

    @guarded
    def list_records(self, limit: int = DEFAULT_PAGE, offset: int = 0) -> list[dict[str, Any]]:
        """A page of this namespace's records in stored order, as export lines (namespace, record,
        request id). ``limit``: 1 to ``MAX_RECORDS_PER_CALL``; ``offset``: records to skip."""
        limit, offset = checked_page(limit, offset)
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, {self._engine.record_bytes}, sha256, request_id FROM records "
                "WHERE namespace = ? ORDER BY seq LIMIT ? OFFSET ?",
                (self.namespace, limit, offset),
            ).fetchall()
            bodies = self._checked(row[:3] for row in rows)
        return [_line(self.namespace, body, row[3]) for body, row in zip(bodies, rows, strict=True)]

    @guarded
    def export(self, every_namespace: bool = True) -> Iterator[dict[str, Any]]:
        """Every record of the file (or of this namespace), as export lines, from one snapshot."""
        with self._lock, transaction(self._db, immediate=False):
            columns = f"namespace, id, {self._engine.record_bytes}, sha256, request_id"
            if every_namespace:
                sql = f"SELECT {columns} FROM records ORDER BY namespace, seq"
                rows = self._db.execute(sql).fetchall()
            else:
                sql = f"SELECT {columns} FROM records WHERE namespace = ? ORDER BY seq"
                rows = self._db.execute(sql, (self.namespace,)).fetchall()
            bodies = [self._checked([row[1:4]], row[0])[0] for row in rows]
        return (_line(row[0], body, row[4]) for body, row in zip(bodies, rows, strict=True))

    @guarded
    def import_records(self, lines: Iterable[Any]) -> ImportResult:
        """Write export lines back (see the module's docstring): all checked first, then one
        transaction; no model is called."""
        if isinstance(lines, (str, bytes, bytearray, Mapping)) or not isinstance(lines, Iterable):
            raise InputError(
                "an import takes a list of export lines (what `muster export` and GET /v1/export "
                f"write), not {type(lines).__name__}"
            )
        entries = [checked_line(line, n, self.has_namespace) for n, line in enumerate(lines, start=1)]
        self._check_writable()
        with self._lock:
            return self._import(entries)

    def _import(self, entries: list[tuple[int, str, dict[str, Any], str | None]]) -> ImportResult:
        added: dict[str, int] = {}
        skipped = 0
        with transaction(self._db):
            heads: dict[str, Head] = {}
            requests: dict[tuple[str, str], list[str]] = {}
            now = time.time()
            for n, namespace, record, request_id in entries:
                body = canonical(record)
                held = self._stored(record["id"], namespace)
                if held is not None:
                    if held != body:
                        raise InputError(
                            f"line {n}: namespace {namespace!r} holds another record with id "
                            f"{record['id']!r}; nothing was imported (update or delete it first)"
                        )
                    skipped += 1
                    continue
                head = heads.get(namespace) or head_of(self._db, namespace)
                sha = hashlib.sha256(body.encode()).hexdigest()
                seq = head.last_seq + 1
                self._db.execute(
                    "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (namespace, seq, record["id"], body, sha, request_id, now),
                )
                heads[namespace] = Head(namespace, head.records + 1, seq, _chain(head.sha256, sha))
                added[namespace] = added.get(namespace, 0) + 1
                if request_id is not None:
                    requests.setdefault((namespace, request_id), []).append(record["id"])
            for head in heads.values():
                self._write_head(head)
            for (namespace, request_id), ids in requests.items():
                # Unknown body (NULL): a retry of the original add is a replay, as before bodies were kept.
                result = AddResult(request_id, tuple(ids), heads[namespace]).to_dict()
                self._db.execute(
                    "INSERT INTO requests VALUES (?, ?, ?, NULL) ON CONFLICT DO NOTHING",
                    (namespace, request_id, json.dumps(result)),
                )
        return ImportResult(added, skipped)


def checked_page(limit: Any, offset: Any) -> tuple[int, int]:
    """A page of a listing: ``limit`` 1 to ``MAX_RECORDS_PER_CALL``, ``offset`` 0 or more."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECORDS_PER_CALL:
        raise InputError(f"limit must be a whole number from 1 to {MAX_RECORDS_PER_CALL:,}, not {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InputError(f"offset must be a whole number, 0 or more, not {offset!r}")
    return limit, offset


def checked_line(
    line: Any, n: int, held: Callable[[str], bool] | None = None
) -> tuple[int, str, dict[str, Any], str | None]:
    """One export line as an import takes it (a JSON text or its object): the namespace (as
    :func:`check_namespace` takes it, ``held`` by the store written to), the record in its stored
    form (an id is required: an export always has one), the request id."""
    if isinstance(line, (str, bytes)):
        try:
            line = json.loads(line)
        except ValueError:
            raise InputError(f"line {n} is not JSON; an import takes what `muster export` writes") from None
    keys = set(line) if isinstance(line, Mapping) else set()
    if not isinstance(line, Mapping) or keys - set(LINE_KEYS) or not {"namespace", "record"} <= keys:
        raise InputError(
            f"line {n} is not an export line: an object with 'namespace', 'record' and 'request_id'"
        )
    try:
        namespace = check_namespace(line["namespace"], held)
        request_id = line.get("request_id")
        if request_id is not None:
            checked_request_id(request_id)
        record = validate([line["record"]], any_field=True)[0]  # restored as it was exported
    except InputError as exc:
        raise InputError(f"line {n}: {exc}") from None
    if "id" not in record:
        raise InputError(f"line {n}: the record has no 'id'; an export line always carries one")
    return n, namespace, record, request_id


def dumped(line: Mapping[str, Any]) -> str:
    """An export line as text, one per line (the one form: an export of an import of an export
    is byte-equal to it)."""
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"


def _line(namespace: str, body: str, request_id: str | None) -> dict[str, Any]:
    return {"namespace": namespace, "record": json.loads(body), "request_id": request_id}
