"""The one backend every server and integration calls: remember, recall, search, info.

Each operation takes plain values and returns plain JSON-ready dicts, so the
MCP tools, the HTTP routes and the framework tools are thin shells around
it. Stores are opened per namespace on first use and kept open; a request
that does not name a namespace uses the backend's default. Errors are the
library's typed errors (:class:`~muster_exact.errors.InputError` for what
the caller sent, :class:`~muster_exact.store.StoreError` for the file);
each server turns them into its own answers in one place.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from muster_exact.assemble import record_label
from muster_exact.errors import InputError
from muster_exact.store import DEFAULT_NAMESPACE, Store

MAX_UNITS = 200  # a read budget beyond this is almost surely a mistake (and a slow reply)
MAX_RECORDS_PER_CALL = 10_000


class Backend:
    """A store file served to many callers (thread-safe)."""

    def __init__(
        self,
        path: str | Path,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        preset: str | None = None,
        models: Any = None,
    ) -> None:
        self.path = Path(path)
        self.namespace = namespace
        self.preset = preset
        self.models = models
        self._stores: dict[str, Store] = {}
        self._lock = threading.Lock()
        self.store()  # open (or create) the file now: a bad path fails at start, not at the first call

    def store(self, namespace: str | None = None) -> Store:
        name = namespace or self.namespace
        with self._lock:
            if name not in self._stores:
                self._stores[name] = Store.open(self.path, name, preset=self.preset, models=self.models)
            return self._stores[name]

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()

    # -- operations

    def remember(
        self, records: Any, request_id: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """Add one record or a list of them (one transaction; no model call)."""
        if (
            isinstance(records, Sequence)
            and not isinstance(records, str)
            and len(records) > MAX_RECORDS_PER_CALL
        ):
            raise InputError(
                f"{len(records):,} records in one call; send at most {MAX_RECORDS_PER_CALL:,} per call"
            )
        return self.store(namespace).add(records, request_id=request_id).to_dict()

    def recall(self, query: str, units: int | None = None, namespace: str | None = None) -> dict[str, Any]:
        """The assembled context for ``query``: verbatim text in stored order, with its provenance."""
        context = self.store(namespace).context(query, _units(units))
        return {
            "query": context.query,
            "context": context.text,
            "tokens": context.tokens,
            "units": list(context.unit_ids),
            "records": list(context.record_ids),
            "head": self.store(namespace).head().to_dict(),
        }

    def search(self, query: str, units: int | None = None, namespace: str | None = None) -> dict[str, Any]:
        """The selected passages, best first, each with its unit id, records and why it was chosen;
        no assembly (no grouping, no stored order)."""
        store = self.store(namespace)
        memory = store.memory()
        context = memory.context(query, _units(units))
        cut = memory.cut
        passages = []
        for p in sorted(
            context.provenance, key=lambda p: (p.rerank_rank is None, p.rerank_rank or 0, p.unit)
        ):
            unit = cut.units[p.shown_as]
            passages.append(
                {
                    "unit": p.shown_as,
                    "text": cut.text(unit),
                    "records": [record_label(cut, r) for r in unit.records],
                    "channels": p.channels,
                    "rerank_rank": p.rerank_rank,
                    "rerank_score": p.rerank_score,
                    "reason": p.reason,
                }
            )
        return {"query": query, "passages": passages, "head": store.head().to_dict()}

    def info(self, namespace: str | None = None) -> dict[str, Any]:
        """Namespaces, this namespace's head, its plan (when it has records) and the models reads use."""
        store = self.store(namespace)
        head = store.head()
        plan = store.plan().to_dict() if head.records else None
        from muster_exact.memory import default_models
        from muster_exact.models import profile

        models = profile(self.models or default_models())
        return {
            "path": str(self.path),
            "namespaces": store.namespaces(),
            "head": head.to_dict(),
            "plan": plan,
            "preset": self.preset,
            "models": models.to_dict(),
        }


def _units(units: int | None) -> int | None:
    if units is None:
        return None
    if isinstance(units, bool) or not isinstance(units, int) or not 1 <= units <= MAX_UNITS:
        raise InputError(f"units must be a whole number from 1 to {MAX_UNITS}, not {units!r}")
    return units
