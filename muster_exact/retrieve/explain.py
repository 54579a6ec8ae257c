"""``explain(plan)``: the plan in words, for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from muster_exact.derive.plan import Plan
from muster_exact.retrieve.rerank import describe

if TYPE_CHECKING:
    from muster_exact.models import Models

_BRANCH_NAMES = {"numbered_log": "numbered log", "record_store": "record store", "prose": "prose"}


def explain(plan: Plan) -> str:
    s = plan.stats
    item = "record" if plan.layout == "records" else "line"
    unit = (
        f"one {item} per unit, serial stripped for retrieval"
        if plan.branch == "numbered_log"
        else f"packed up to {plan.unit_budget} tokens, records never split"
        if plan.branch == "record_store"
        else f"paragraphs packed up to {plan.unit_budget} tokens, longer ones cut at sentences"
    )
    parent = (
        f"the {item}'s slot (entity + attribute)"
        if plan.parent_rule == "slot"
        else f"{plan.parent_group_size} consecutive units"
    )
    lines = [
        f"branch: {_BRANCH_NAMES[plan.branch]} ({plan.mode} mode, {plan.layout} input)",
        f"  serial share  {plan.serial_share:.4f}  (numbered log at >= {plan.thresholds.serial_share:.2f})",
        f"  record share  {plan.record_share:.4f}  (record store at >= {plan.thresholds.record_share:.2f})",
    ]
    if plan.serial_style and plan.serial_style != "dot":
        lines.append(
            f"  native serial style '{plan.serial_style}': continuity "
            f"{plan.native_continuity:.4f}, median line {plan.native_median_tokens:g} tokens"
        )
    lines += [
        f"units: {unit}",
        f"parents: {parent}",
        f"order: {plan.order}; newest version of a slot wins: {'yes' if plan.supersession else 'no'}",
        f"floors per 10 units, by channel; read budget U = {plan.units_read}{_units_taken(plan)}",
        *_floor_lines(plan),
        f"measured: {s.records} records, "
        + (f"{s.lines} non-empty lines, " if plan.layout == "text" else "")
        + f"{s.tokens} tokens -> "
        f"{s.units} units, {s.parents} parents, {s.oversize_records} oversize",
        *_retrieval_lines(plan),
        "why:",
        *(f"  - {reason}" for reason in plan.reasons),
    ]
    return "\n".join(lines)


def _units_taken(plan: Plan) -> str:
    taken = plan.units_to_read(plan.units_read)
    return "" if taken == plan.units_read else f" ({taken} units of at most {plan.unit_budget} tokens)"


def _floor_lines(plan: Plan) -> list[str]:
    """One line per channel, in channel order, by the name the plan JSON uses."""
    width = max(map(len, plan.floors), default=0)
    return [f"  {name:<{width}}  {floor}" for name, floor in plan.floors.items()]


def _retrieval_lines(plan: Plan) -> list[str]:
    r = plan.retrieval
    if r is None:
        return []
    embedder = f"embedder {r.embedder}" + (f", cross-encoder {r.reranker}" if r.reranker else "")
    return [
        f"retrieval: {embedder}; order by {describe(r.rerank)}",
        f"  rules: units up to the {r.unit_size}, pieces {r.pieces} (pooled by {r.pooling}), "
        f"BM25 analyser {r.lexical}, "
        f"floors {r.floors} (in {r.floor_order} order), graph floor {r.graph_floor}, "
        f"graph votes {r.graph_votes}, graph facts {r.graph_facts}, pool messages {r.pool_messages}, "
        f"dense feedback {r.dense_feedback}, coverage {r.coverage}",
    ]


def models_line(models: Models) -> str:
    """Which models reads use, and why when ``auto`` (or the store) chose them."""
    why = f" ({models.chosen_by})" if models.chosen_by else ""
    return f"models: {models.name}{why}"


def read_budget(plan: Plan | None, asked: int | None, selected: int) -> dict[str, object]:
    """What a read's budget came to, for a response: U as asked (else the plan's), the units that
    U takes (:meth:`Plan.units_to_read`: two per U where units are cut at half the record budget,
    as ``cpu-small`` cuts them), the units selected, and ``note``, in words, why U and the units
    taken differ and when the whole store fit the budget (empty when neither). No plan (a
    namespace with no records): nothing was read."""
    if plan is None:
        return {"units_asked": asked, "units_read": 0, "units_selected": 0, "note": ""}
    units = plan.units_read if asked is None else asked
    taken = plan.units_to_read(units)
    notes = []
    if taken != units:
        notes.append(
            f"U = {units} reads {taken} units: U counts {plan.record_budget}-token units, and this "
            f"store's units are cut at {plan.unit_budget} tokens (the embedder's window)"
        )
    total = plan.stats.units
    if total and selected >= total:
        notes.append(f"the whole store fit the budget: all {total} of its units are in the context")
    return {"units_asked": units, "units_read": taken, "units_selected": selected, "note": "; ".join(notes)}
