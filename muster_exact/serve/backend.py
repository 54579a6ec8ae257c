"""The one backend every server and integration calls: remember, recall, search, inspect, forget,
update, patch, records, export, import, info.

Each operation takes the values a caller sent, exactly as sent (no server
coerces or defaults them first), validates them with the library's own
rules, and returns plain JSON-ready dicts, so the MCP tools, the HTTP routes
and the framework tools are thin shells around it and refuse the same input
with the same message. Errors are the library's typed errors
(:class:`~muster_exact.core.errors.InputError` for what the caller sent,
:class:`~muster_exact.store.StoreError` for the file); each server turns them
into its own answers in one place, through :meth:`Backend.explain`, which
never shows the store's path.

Namespaces are opened on first use and kept in a bounded LRU
(``max_open``, the default namespace included): the least recently used idle
one is closed to make room, never one a call is using, and a call that needs
a place while every place is in use waits for one, so no more are ever open
(the file descriptors they hold are budgeted: :mod:`muster_exact.serve.budget`).
A read of a namespace the file does not hold opens nothing and answers as an
empty namespace does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from muster_exact.core.errors import ErasePending, InputError, MusterError
from muster_exact.core.limits import MAX_RECORDS_PER_CALL
from muster_exact.retrieve.assemble import Context
from muster_exact.serve.namespaces import OpenNamespaces
from muster_exact.store import (
    DEFAULT_NAMESPACE,
    DeleteResult,
    Head,
    Store,
    check_namespace,
    check_unicode,
)
from muster_exact.store.dump import DEFAULT_PAGE, checked_page, dumped
from muster_exact.store.engines.postgres import is_postgres
from muster_exact.store.engines.postgres import shown as shown_url
from muster_exact.store.results import EMPTY_HEAD, UpdateResult, no_record
from muster_exact.store.validation import checked_delete, checked_fields, checked_id, validate
from muster_exact.store.where import checked_where

TOKEN_ENV = "MUSTER_HTTP_TOKEN"  # the HTTP server's bearer token (here: the CLI's help names it too)
DEFAULT_MAX_OPEN = 64  # namespaces: 8 descriptors each once read (serve.budget): the servers derive theirs


class ServeError(MusterError):
    """A server cannot start with these settings (a port it cannot listen on, a token it cannot check)."""


class Backend:
    """A store file served to many callers (thread-safe)."""

    def __init__(
        self,
        path: str | Path,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        preset: str | None = None,
        models: Any = None,
        max_open: int = DEFAULT_MAX_OPEN,
    ) -> None:
        check_max_open(max_open)
        self.path: Path | str = str(path) if is_postgres(str(path)) else Path(path)  # a file or a database
        self.preset = preset
        self.models = models
        self.max_open = max_open
        self._models_profile()  # an unknown profile or preset fails now, not at every read
        # The default namespace stays open (one of the max_open): it also answers "which namespaces
        # exist", and opening it now fails a bad path at start.
        self._default = Store.open(self.path, namespace, preset=preset, models=models)
        self.namespace = self._default.namespace  # as checked: in NFC, or as an older file holds it
        self._others = OpenNamespaces(
            lambda name: Store.open(self.path, name, preset=preset, models=models), max_open - 1
        )
        self._hidden = _path_forms(self.path)

    def store(self) -> Store:
        """The default namespace (always open)."""
        return self._default

    def close(self) -> None:
        self._others.close()
        self._default.close()

    def load_models(self) -> tuple[str, float]:
        """Load the models the default namespace reads with now (a server calls this before it
        takes requests, so that no request waits on them): their names, and the seconds it took."""
        import time

        from muster_exact.memory import models_for
        from muster_exact.models import load_embedder, load_reranker

        started = time.perf_counter()
        models = models_for(self.preset, self._default.read_models())
        load_embedder(models.embedder)
        if models.reranker is not None:
            load_reranker(models.reranker)
        names = " and ".join(ref.id for ref in (models.embedder, models.reranker) if ref is not None)
        return names, time.perf_counter() - started

    def _models_profile(self) -> dict[str, Any]:
        """The model profile reads use: ``models``, else the preset's, else the default (``auto``
        decides here, once, so a server says what it reads with before it starts)."""
        from muster_exact.memory import models_for

        return models_for(self.preset, self.models).to_dict()

    def explain(self, exc: MusterError) -> str:
        """An error's message as callers see it: the store's location is not theirs to know."""
        text = str(exc)
        for shown, said in self._hidden:
            text = text.replace(shown, said)
        return text

    # -- operations

    def remember(self, records: Any, request_id: Any = None, namespace: Any = None) -> dict[str, Any]:
        """Add one record or a list of them (one transaction; no model call)."""
        _check_count(records)
        if isinstance(request_id, str):
            check_unicode(request_id, "request_id")  # it is stored and compared as text
        with self._using(namespace, create=True) as store:
            assert store is not None  # a write always opens its namespace
            return store.add(records, request_id=request_id).to_dict()

    def remember_many(self, records: Any, request_id: Any = None, namespace: Any = None) -> dict[str, Any]:
        """Add a list of records (HTTP ``/v1/add``, MCP ``remember_many``): :meth:`remember`, with
        ``records`` a list (one record alone is :meth:`remember`'s, not a batch's)."""
        if not isinstance(records, list):
            raise InputError(
                f"records must be a list of records (strings or objects with 'text'), "
                f"not {type(records).__name__}"
            )
        return self.remember(records, request_id, namespace)

    def recall(
        self, query: Any, units: Any = None, namespace: Any = None, where: Any = None
    ) -> dict[str, Any]:
        """The assembled context for ``query``: verbatim text in stored order, with its provenance
        and each block's records and their metadata; ``where`` narrows the candidates
        (:mod:`muster_exact.store.where`). An empty namespace (or one never written) has an empty
        context."""
        query, units = _checked_read(query, units)
        checked_where(where)
        with self._using(namespace, create=False) as store:
            head = self._head_of(store, namespace)
            if store is None or not head.records:
                empty = {"context": "", "tokens": 0, "units": [], "records": [], "blocks": []}
                return {"query": query, **empty, "head": head.to_dict()}
            context = store.context(query, units, where=where)
            # The head of the snapshot the context was read from: a delete since then is not its.
            return {**_context_answer(context, units), "head": context.head.to_dict()}

    def recall_declared(self, format: Any, records: Any, query: Any, units: Any = None) -> dict[str, Any]:
        """The context for ``query`` of a declared record array (:mod:`muster_exact.derive.declared`),
        built in memory with this server's models and never stored (no vector is cached either:
        the records are the caller's, not the store's). The records are checked as an add checks
        them; ``records`` in the answer are their ids, else ``r<index>``."""
        from muster_exact.derive import declared
        from muster_exact.memory import build

        query, units = _checked_read(query, units)
        sent = declared.envelope({"format": format, "records": records}, "the request")
        _check_count(sent.records)
        # The add's rules (sizes, Unicode, ids, JSON), every field kept as declared; nothing is written.
        validate(sent.records, any_field=True)
        memory = build(sent, preset=self.preset, models=self.models, cache=False)
        return {**_context_answer(memory.context(query, units), units), "format": sent.order.format}

    def search(
        self, query: Any, units: Any = None, namespace: Any = None, where: Any = None
    ) -> dict[str, Any]:
        """The selected passages, best first, each with its unit id, records, their metadata and
        why it was chosen; no assembly (no grouping, no stored order); none for an empty
        namespace. ``where`` as for :meth:`recall`."""
        from muster_exact.serve.inspection import search_passages

        query, units = _checked_read(query, units)
        checked_where(where)
        with self._using(namespace, create=False) as store:
            head = self._head_of(store, namespace)
            if store is None or not head.records:
                return {"query": query, "passages": [], "head": head.to_dict()}
            return {"query": query, **search_passages(store, query, units, where)}

    def inspect(
        self, query: Any, units: Any = None, namespace: Any = None, where: Any = None
    ) -> dict[str, Any]:
        """One read with its reasons, as the inspector page shows it
        (:mod:`muster_exact.serve.inspection`): the context, the passages kept (channels and their
        ranks, rerank place and score, the floor or fill that kept each), each channel's floor, and
        the first units left out after the cut. Checked as :meth:`recall` checks its input."""
        from muster_exact.serve.inspection import inspected

        query, units = _checked_read(query, units)
        checked_where(where)
        with self._using(namespace, create=False) as store:
            answer = inspected(store, query, units, where)
            # A read's answer carries the head it read; an empty one, the head there is now.
            return {"head": self._head_of(store, namespace).to_dict(), **answer}

    def forget(self, ids: Any = None, request_id: Any = None, namespace: Any = None) -> dict[str, Any]:
        """Delete records by id, or every record one request added, with every cached trace of
        them (:meth:`Store.delete`): see :func:`forget_in`. A namespace the file does not hold is
        not created: its ids are refused as missing, its request ids delete nothing."""
        ids, request_id = _checked_forget(ids, request_id)
        with self._using(namespace, create=False) as store:
            if store is not None:
                return forget_in(store, ids, request_id)
            if ids:
                raise no_record(ids[0], self._name(namespace))
            nothing = DeleteResult((), self._head_of(None, namespace), 0, 0)
            return {**nothing.to_dict(), "erase_pending": False}

    def update(self, record_id: Any, record: Any, namespace: Any = None) -> dict[str, Any]:
        """Replace one record in place (:meth:`Store.update`), its old text erased as ``forget``
        erases it; ``erase_pending`` as :func:`forget_in` says it. A namespace the file does not
        hold is not created: the id is refused as missing."""
        record_id = checked_id(record_id, "the record id")
        with self._using(namespace, create=False) as store:
            if store is None:
                validate([record])  # a bad record is refused as it is for a namespace that exists
                raise no_record(record_id, self._name(namespace), "nothing updated")
            return update_in(store, record_id, record)

    def patch(self, record_id: Any, fields: Any, namespace: Any = None) -> dict[str, Any]:
        """Change the fields given and keep the others (:meth:`Store.patch`); otherwise as
        :meth:`update`."""
        record_id = checked_id(record_id, "the record id")
        with self._using(namespace, create=False) as store:
            if store is None:
                checked_fields(fields, record_id)  # bad fields are refused as for a namespace that exists
                raise no_record(record_id, self._name(namespace), "nothing updated")
            return erasing(lambda: store.patch(record_id, fields))

    def import_lines(self, lines: Any) -> dict[str, Any]:
        """Write the lines of an export (each to its own namespace) with ``muster import``'s rules
        (:meth:`Store.import_records`): all checked first, one transaction, a record already there
        as in the dump skipped, so the same dump twice adds nothing."""
        if isinstance(lines, Sequence) and len(lines) > MAX_RECORDS_PER_CALL:
            raise InputError(
                f"{len(lines):,} lines in one call; send at most {MAX_RECORDS_PER_CALL:,} per call"
            )
        with self._using(None, create=True) as store:
            assert store is not None
            return store.import_records(lines).to_dict()

    def records(self, namespace: Any = None, limit: Any = DEFAULT_PAGE, offset: Any = 0) -> dict[str, Any]:
        """A page of a namespace's records in stored order (:meth:`Store.list_records`) and the
        namespace's head (``total``: its record count); none for a namespace never written."""
        limit, offset = checked_page(limit, offset)
        with self._using(namespace, create=False) as store:
            head = self._head_of(store, namespace)
            rows = [] if store is None else store.list_records(limit, offset)
        return {
            "records": rows,
            "limit": limit,
            "offset": offset,
            "total": head.records,
            "head": head.to_dict(),
        }

    def export(self, namespace: Any = None) -> list[str]:
        """A namespace's export lines (:mod:`muster_exact.store.dump`), read in one snapshot."""
        with self._using(namespace, create=False) as store:
            return [] if store is None else [dumped(line) for line in store.export(every_namespace=False)]

    def info(self, namespace: Any = None, *, namespaces: bool = True) -> dict[str, Any]:
        """This namespace's head, its plan and the plan in words (``explain``, when it has
        records), the models reads use and, unless ``namespaces=False`` (a caller who may not list
        them), the file's namespaces and their record counts (``records_by_namespace``)."""
        from muster_exact.retrieve.explain import explain

        with self._using(namespace, create=False) as store:
            head = self._head_of(store, namespace)
            plan = store.plan() if store is not None and head.records else None
        out: dict[str, Any] = {"head": head.to_dict(), "preset": self.preset}
        out["plan"], out["explain"] = (None, None) if plan is None else (plan.to_dict(), explain(plan))
        out["models"] = self._models_profile()
        out["pending_erasures"] = self._default.pending_erasures()  # deletes whose text is still on disk
        if namespaces:
            counts = self._default.namespace_records()
            out["namespaces"], out["records_by_namespace"] = list(counts), counts
        return out

    def ready(self) -> None:
        """Raise the store's typed error when it cannot be reached now (a database down, a file
        gone unreadable): one read of the default namespace's head, which takes no long lock
        (a read's build does not hold the connection), so it answers while reads run."""
        self._default.head()

    # -- open namespaces

    @contextmanager
    def _using(self, namespace: Any, *, create: bool) -> Iterator[Store | None]:
        """The open Store of ``namespace`` for the length of one call, or None for a read of a
        namespace the file does not hold (nothing is opened for it)."""
        name = self._name(namespace)
        if name == self.namespace:
            yield self._default
            return
        if not create and not self._others.is_open(name) and name not in self._default.namespaces():
            yield None
            return
        with self._others.using(name) as store:
            yield store

    def _head_of(self, store: Store | None, namespace: Any) -> Head:
        if store is not None:
            return store.head()
        return Head(self._name(namespace), 0, 0, EMPTY_HEAD)

    def _name(self, namespace: Any) -> str:
        """The namespace a call names, checked (:func:`check_namespace`); None: the default one."""
        if namespace is None:
            return self.namespace
        return check_namespace(namespace, held=self._default.has_namespace)


