"""The passages of a read as the servers show them: ``POST /v1/search``'s (:func:`search_passages`)
and, with the reasons, the inspector page's.

One read as the inspector page shows it (``POST /v1/inspect``, :meth:`Backend.inspect
<muster_exact.serve.backend.Backend.inspect>`): the context, every unit kept with the channels
that proposed it (and their ranks), its rerank place and score and the floor or fill that kept it,
each channel's floor, and the units ranked just after the cut, with the same fields.

Everything comes from one retrieval pass (:meth:`Store.inspect_query
<muster_exact.store.Store.inspect_query>`): the reasons are those of the context returned, not of
a second read. A filtered read (``where``) shows the matching records of a unit only, as its
context does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from muster_exact.retrieve.assemble import shown_text
from muster_exact.retrieve.explain import read_budget

if TYPE_CHECKING:
    from muster_exact.derive.cut import Cut
    from muster_exact.retrieve.assemble import Candidates
    from muster_exact.store import Store

LEFT_OUT = 5  # units shown after the cut: the best ranked candidates that were not kept


def inspected(store: Store | None, query: str, units: int | None, where: Any) -> dict[str, Any]:
    """The answer of ``POST /v1/inspect`` for a checked query, budget and filter; ``store`` None:
    a namespace never written (answered as an empty one)."""
    if store is None:
        return _nothing(query)
    done = store.inspect_query(query, units, where=where)
    context, details, cut = done.context, done.details, done.cut
    if cut is None:  # an empty namespace: nothing was read
        return _nothing(context.query)
    answer = {"query": context.query, "context": context.text, "tokens": context.tokens}
    proposed = {c["channel"]: c["proposals"] for c in details["channels"]}
    ranks = {name: {u: i for i, u in enumerate(listed, start=1)} for name, listed in proposed.items()}
    order = details["rerank_order"]
    scores = dict(zip(order, details["rerank_scores"], strict=True))
    shown = set(context.unit_ids) | {k["unit"] for k in details["kept"]}
    after = [u for u in order if u not in shown][:LEFT_OUT]
    metadata = {r: m for b in context.blocks for r, m in b.metadata.items()}
    metadata |= store.metadata_of(cut.record_label(r) for u in after for r in cut.units[u].records)
    view = _View(cut, done.allowed, metadata)
    kept = sorted(details["kept"], key=lambda k: (k["rerank_rank"] is None, k["rerank_rank"] or 0, k["unit"]))
    full = f"left out: the {details['units_read']} units of the read budget were taken"
    return {
        **answer,
        "head": context.head.to_dict(),  # the snapshot read, not the head after it (a delete since)
        "units_read": details["units_read"],
        "read": read_budget(context.plan, units, len(kept)),
        "rerank": details["rerank"],
        "graph_seeds": details["graph_seeds"],
        "channels": [
            {"channel": c["channel"], "floor": c["floor"], "proposed": len(c["proposals"])}
            for c in details["channels"]
        ],
        "kept": [view.passage(k["unit"], k["shown_as"], k["channels"], k) for k in kept],
        "left_out": [
            view.passage(u, u, _proposers(ranks, u), _rank(order.index(u) + 1, scores[u], full))
            for u in after
        ],
    }


def _nothing(query: str) -> dict[str, Any]:
    """The answer for a namespace without records: nothing read, nothing kept."""
    empty = {"context": "", "tokens": 0, "units_read": 0, "rerank": None, "graph_seeds": [], "channels": []}
    return {"query": query, **empty, "kept": [], "left_out": []}


def _rank(rank: int, score: float | None, reason: str) -> dict[str, Any]:
    return {"rerank_rank": rank, "rerank_score": score, "reason": reason}


def _proposers(ranks: Mapping[str, Mapping[int, int]], unit: int) -> dict[str, int]:
    """The channels that proposed ``unit``, each with its 1-based rank there."""
    return {name: by_unit[unit] for name, by_unit in ranks.items() if unit in by_unit}


class _View:
    """A unit as a read shows it: its text and records (a filtered read's matching ones only)."""

    def __init__(self, cut: Cut, allowed: Candidates | None, metadata: Mapping[str, Any]) -> None:
        self.cut, self.allowed, self.metadata = cut, allowed, metadata

    def passage(
        self, unit: int, shown_as: int, channels: dict[str, int], why: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``unit`` (shown as ``shown_as``), the ``channels`` that proposed it and ``why`` it is
        where it is: its ``rerank_rank``, ``rerank_score`` and ``reason``."""
        shown = self.cut.units[shown_as]
        records = [
            self.cut.record_label(r)
            for r in shown.records
            if self.allowed is None or r in self.allowed.records
        ]
        return {
            "unit": unit,
            "shown_as": shown_as,
            "parent": shown.parent,
            "text": shown_text(self.cut, shown, self.allowed),
            "records": records,
            "metadata": {r: self.metadata[r] for r in records if r in self.metadata},
            "channels": channels,
            "rerank_rank": why["rerank_rank"],
            "rerank_score": why["rerank_score"],
            "reason": why["reason"],
        }


def search_passages(store: Store, query: str, units: int | None, where: Any) -> dict[str, Any]:
    """The selected passages, best first, each with its unit id, parent, records, their metadata
    and why it was chosen (``POST /v1/search``); a filtered read's matching records only; and the
    head of the snapshot they were read in."""
    done = store.inspect_query(query, units, where=where)
    context = done.context
    head = context.head.to_dict()
    if done.cut is None:  # an empty namespace
        return {"passages": [], "head": head}
    metadata = {r: m for b in context.blocks for r, m in b.metadata.items()}
    view = _View(done.cut, done.allowed, metadata)
    ranked = sorted(context.provenance, key=lambda p: (p.rerank_rank is None, p.rerank_rank or 0, p.unit))
    return {
        "passages": [view.passage(p.shown_as, p.shown_as, p.channels, p.__dict__) for p in ranked],
        "read": read_budget(context.plan, units, len(ranked)),
        "head": head,
    }
