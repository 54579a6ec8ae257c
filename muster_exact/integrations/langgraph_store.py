"""MUSTER memory as LangGraph's long-term memory store (``langgraph.store.base.BaseStore``).

    from langgraph.graph import StateGraph
    from muster_exact.integrations.langgraph_store import MusterBaseStore

    store = MusterBaseStore(Backend("agent.muster", models="cpu-small"))
    graph = StateGraph(State).add_node(...).compile(store=store)   # nodes take ``store: BaseStore``
    store.put(("memories", "user-42"), "locker", {"text": "My locker number is 417."})
    store.search(("memories", "user-42"), query="What is my locker number?")

How LangGraph's words map onto MUSTER's (docs/decisions/0211-langgraph-store.md):

* A namespace tuple is one MUSTER namespace, its labels joined by ``.`` (``("memories",
  "user-42")`` is ``memories.user-42``). LangGraph refuses a ``.`` in a label, so the join is
  one to one, and each LangGraph namespace is a memory of its own: MUSTER cuts, plans and reads
  each namespace apart, and never packs two users' records into one unit. Every MUSTER namespace
  of the file that holds records is listed, ``("default",)`` included.
* A key is the record's id in that namespace.
* A value (a JSON object) is one record: its ``text`` (or ``content``) when that is text, else
  the value as JSON, is what MUSTER reads; its ``speaker``/``role`` and ``time``/``timestamp``/
  ``date`` become the record's, when they are text or numbers; the whole value and the item's
  timestamps are kept in the record's metadata under ``langgraph``, so ``get`` gives back what
  was put. A record written another way (``remember``, the LangGraph node) reads as an item whose
  value is the record (text, speaker, time, metadata), with unknown timestamps (1970-01-01 UTC).
* ``put`` to an existing key is MUSTER's update (same id and place, the old text erased),
  ``put`` of None and ``delete`` are its forget (the text erased from the file); deleting a key
  that is not there does nothing, as LangGraph expects.
* ``search`` with a query is MUSTER's read: the units its retrieval selects, best first, each
  unit's records in stored order, ``score`` the unit's rerank score; the read's budget U grows
  until ``offset + limit`` items pass the filter or the namespace has no more to give. A prefix
  that covers several namespaces reads each and takes their items in turn, best of each first
  (ranks of separate reads are not comparable). Without a query, items come in stored order.
  ``filter`` is LangGraph's (equality, nested objects, ``$eq``, ``$ne``, ``$gt``, ``$gte``,
  ``$lt``, ``$lte``) on the value; ``index=False`` keeps an item out of query results.
* No TTL (``supports_ttl`` is False). ``get`` and ``put`` read the namespace's records page by
  page (the Backend reads by page, not by id): cheap for an agent's memory, linear in its size.

This module needs langgraph; importing it without raises
:class:`~muster_exact.core.optional.MissingExtra`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from muster_exact.core import optional
from muster_exact.core.limits import MAX_RECORDS_PER_CALL, MAX_UNITS
from muster_exact.serve.backend import Backend
from muster_exact.text.records import SPEAKER_KEYS, TEXT_KEYS, TIME_KEYS

# Not integrations.require: the package hands this class out, so importing it back would be a cycle.
optional.require("langgraph.store.base", optional.Extra("langgraph"))

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

log = logging.getLogger(__name__)

SEPARATOR = "."  # between a namespace's labels; LangGraph refuses it inside a label
MARK = "langgraph"  # the metadata key that holds the value and the item's timestamps
UNKNOWN_TIME = datetime(1970, 1, 1, tzinfo=UTC)  # a record written without this store


class MusterBaseStore(BaseStore):
    """A LangGraph store over a MUSTER store file, through a :class:`Backend` (shared with the
    other integrations: one model load, one set of open namespaces). Thread-safe; operations of
    one batch run in order, so a get after a put in the same batch sees it."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._lock = threading.RLock()  # a put reads, then writes: two at once must not interleave

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)  # a "." in a label would address another namespace
        with self._lock:
            return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"MusterBaseStore takes GetOp, PutOp, SearchOp and ListNamespacesOp, not {op!r}")

    # -- get, put, delete

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        record = self._find(namespace_name(namespace), key)
        if record is None:
            return None
        found = _item(namespace, record)
        return Item(
            value=found.value,
            key=found.key,
            namespace=namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def _put(self, op: PutOp) -> None:
        name = namespace_name(op.namespace)
        old = self._find(name, op.key)
        if op.value is None:
            if old is not None:
                done = self.backend.forget(ids=[op.key], namespace=name)
                if done.get("erase_pending"):
                    log.info("%r deleted; its text is erased once a read that holds it ends", op.key)
            return
        now = datetime.now(UTC).isoformat()
        kept = _kept(old)
        created = kept["created_at"] if kept else now
        record = to_record(op.key, op.value, created, now, indexed=op.index is not False)
        if old is None:
            self.backend.remember(record, namespace=name)
        else:
            self.backend.update(op.key, record, namespace=name)

    def _find(self, name: str, key: str) -> dict[str, Any] | None:
        return next((r for r in self._records(name) if r["id"] == str(key)), None)

    def _records(self, name: str) -> Iterator[dict[str, Any]]:
        """The namespace's records in stored order, a page at a time."""
        offset = 0
        while True:
            page = self.backend.records(name, limit=MAX_RECORDS_PER_CALL, offset=offset)["records"]
            yield from (line["record"] for line in page)
            if len(page) < MAX_RECORDS_PER_CALL:
                return
            offset += len(page)

    # -- search

    def _search(self, op: SearchOp) -> list[SearchItem]:
        names = [n for n in self._held() if n[: len(op.namespace_prefix)] == _nfc(op.namespace_prefix)]
        wanted = max(op.offset, 0) + max(op.limit, 0)
        if op.query is None:
            found = (
                (namespace, record, None)
                for namespace in names
                for record in self._records(namespace_name(namespace))
                if matches(_item(namespace, record).value, op.filter)
            )
            hits = [hit for _, hit in zip(range(wanted), found, strict=False)]
        else:
            hits = _in_turn([self._ranked(namespace, op.query, wanted, op.filter) for namespace in names])
        return [_item(ns, record, score) for ns, record, score in hits[op.offset : op.offset + op.limit]]

    def _ranked(
        self, namespace: tuple[str, ...], query: str, wanted: int, where: dict[str, Any] | None
    ) -> list[tuple[tuple[str, ...], dict[str, Any], float | None]]:
        """One namespace's items for ``query``, best unit first: MUSTER's read at a budget U that
        grows (doubling) until ``wanted`` items pass the filter or a larger read gives no more."""
        name, units, before = namespace_name(namespace), max(1, min(wanted, MAX_UNITS)), -1
        while True:
            passages = self.backend.search(query, units, name)["passages"]
            hits = self._hits(namespace, passages, where)
            if len(hits) >= wanted or len(passages) <= before or units >= MAX_UNITS:
                return hits
            before, units = len(passages), min(2 * units, MAX_UNITS)

    def _hits(
        self, namespace: tuple[str, ...], passages: list[dict[str, Any]], where: dict[str, Any] | None
    ) -> list[tuple[tuple[str, ...], dict[str, Any], float | None]]:
        """The records of ``passages``, each once (in its best unit), that are indexed and match."""
        seen: set[str] = set()
        bodies: dict[str, dict[str, Any]] | None = None
        hits = []
        for passage in passages:
            for record_id in passage["records"]:
                if record_id in seen:
                    continue
                seen.add(record_id)
                metadata = passage["metadata"].get(record_id)
                record: dict[str, Any] | None = {"id": record_id, "metadata": metadata}
                if _kept(record) is None:  # not written by this store: its fields are read once
                    bodies = bodies or {r["id"]: r for r in self._records(namespace_name(namespace))}
                    record = bodies.get(record_id)
                if record is None or (_kept(record) or {}).get("indexed") is False:
                    continue
                if matches(_item(namespace, record).value, where):
                    hits.append((namespace, record, passage["rerank_score"]))
        return hits

    # -- namespaces

    def _held(self) -> list[tuple[str, ...]]:
        """Every namespace of the file that holds records, as LangGraph tuples, sorted."""
        counts = self.backend.store().namespace_records()
        labelled = (tuple(name.split(SEPARATOR)) for name, count in counts.items() if count)
        return sorted(labels for labels in labelled if all(labels))  # "a..b" is no LangGraph name

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        held = [n for n in self._held() if all(_matched(c, n) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            held = sorted({n[: op.max_depth] for n in held})
        return held[op.offset : op.offset + op.limit]


def namespace_name(namespace: tuple[str, ...]) -> str:
    """The MUSTER namespace of a LangGraph namespace: its labels joined by ``.``."""
    return SEPARATOR.join(namespace)


def to_record(
    key: str, value: Mapping[str, Any], created: str, updated: str, *, indexed: bool
) -> dict[str, Any]:
    """The MUSTER record of a LangGraph item (see the module's docstring)."""
    text = next((value[k] for k in TEXT_KEYS if isinstance(value.get(k), str) and value[k].strip()), None)
    if text is None:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    record: dict[str, Any] = {"id": key, "text": text}
    for field, keys in (("speaker", SPEAKER_KEYS), ("time", TIME_KEYS)):
        given = next((value[k] for k in keys if _scalar(value.get(k))), None)
        if given is not None:
            record[field] = given
    mark = {"value": dict(value), "created_at": created, "updated_at": updated}
    record["metadata"] = {MARK: mark if indexed else {**mark, "indexed": False}}
    return record


def matches(value: Any, where: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter on a value: each key equal, an object matched key by key, or compared by
    its operators (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``)."""
    if not where:
        return True
    if not isinstance(value, Mapping):
        return False
    return all(_compared(value.get(key), wanted) for key, wanted in where.items())


def _compared(held: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(held, op, operand) for op, operand in wanted.items())
        return matches(held, wanted)
    return bool(held == wanted)


def _operator(held: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(held == operand)
    if op == "$ne":
        return bool(held != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"filter operator {op!r} is not one of $eq, $ne, $gt, $gte, $lt, $lte")
    try:
        left, right = float(held), float(operand)
    except (TypeError, ValueError):
        return False  # a value missing or not a number is outside every range
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def _item(namespace: tuple[str, ...], record: dict[str, Any], score: float | None = None) -> SearchItem:
    """The item of a stored record: the value and timestamps put, or the record itself."""
    kept = _kept(record)
    if kept is None:
        value = {k: v for k, v in record.items() if k != "id"}
        created = updated = UNKNOWN_TIME
    else:
        value = kept["value"]
        created, updated = (datetime.fromisoformat(kept[k]) for k in ("created_at", "updated_at"))
    key = str(record["id"])
    return SearchItem(namespace, key, value, created, updated, score)


def _kept(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What this store kept in a record's metadata, or None for a record written another way."""
    metadata = None if record is None else record.get("metadata")
    kept = metadata.get(MARK) if isinstance(metadata, Mapping) else None
    if isinstance(kept, dict) and isinstance(kept.get("value"), dict) and "created_at" in kept:
        return kept
    return None


def _in_turn(lists: list[list[Any]]) -> list[Any]:
    """The first of each list, then the second of each, and so on."""
    return [ranked[i] for i in range(max(map(len, lists), default=0)) for ranked in lists if i < len(ranked)]


def _matched(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    labels = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p in ("*", n) for p, n in zip(path, labels, strict=True))


def _nfc(labels: tuple[str, ...]) -> tuple[str, ...]:
    """Labels as MUSTER stores names (NFC), so a prefix typed either way finds them."""
    return tuple(unicodedata.normalize("NFC", label) for label in labels)


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)
