"""A derive result as bytes and back: what a store keeps so that a new process opening it
reads its plan, units, parents and detection counts instead of detecting and cutting again.

The bytes are a NumPy ``.npz`` archive of integer arrays and one JSON document (the plan, the
cut's scalars, the slot names, the detection counts). It is read with ``allow_pickle=False``:
the file is input like any other, so nothing in it is executed, and everything read is checked
against the store's records (:func:`load` raises ``ValueError`` when anything disagrees; the
store then derives afresh). What the bytes hold is a function of the records, the derive
settings and the code: :func:`load` is given the records' :class:`~muster_exact.text.records.Source`
and refuses bytes written for other records (the caller keys them by the head hash) or by
another version (``FORMAT``).
"""

from __future__ import annotations

import io
import json
from typing import Any

from muster_exact.core.errors import PlanError
from muster_exact.derive import Derived
from muster_exact.derive.cut import Cut, Unit
from muster_exact.derive.detect import Run, Tally
from muster_exact.derive.plan import Plan
from muster_exact.text.records import Source

# 2: the plan's floors by channel name (plan schema 2). A format-1 row would still read (the plan
# migrates), but the store keys rows by FORMAT, so it is derived afresh once and saved in 2.
# 3: native record-store units no longer than the embedder's window (rules.unit_size): a row of
# 2 holds the cut at the record budget, so it is derived afresh once, not read.
FORMAT = 3
NONE = -1  # an absent count, serial, span or slot in the integer arrays


def dump(derived: Derived) -> bytes:
    import numpy as np

    cut, tally = derived.cut, derived.tally
    slots = sorted({u.slot for u in cut.units if u.slot is not None})
    slot_id = {slot: i for i, slot in enumerate(slots)}

    def column(values: Any) -> Any:
        return np.array(list(values), dtype=np.int64)

    units = cut.units
    arrays = {
        "start": column(u.start for u in units),
        "end": column(u.end for u in units),
        "parent": column(u.parent for u in units),
        "tokens": column(NONE if u.tokens is None else u.tokens for u in units),
        "serial": column(0 if u.serial is None else u.serial for u in units),
        "marked": column(u.serial is not None for u in units),
        "span_start": column(NONE if u.serial_span is None else u.serial_span[0] for u in units),
        "span_end": column(NONE if u.serial_span is None else u.serial_span[1] for u in units),
        "slot": column(NONE if u.slot is None else slot_id[u.slot] for u in units),
        "records": column(r for u in units for r in u.records),
        "records_per_unit": column(len(u.records) for u in units),
        "parents": column(m for members in cut.parents for m in members),
        "parent_sizes": column(len(members) for members in cut.parents),
        "serial_order": column(cut.serial_order),
    }
    meta: dict[str, Any] = {
        "format": FORMAT,
        "plan": derived.plan.to_dict(),
        "group_size": cut.group_size,
        "oversize": cut.oversize,
        "split": cut.split,
        "slots": slots,
        "tally": None,
    }
    if tally is not None:
        arrays["record_tokens"] = column(tally.record_tokens)
        if tally.body_tokens is not None:
            arrays["body_tokens"] = column(tally.body_tokens)
        meta["tally"] = {
            "record_budget": tally.record_budget,
            "records": tally.records,
            "short": tally.short,
            "marked": dict(tally.marked),
            "runs": {s: [r.items, r.steps, r.unmarked, r.last] for s, r in tally.runs.items()},
        }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def load(blob: bytes, source: Source) -> Derived:
    """The derive result ``blob`` holds, for the records of ``source``; ValueError when the bytes
    are damaged, of another format, or do not describe these records."""
    arrays = _arrays(blob)
    try:
        meta = _meta(arrays.pop("meta"))
        plan = Plan.from_dict(meta["plan"])
        cut = _cut(arrays, meta, source)
        tally = _tally(arrays, meta["tally"], source)
    except _INCOMPLETE as exc:
        raise ValueError(f"incomplete saved derive result ({exc!r})") from None
    if plan.stats.units != len(cut.units) or plan.stats.parents != len(cut.parents):
        raise ValueError("the saved plan and cut disagree")
    if plan.stats.records != len(source.records):
        raise ValueError("saved for another number of records")
    return Derived(plan, cut, {}, tally)


def plan_of(blob: bytes) -> Plan:
    """The plan alone that ``blob`` holds (its JSON document; no other array is read, no record
    is needed); ValueError when the bytes are damaged or of another format."""
    arrays = _arrays(blob, "meta")
    try:
        return Plan.from_dict(_meta(arrays["meta"])["plan"])
    except _INCOMPLETE as exc:
        raise ValueError(f"incomplete saved derive result ({exc!r})") from None