def check_fields(sent: Iterable[str], fields: Sequence[str]) -> None:
    """The argument names of one server call, as sent (an HTTP body's keys, an MCP tool's
    arguments), against the ones it takes: the first unknown one is refused, never ignored (a
    misspelt optional field, ``unit`` for ``units``, would otherwise be dropped without a word).
    Both servers refuse it with this message; a Python caller gets Python's own TypeError."""
    unknown = next((name for name in sent if name not in fields), None)
    if unknown is not None:
        shown = unknown.encode("utf-8", "backslashreplace").decode("utf-8")
        raise InputError(f"unknown field {shown!r}; this call takes {', '.join(fields)}")


def check_max_open(max_open: Any) -> int:
    """A bound on open namespaces: a whole number, at least 1 (the default namespace)."""
    if isinstance(max_open, bool) or not isinstance(max_open, int) or max_open < 1:
        raise InputError(f"max_open_namespaces (--max-open-namespaces) must be at least 1, not {max_open!r}")
    return max_open


def _check_count(records: Any) -> None:
    """A server call carries at most ``MAX_RECORDS_PER_CALL`` records."""
    if isinstance(records, Sequence) and not isinstance(records, str) and len(records) > MAX_RECORDS_PER_CALL:
        raise InputError(
            f"{len(records):,} records in one call; send at most {MAX_RECORDS_PER_CALL:,} per call"
        )


