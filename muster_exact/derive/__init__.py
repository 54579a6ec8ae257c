"""``derive``: records -> detection -> cut -> Plan, in one pass over the text."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from muster_exact.cache.memo import Memo
from muster_exact.channels import by_channel
from muster_exact.core.errors import InputError, PlanError
from muster_exact.derive import cut as cutting
from muster_exact.derive import growth as growing
from muster_exact.derive.detect import Detection, Tally, detect
from muster_exact.derive.plan import MODES, Branch, Mode, Plan, Stats, Thresholds
from muster_exact.text.records import Source, from_any

log = logging.getLogger(__name__)

RECORD_BUDGET = 512
PROSE_BUDGET = 1024
# Floors per ten units, by channel name (muster_exact.channels), and the default read budget U.
FLOORS: dict[Branch, dict[str, int]] = {
    "numbered_log": {"dense": 2, "bm25": 0, "graph": 8},
    "record_store": {"dense": 4, "bm25": 3, "graph": 3},
    "prose": {"dense": 4, "bm25": 3, "graph": 3},
}
UNITS_READ: dict[Branch, int] = {"numbered_log": 10, "record_store": 10, "prose": 40}


@dataclass(frozen=True)
class Derived:
    """A plan together with the cut it describes, and what each step took."""

    plan: Plan
    cut: cutting.Cut
    timings: dict[str, float] = field(default_factory=dict)
    tally: Tally | None = None  # detection's running counts (records layout), for growth


def _check_options(mode: str, record_budget: int, prose_budget: int, window: int | None = None) -> None:
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; use {' or '.join(map(repr, MODES))}")
    budgets = (("record_budget", record_budget), ("prose_budget", prose_budget), ("window", window))
    for name, value in budgets:
        if name == "window" and value is None:
            continue
        if not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive number of tokens, not {value!r}")


def analyse(
    data: Any,
    *,
    mode: Mode = "native",
    record_budget: int = RECORD_BUDGET,
    prose_budget: int = PROSE_BUDGET,
    window: int | None = None,
    memo: Memo | None = None,
) -> Derived:
    """Derive the plan of a store and cut it. ``data``: text, records, Path or Source.
    ``window``: record-store units no longer than this either (the embedder's window, in native
    mode; detection still counts records against ``record_budget``).
    ``memo`` keeps per-text counts for the next derive of a growing store."""
    _check_options(mode, record_budget, prose_budget, window)
    started = time.perf_counter()
    source = from_any(data)
    found = detect(source, mode=mode, record_budget=record_budget, memo=memo)
    detected = time.perf_counter()
    records = record_unit_budget(record_budget, window)
    budget = {"numbered_log": None, "record_store": records, "prose": prose_budget}[found.branch]
    the_cut = cutting.cut(
        source,
        branch=found.branch,
        style=found.style,
        unit_budget=budget or record_budget,
        record_tokens=found.record_tokens,
        memo=memo,
    )
    plan = plan_for(source, found, the_cut, mode, budget, record_budget, prose_budget)
    timings = {"detect": detected - started, "cut": time.perf_counter() - detected}
    log.debug("derived %s: %d units, %d parents", plan.branch, len(the_cut.units), len(the_cut.parents))
    return Derived(plan, the_cut, timings, found.tally)


def record_unit_budget(record_budget: int, window: int | None) -> int:
    """A record store's unit budget: the record budget, and no more than ``window`` if given."""
    return min(record_budget, window) if window else record_budget


def grown(
    previous: Derived, source: Source, memo: Memo | None = None
) -> tuple[Derived, growing.Growth] | str:
    """``previous`` extended by the records ``source`` appends to its own: what :func:`analyse`
    gives ``source`` (same mode and budgets), with detection's counts and the cut extended by
    the new records only. When the new records change the branch or the serial style, the
    reason, for a fresh analysis (every unit is then cut anew, and that is right)."""
    plan = previous.plan
    started = time.perf_counter()
    found = detect(source, mode=plan.mode, record_budget=plan.record_budget, memo=memo, tally=previous.tally)
    detected = time.perf_counter()
    if (found.branch, found.style) != (plan.branch, plan.serial_style):
        return (
            f"the branch changed from {plan.branch} ({plan.serial_style or 'no'} serials) to "
            f"{found.branch} ({found.style or 'no'} serials)"
        )
    the_cut, growth = growing.grown(
        previous.cut,
        source,
        branch=found.branch,
        style=found.style,
        unit_budget=plan.unit_budget or plan.record_budget,
        record_tokens=found.record_tokens,
        memo=memo,
    )
    new_plan = plan_for(
        source, found, the_cut, plan.mode, plan.unit_budget, plan.record_budget, plan.prose_budget
    )
    timings = {"detect": detected - started, "cut": time.perf_counter() - detected}
    return Derived(new_plan, the_cut, timings, found.tally), growth