# What reading a damaged document or array raises.
_INCOMPLETE = (KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError, PlanError)


def _arrays(blob: bytes, *names: str) -> dict[str, Any]:
    """The archive's arrays (only ``names`` when given); ValueError when it cannot be read."""
    import numpy as np

    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            return {name: archive[name] for name in (names or archive.files)}
    except Exception as exc:  # any failure of the zip reader on damaged bytes
        # (BadZipFile, NotImplementedError for an odd version field, struct.error, a missing
        # member's KeyError, ...) means the same: these bytes cannot be read.
        raise ValueError(f"not a saved derive result ({type(exc).__name__}: {exc})") from None


def _meta(array: Any) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(array.tobytes().decode())
    if meta.get("format") != FORMAT:
        raise ValueError(f"saved in format {meta.get('format')!r}, this version reads {FORMAT}")
    return meta


def _cut(arrays: dict[str, Any], meta: dict[str, Any], source: Source) -> Cut:
    import numpy as np

    n = len(arrays["start"])
    columns = ("end", "parent", "tokens", "serial", "marked", "span_start", "span_end", "slot")
    if any(len(arrays[c]) != n for c in columns) or len(arrays["records_per_unit"]) != n:
        raise ValueError("unit columns of different lengths")
    start, end = arrays["start"], arrays["end"]
    if n and (start.min() < 0 or (end < start).any() or end.max() > len(source.text)):
        raise ValueError("a unit lies outside the store text")
    records_flat = arrays["records"]
    if records_flat.size and (records_flat.min() < 0 or records_flat.max() >= len(source.records)):
        raise ValueError("a unit names a record the store does not hold")
    sizes, members = arrays["parent_sizes"], arrays["parents"]
    if int(sizes.sum()) != len(members) or (members.size and (members.min() < 0 or members.max() >= n)):
        raise ValueError("parents name units that do not exist")
    parent = arrays["parent"]
    if n and (parent.min() < 0 or parent.max() >= len(sizes)):
        raise ValueError("a unit names a parent that does not exist")
    order = arrays["serial_order"]
    if not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError("the serial order is not an order of the units")
    slots = [str(s) for s in meta["slots"]]
    slot = arrays["slot"]
    if n and (slot.min() < NONE or slot.max() >= len(slots)):
        raise ValueError("a unit names a slot that does not exist")
    bounds = np.concatenate(([0], np.cumsum(arrays["records_per_unit"]))).tolist()
    flat = records_flat.tolist()
    units = tuple(
        Unit(
            id=i,
            start=s,
            end=e,
            records=tuple(flat[bounds[i] : bounds[i + 1]]),
            parent=p,
            tokens=None if t == NONE else t,
            serial=v if m else None,
            serial_span=None if a == NONE else (a, b),
            slot=None if k == NONE else slots[k],
        )
        for i, (s, e, p, t, v, m, a, b, k) in enumerate(
            zip(*(arrays[c].tolist() for c in ("start", *columns)), strict=True)
        )
    )
    cuts = np.concatenate(([0], np.cumsum(sizes))).tolist()
    listed = members.tolist()
    parents = tuple(tuple(listed[cuts[i] : cuts[i + 1]]) for i in range(len(sizes)))
    group_size = meta["group_size"]
    return Cut(
        source,
        units,
        parents,
        tuple(order.tolist()),
        None if group_size is None else int(group_size),
        int(meta["oversize"]),
        int(meta["split"]),
    )


def _tally(arrays: dict[str, Any], meta: dict[str, Any] | None, source: Source) -> Tally | None:
    if meta is None:
        return None
    record_tokens = tuple(arrays["record_tokens"].tolist())
    if len(record_tokens) != len(source.records) or meta["records"] != len(source.records):
        raise ValueError("detection counts for another number of records")
    body = arrays.get("body_tokens")
    return Tally(
        record_budget=int(meta["record_budget"]),
        records=int(meta["records"]),
        record_tokens=record_tokens,
        short=int(meta["short"]),
        marked={str(k): int(v) for k, v in meta["marked"].items()},
        runs={
            str(style): Run(int(i), int(s), int(u), None if last is None else int(last))
            for style, (i, s, u, last) in meta["runs"].items()
        },
        body_tokens=None if body is None else tuple(body.tolist()),
    )
