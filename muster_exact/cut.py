"""Cutting: units, parents and the two orders, per branch (SPEC 3).

| branch       | unit                                   | parent                  | order  |
|--------------|----------------------------------------|-------------------------|--------|
| numbered log | one line (one record), serial stripped | the line's slot         | serial |
|              | for retrieval                          |                         |        |
| record store | records packed up to the budget, whole | 8 units, halved (8,4,2, | stored |
| prose        | paragraphs packed up to the budget; a  | 1) until >= 10 parents  | stored |
|              | longer paragraph is cut at sentences   |                         |        |

Every unit is a span of the store text, so what the reader sees is verbatim
and every unit maps back to its records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from muster_exact import sentences, serials, slots
from muster_exact.detect import Line, lines_of
from muster_exact.plan import Branch
from muster_exact.records import Source

PARENT_GROUP_START = 8
MIN_PARENTS = 10


@dataclass(frozen=True, slots=True)
class Unit:
    """A retrievable span ``text[start:end]``; ``serial_span`` is cut for retrieval."""

    id: int
    start: int
    end: int
    records: tuple[int, ...]
    parent: int
    tokens: int | None = None
    serial: int | None = None
    serial_span: tuple[int, int] | None = None
    slot: str | None = None


@dataclass(frozen=True)
class Cut:
    source: Source
    units: tuple[Unit, ...]
    parents: tuple[tuple[int, ...], ...]
    serial_order: tuple[int, ...]
    group_size: int | None
    oversize: int

    def text(self, unit: Unit) -> str:
        """What the reader sees: the unit as stored."""
        return self.source.text[unit.start : unit.end]

    def retrieval_text(self, unit: Unit) -> str:
        """What the channels index: the unit without its serial."""
        if unit.serial_span is None:
            return self.text(unit)
        text = self.source.text
        return text[unit.start : unit.serial_span[0]] + text[unit.serial_span[1] : unit.end]

    @property
    def slots_with_versions(self) -> int:
        if self.group_size is not None:
            return 0
        return sum(
            1 for members in self.parents if sum(self.units[u].serial is not None for u in members) > 1
        )


@dataclass(frozen=True, slots=True)
class _Piece:
    start: int
    end: int
    tokens: int
    record: int


def group_size_for(n_units: int) -> int:
    """8 consecutive units per parent, halved until at least 10 parents exist."""
    size = PARENT_GROUP_START
    while size > 1 and math.ceil(n_units / size) < MIN_PARENTS:
        size //= 2
    return size


def cut(
    source: Source,
    *,
    branch: Branch,
    style: str | None,
    unit_budget: int,
    record_tokens: tuple[int, ...],
) -> Cut:
    if branch == "numbered_log":
        return _cut_numbered(source, style or serials.PAPER_STYLE)
    if branch == "record_store":
        pieces = [
            _Piece(r.start, r.end, n, r.index) for r, n in zip(source.records, record_tokens, strict=True)
        ]
    else:
        pieces = _prose_pieces(source, unit_budget, record_tokens)
    return _grouped(source, _pack(pieces, unit_budget), unit_budget)


def _cut_numbered(source: Source, style: str) -> Cut:
    lines: list[Line] = lines_of(source)
    parent_of_slot: dict[str, int] = {}
    parents: list[list[int]] = []
    units: list[Unit] = []
    text = source.text
    for uid, line in enumerate(lines):
        serial = serials.read(text, style, line.body_start)
        slot = None
        if serial is not None:
            slot = slots.slot_of(text[serial.end : line.end])
        # An unmarked line, or one whose slot cannot be read, is its own fact.
        if slot is not None and slot in parent_of_slot:
            parent = parent_of_slot[slot]
        else:
            parent = len(parents)
            parents.append([])
            if slot is not None:
                parent_of_slot[slot] = parent
        parents[parent].append(uid)
        units.append(
            Unit(
                id=uid,
                start=line.start,
                end=line.end,
                records=(line.record,),
                parent=parent,
                serial=None if serial is None else serial.number,
                serial_span=None if serial is None else (line.body_start, serial.end),
                slot=slot,
            )
        )
    return Cut(source, tuple(units), tuple(tuple(p) for p in parents), _serial_order(units), None, 0)


def _serial_order(units: list[Unit]) -> tuple[int, ...]:
    """Units by serial; an unmarked unit stays right after the marked one before it."""
    keys: list[tuple[int, int]] = []
    current = -1
    for unit in units:
        if unit.serial is not None:
            current = unit.serial
        keys.append((current, unit.id))
    return tuple(uid for _, uid in sorted(keys))


def _prose_pieces(source: Source, budget: int, record_tokens: tuple[int, ...]) -> list[_Piece]:
    """Whole paragraphs where they fit; a longer paragraph as its sentences."""
    from muster_exact import tokens

    pieces: list[_Piece] = []
    for record, n in zip(source.records, record_tokens, strict=True):
        if n <= budget:
            pieces.append(_Piece(record.start, record.end, n, record.index))
            continue
        spans = sentences.spans(source.text, record.start, record.end)
        counts = tokens.count_many([source.text[s:e] for s, e in spans])
        pieces.extend(_Piece(s, e, c, record.index) for (s, e), c in zip(spans, counts, strict=True))
    return pieces


def _pack(pieces: list[_Piece], budget: int) -> list[list[_Piece]]:
    """Greedy packing in order; a piece over the budget is a unit of its own."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    used = 0
    for piece in pieces:
        if current and used + piece.tokens > budget:
            groups.append(current)
            current, used = [], 0
        current.append(piece)
        used += piece.tokens
    if current:
        groups.append(current)
    return groups


def _grouped(source: Source, groups: list[list[_Piece]], budget: int) -> Cut:
    size = group_size_for(len(groups))
    units = tuple(
        Unit(
            id=uid,
            start=group[0].start,
            end=group[-1].end,
            records=tuple(dict.fromkeys(p.record for p in group)),
            parent=uid // size,
            tokens=sum(p.tokens for p in group),
        )
        for uid, group in enumerate(groups)
    )
    parents = tuple(
        tuple(range(first, min(first + size, len(units)))) for first in range(0, len(units), size)
    )
    oversize = sum(1 for group in groups if len(group) == 1 and group[0].tokens > budget)
    return Cut(source, units, parents, tuple(range(len(units))), size, oversize)
