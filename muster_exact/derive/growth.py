"""Growing a cut (:mod:`muster_exact.derive.cut`): a store that gains records is cut again only from
the first unit the new records change; the units before it stay as they were. What a fresh cut
of all the records gives, unit for unit (tests/derive/test_growth.py)."""

from __future__ import annotations

from dataclasses import dataclass

from muster_exact.cache.memo import Memo
from muster_exact.derive.cut import (
    Cut,
    Unit,
    _grouped_parents,
    _numbered_units,
    _pack,
    _record_store_pieces,
    _serial_order,
    _units,
    group_size_for,
)
from muster_exact.derive.detect import record_lines
from muster_exact.derive.plan import Branch
from muster_exact.text import serials
from muster_exact.text.records import Record, Source


@dataclass(frozen=True)
class Growth:
    """What growing a cut changed: units before ``first_unit`` are the previous cut's, as they
    were; ``parents`` lists the parents whose members changed (all of them when regrouped)."""

    first_unit: int
    parents: tuple[int, ...]
    regrouped: bool = False


def grown(
    previous: Cut,
    source: Source,
    *,
    branch: Branch,
    style: str | None,
    unit_budget: int,
    record_tokens: tuple[int, ...],
    memo: Memo | None = None,
) -> tuple[Cut, Growth]:
    """``previous``, a cut of the first records of the records-layout ``source`` by the same
    branch, style and budget, extended by the records after them: the cut :func:`cut` gives
    ``source``, with only the tail cut again.

    Why the head stands: on a numbered log a unit is one line and a slot's parent only gains
    members; records and paragraphs are packed greedily in order, so every unit before the last
    closed on a piece that the last unit begins with, and packing again from there gives what
    packing from the start gives. A parent group size that changes with the unit count regroups
    every parent (no unit is cut again for it)."""
    n = len(previous.source.records)
    if (
        source.layout != "records"
        or len(source.records) < n
        or source.records[n - 1] != previous.source.records[-1]
        or not source.text.startswith(previous.source.text)
    ):
        raise ValueError("a cut grows only by records appended to a records-layout source")
    new_records = source.records[n:]
    if branch == "numbered_log":
        return _grown_numbered(previous, source, style or serials.PAPER_STYLE, unit_budget, new_records)
    last = previous.units[-1]
    keep = last.id
    tail = range(last.records[0], len(source.records))
    # The last unit's pieces (a record it starts inside of, from where it starts), then the new.
    pieces = [
        p
        for p in _record_store_pieces(source, tail, record_tokens, unit_budget, memo)
        if p.start >= last.start
    ]
    split_records = {p.record for p in pieces if p.split and p.record >= len(previous.source.records)}
    fresh = record_tokens[len(previous.source.records) :]
    oversize = previous.oversize + sum(n > unit_budget for n in fresh)
    groups = _pack(pieces, unit_budget)
    size = group_size_for(keep + len(groups))
    units = [
        *(
            previous.units[:keep]
            if size == previous.group_size
            else (u._replace(parent=u.id // size) for u in previous.units[:keep])
        ),
        *_units(groups, keep, size),
    ]
    whole = _grouped_parents(len(units), size)
    regrouped = size != previous.group_size
    changed = range(len(whole)) if regrouped else range(keep // size, len(whole))
    the_cut = Cut(
        source,
        tuple(units),
        whole,
        tuple(range(len(units))),
        size,
        oversize,
        previous.split + len(split_records),
    )
    return the_cut, Growth(keep, tuple(changed), regrouped)


def _grown_numbered(
    previous: Cut, source: Source, style: str, budget: int, new_records: tuple[Record, ...]
) -> tuple[Cut, Growth]:
    units = list(previous.units)
    parents = list(previous.parents)
    parent_of_slot: dict[str, int] = {}
    for p, members in enumerate(previous.parents):
        slot = previous.units[members[0]].slot  # a slot's parent begins with a unit of it
        if slot is not None:
            parent_of_slot[slot] = p
    lines = record_lines(new_records)
    oversize, split = _numbered_units(source, lines, style, budget, units, parents, parent_of_slot)
    keep = len(previous.units)
    changed = sorted({u.parent for u in units[keep:]})
    order = _appended_order(previous, units)
    the_cut = Cut(
        source,
        tuple(units),
        tuple(parents),
        order,
        None,
        previous.oversize + oversize,
        previous.split + split,
    )
    return the_cut, Growth(keep, tuple(changed))


def _appended_order(previous: Cut, units: list[Unit]) -> tuple[int, ...]:
    """The serial order of ``units``, the previous cut's units followed by new ones: the previous
    order then the new units' when every new key sorts after the old ones, else sorted afresh."""
    keep = len(previous.units)
    current = _key_of(units, keep - 1)[0]
    new_keys = []
    for unit in units[keep:]:
        if unit.serial is not None:
            current = unit.serial
        new_keys.append((current, unit.id))
    if previous.serial_order and all(key > _key_of(units, previous.serial_order[-1]) for key in new_keys):
        return (*previous.serial_order, *(uid for _, uid in sorted(new_keys)))
    return _serial_order(units)


def _key_of(units: list[Unit], uid: int) -> tuple[int, int]:
    """Unit ``uid``'s key in the serial order (as ``_serial_order`` keys it): the serial of the
    last marked unit up to it, -1 when none is."""
    for at in range(uid, -1, -1):
        serial = units[at].serial
        if serial is not None:
            return (serial, uid)
    return (-1, uid)