def derive(data: Any, **options: Any) -> Plan:
    """The plan of a store: branch, statistics, settings and the reasons for them."""
    return analyse(data, **options).plan


def plan_for(
    source: Source,
    found: Detection,
    the_cut: cutting.Cut,
    mode: Mode,
    budget: int | None,
    record_budget: int,
    prose_budget: int,
) -> Plan:
    """The plan of ``source`` from its detection and cut (and the reasons, in words)."""
    branch = found.branch
    numbered = branch == "numbered_log"
    reasons = list(found.reasons)
    if numbered:
        reasons.append(
            f"parents: one per slot (entity + attribute); {len(the_cut.parents)} slots, "
            f"{the_cut.slots_with_versions} with more than one version"
        )
    else:
        reasons.append(
            f"parents: {the_cut.group_size} consecutive units each "
            f"(8 halved until at least 10 parents), {len(the_cut.parents)} parents"
        )
    unit = "line" if numbered else "record"
    if branch == "record_store" and budget and budget < record_budget:
        reasons.append(
            f"units: at most {budget} tokens, the embedder's window, so it reads each unit whole; "
            f"U counts units of the {record_budget}-token record budget, so a read takes "
            f"{record_budget / budget:g} units per U (the same tokens)"
        )
    if the_cut.oversize:
        reasons.append(
            f"{the_cut.oversize} {unit}(s) longer than {budget or record_budget} tokens cut at "
            "sentence breaks, so no unit is over the budget"
        )
    if the_cut.split:
        reasons.append(
            f"{the_cut.split} of them with a sentence over the budget (no break to cut at), "
            "cut at token boundaries"
        )
    return Plan(
        branch=branch,
        mode=mode,
        layout=source.layout,
        serial_share=found.serial_share,
        record_share=found.record_share,
        serial_style=found.style,
        native_continuity=found.continuity,
        native_median_tokens=found.median_tokens,
        unit_budget=budget,
        record_budget=record_budget,
        prose_budget=prose_budget,
        parent_rule="slot" if numbered else "group",
        parent_group_size=the_cut.group_size,
        floors=by_channel(FLOORS[branch]),  # a copy, over every channel in order
        units_read=UNITS_READ[branch],
        order="serial" if numbered else "stored",
        supersession=found.supersession,
        thresholds=Thresholds(),
        stats=Stats(
            records=len(source.records),
            lines=found.n_lines,
            tokens=sum(found.record_tokens),
            units=len(the_cut.units),
            parents=len(the_cut.parents),
            oversize_records=the_cut.oversize,
            slots_with_versions=the_cut.slots_with_versions,
        ),
        reasons=tuple(reasons),
    )


def recut(data: Any, plan: Plan) -> cutting.Cut:
    """Cut a store by a given plan (for instance one read back from JSON).

    Raises PlanError when the plan was not derived from this store.
    """
    source = from_any(data)
    found = detect(source, mode=plan.mode, record_budget=plan.record_budget)
    the_cut = cutting.cut(
        source,
        branch=plan.branch,
        style=plan.serial_style,
        unit_budget=plan.unit_budget or plan.record_budget,
        record_tokens=found.record_tokens,
    )
    if len(the_cut.units) != plan.stats.units or len(the_cut.parents) != plan.stats.parents:
        raise PlanError(
            f"this plan describes a store with {plan.stats.units} units and {plan.stats.parents} "
            f"parents, but cutting this store by it gives {len(the_cut.units)} and "
            f"{len(the_cut.parents)}; derive the plan from this store"
        )
    return the_cut