def _context_answer(context: Context, units: int | None) -> dict[str, Any]:
    """A context as the servers answer it: the text, its tokens, its unit and record ids, and
    ``read``: what the budget came to (:func:`~muster_exact.retrieve.explain.read_budget`)."""
    from muster_exact.retrieve.explain import read_budget

    return {
        "read": read_budget(context.plan, units, len(set(context.unit_ids))),
        "query": context.query,
        "context": context.text,
        "tokens": context.tokens,
        "units": list(context.unit_ids),
        "records": list(context.record_ids),
        "blocks": [
            {"records": list(b.records), "metadata": b.metadata, "text": b.text} for b in context.blocks
        ],
    }


def _checked_forget(ids: Any, request_id: Any) -> tuple[list[str] | None, str | None]:
    """A forget's ids or request id, bounded as a server's add is (``MAX_RECORDS_PER_CALL``). Ids
    are a list, as both servers' schemas say (a Python caller may name one id alone)."""
    if ids is not None and not isinstance(ids, list):
        raise InputError(f"ids must be a list of record ids, not {type(ids).__name__}")
    if isinstance(ids, Sequence) and not isinstance(ids, str) and len(ids) > MAX_RECORDS_PER_CALL:
        raise InputError(f"{len(ids):,} ids in one call; send at most {MAX_RECORDS_PER_CALL:,} per call")
    return checked_delete(ids, request_id)


def forget_in(store: Store, ids: Sequence[str] | None, request_id: str | None) -> dict[str, Any]:
    """:meth:`Store.delete` as every surface answers it: the result, and ``erase_pending``.

    ``erase_pending: true`` is :class:`ErasePending`: the records are deleted for every reader,
    but another connection's read still holds pages with their text, so it is on disk until that
    read ends (the open store retries within seconds), the store closes, or its next open or
    write. It is a result, not an error (a retry would find nothing to
    delete); each surface says it its own way (HTTP 202, the CLI's exit 3).
    """
    return erasing(lambda: store.delete(ids, request_id=request_id))


def update_in(store: Store, record_id: Any, record: Any) -> dict[str, Any]:
    """:meth:`Store.update` as every surface answers it: the result, and ``erase_pending``."""
    return erasing(lambda: store.update(record_id, record))


def erasing(write: Callable[[], DeleteResult | UpdateResult]) -> dict[str, Any]:
    """A write that erases text (a delete, an update), answered with ``erase_pending``."""
    try:
        result = write()
    except ErasePending as exc:
        assert isinstance(exc.result, (DeleteResult, UpdateResult))
        return {**exc.result.to_dict(), "erase_pending": True}
    return {**result.to_dict(), "erase_pending": False}


def _checked_read(query: Any, units: Any) -> tuple[str, int | None]:
    """A read's query and budget, refused as a read of any namespace refuses them, empty or not
    (the library's rules: one message on every surface)."""
    from muster_exact.memory import checked_query, checked_units

    return checked_query(query), None if units is None else checked_units(units)


def _path_forms(path: Path | str) -> list[tuple[str, str]]:
    """How the store's location can appear in a message, longest first, and what is said instead."""
    if isinstance(path, str):  # a database's URL, as given and as messages show it
        return sorted(
            {path: "the store", shown_url(path): "the store"}.items(), key=lambda item: -len(item[0])
        )
    forms = {str(path): "the store", str(path.resolve()): "the store"}
    for folder in (path.parent, path.resolve().parent):
        if len(str(folder)) > 1:  # never "." or "/": replacing those would garble every message
            forms.setdefault(str(folder), "the store's folder")
    return sorted(forms.items(), key=lambda item: -len(item[0]))
