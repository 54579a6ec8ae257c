"""Cutting: units, parents and the two orders, per branch (SPEC 3).

| branch       | unit                                   | parent                  | order  |
|--------------|----------------------------------------|-------------------------|--------|
| numbered log | one line (one record), serial stripped | the line's slot         | serial |
|              | for retrieval                          |                         |        |
| record store | records packed up to the budget; a     | 8 units, halved (8,4,2, | stored |
|              | longer record is cut at sentences      | 1) until >= 10 parents  |        |
| prose        | paragraphs, the same rule              | as record store         | stored |

Every unit is a span of the store text, so what the reader sees is verbatim
and every unit maps back to its records.

No unit is longer than its budget, on any branch (issue 12): a record (a
line on a numbered log) within the budget stays whole; a longer one is cut
at its sentence breaks, and a sentence still longer at token boundaries
(``_token_windows``). So a context of U units is at most U budgets, and no
unit can be a whole namespace.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from muster_exact.cache.memo import Codec, Memo, counts
from muster_exact.derive.detect import Line, lines_of, record_lines
from muster_exact.derive.plan import Branch
from muster_exact.text import sentences, serials, slots, tokens
from muster_exact.text.records import Source

PARENT_GROUP_START = 8
MIN_PARENTS = 10


class Unit(NamedTuple):
    """A retrievable span ``text[start:end]``; ``serial_span`` is cut for retrieval.

    A named tuple, not a frozen dataclass: as immutable, and a third of the cost to make, which
    counts on a numbered log (one unit per line; results/bench/derive.md)."""

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
    oversize: int  # records (lines) longer than the unit budget, so cut into more than one unit
    split: int = 0  # of those, records with a stretch and no sentence break, cut at token boundaries

    def text(self, unit: Unit) -> str:
        """What the reader sees: the unit as stored."""
        return self.source.text[unit.start : unit.end]

    def retrieval_text(self, unit: Unit) -> str:
        """What the channels index: the unit without its serial."""
        if unit.serial_span is None:
            return self.text(unit)
        text = self.source.text
        return text[unit.start : unit.serial_span[0]] + text[unit.serial_span[1] : unit.end]

    def record_label(self, index: int) -> str:
        """A record's name: the id its source gives it (a benchmark's turn or message id), else
        ``r<index>``. What a context's record ids, the evidence and the pool rule read."""
        source_id = self.source.records[index].source_id
        return source_id if source_id is not None else f"r{index}"

    @functools.cached_property
    def shown_records(self) -> tuple[frozenset[str], ...]:
        """Each unit's records by name (:meth:`record_label`): a message longer than a unit is
        shown by each of its units. Computed once per cut (a grown store's cut is a new one)."""
        return tuple(frozenset(self.record_label(r) for r in unit.records) for unit in self.units)

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
    split: bool = False  # one of the token windows of a sentence over the budget


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
    memo: Memo | None = None,
) -> Cut:
    if branch == "numbered_log":
        return _cut_numbered(source, style or serials.PAPER_STYLE, unit_budget)
    # Record store and prose share the rule; only their budgets differ.
    pieces = _record_store_pieces(source, range(len(source.records)), record_tokens, unit_budget, memo)
    oversize = sum(n > unit_budget for n in record_tokens)
    split = len({p.record for p in pieces if p.split})
    return _grouped(source, _pack(pieces, unit_budget), oversize, split)


def _record_store_pieces(
    source: Source, indexes: range, record_tokens: tuple[int, ...], budget: int, memo: Memo | None
) -> list[_Piece]:
    """The pieces of the records ``indexes``: a record within the budget whole, a longer one cut
    (``_relative_pieces``). A record over the budget is cut the same way wherever it lies, so its
    pieces (offsets within it) are kept in the memo."""
    text = source.text
    records = [source.records[i] for i in indexes]
    long = [text[r.start : r.end] for r in records if record_tokens[r.index] > budget]
    kept = iter(
        (memo or Memo()).many(
            f"record-pieces:{budget}",
            long,
            lambda new: [_relative_pieces(t, budget) for t in new],
            PIECES,
        )
    )
    pieces = []
    for record in records:
        n = record_tokens[record.index]
        if n <= budget:
            pieces.append(_Piece(record.start, record.end, n, record.index))
        else:
            at = record.start
            pieces.extend(_Piece(at + a, at + b, m, record.index, cut) for a, b, m, cut in next(kept))
    return pieces


# A record's pieces as the memo keeps them: (start, end, tokens, cut at token boundaries), offsets
# within the record.
PIECES: Codec[list[tuple[int, int, int, bool]]] = Codec(
    lambda pieces: [[a, b, m, int(c)] for a, b, m, c in pieces],
    lambda rows: [(a, b, m, bool(c)) for a, b, m, c in (counts(row) for row in rows)],
)


def _relative_pieces(record_text: str, budget: int) -> list[tuple[int, int, int, bool]]:
    """A record over the budget cut as :func:`_record_pieces` cuts it, offsets within the record
    (sentence and token cuts read nothing outside the record)."""
    over = budget + 1  # the caller counted the record: it is over the budget
    return [
        (p.start, p.end, p.tokens, p.split)
        for p in _record_pieces(record_text, 0, len(record_text), over, 0, budget)
    ]


def _record_pieces(text: str, start: int, end: int, n: int, record: int, budget: int) -> list[_Piece]:
    """A record within the budget whole; a longer one as its sentences, and a sentence still longer
    than the budget (no break to cut at) as its token windows."""
    if n <= budget:
        return [_Piece(start, end, n, record)]
    spans = sentences.spans(text, start, end)
    counts = tokens.count_many([text[s:e] for s, e in spans])
    pieces: list[_Piece] = []
    for (s, e), c in zip(spans, counts, strict=True):
        if c <= budget:
            pieces.append(_Piece(s, e, c, record))
        else:
            windows = _token_windows(text, s, e, budget)
            pieces.extend(_Piece(a, b, m, record, split=True) for a, b, m in windows)
    return pieces


def _cut_numbered(source: Source, style: str, budget: int) -> Cut:
    """One unit per line; a line over the budget is cut as a record is (``_record_pieces``), its
    first part keeping the serial and slot, every later part its own unmarked fact."""
    units: list[Unit] = []
    parents: list[tuple[int, ...]] = []
    oversize, split = _numbered_units(source, lines_of(source), style, budget, units, parents, {})
    return Cut(source, tuple(units), tuple(parents), _serial_order(units), None, oversize, split)


def cut_declared(source: Source, numbers: Sequence[int | None], budget: int) -> Cut:
    """A declared record array (:mod:`muster_exact.derive.declared`) cut as a numbered log is: one unit
    per record (a longer one in parts), each marked record's unit in its slot's parent, but in
    the declared order (the array's), whatever the serials say. ``source`` holds the records'
    bodies, their markers already set aside, so ``numbers`` gives each record's serial and
    nothing is stripped for retrieval."""
    marks = [
        None if number is None else serials.Serial(number, record.body_start)
        for number, record in zip(numbers, source.records, strict=True)
    ]
    units: list[Unit] = []
    parents: list[tuple[int, ...]] = []
    lines = record_lines(source.records)
    oversize, split = _numbered_units(source, lines, serials.PAPER_STYLE, budget, units, parents, {}, marks)
    return Cut(source, tuple(units), tuple(parents), tuple(range(len(units))), None, oversize, split)


def _numbered_units(
    source: Source,
    lines: list[Line],
    style: str,
    budget: int,
    units: list[Unit],
    parents: list[tuple[int, ...]],
    parent_of_slot: dict[str, int],
    marks: Sequence[serials.Serial | None] | None = None,
) -> tuple[int, int]:
    """Append the units of ``lines`` to ``units``, each to its slot's parent in ``parents``
    (``parent_of_slot``: the parents of the slots read so far); (lines cut in parts, lines with
    a part cut at token boundaries). A fresh cut starts from nothing; a grown one from the
    previous cut's units and parents. ``marks``: each line's serial as declared (not read from
    the text in ``style``), for :func:`cut_declared`."""
    grown: dict[int, list[int]] = {}  # parents given units here, their members so far
    text = source.text
    oversize = split = 0
    surely_short = budget // 4  # characters: a line this short is within the budget (no count)
    for at, line in enumerate(lines):
        serial = serials.read(text, style, line.body_start) if marks is None else marks[at]
        slot = None if serial is None else slots.slot_of(text[serial.end : line.end])
        if line.end - line.start <= surely_short:
            spans: list[tuple[int, int, int | None, bool]] = [(line.start, line.end, None, False)]
        else:
            spans = _line_spans(text, line, budget)
            oversize += len(spans) > 1
            split += any(cut_at_tokens for *_, cut_at_tokens in spans)
        for part, (start, end, n, _) in enumerate(spans):
            marked = serial if part == 0 else None
            part_slot = slot if part == 0 else None
            # An unmarked line, or one whose slot cannot be read, is its own fact.
            parent = parent_of_slot.get(part_slot, -1) if part_slot is not None else -1
            if parent < 0:
                parent = len(parents)
                parents.append(())
                if part_slot is not None:
                    parent_of_slot[part_slot] = parent
            if parent not in grown:
                grown[parent] = list(parents[parent])
            grown[parent].append(len(units))
            units.append(
                Unit(
                    id=len(units),
                    start=start,
                    end=end,
                    records=(line.record,),
                    parent=parent,
                    tokens=n,
                    serial=None if marked is None else marked.number,
                    serial_span=None if marked is None else (line.body_start, marked.end),
                    slot=part_slot,
                )
            )
    for parent, members in grown.items():
        parents[parent] = tuple(members)
    return oversize, split


def _line_spans(text: str, line: Line, budget: int) -> list[tuple[int, int, int | None, bool]]:
    """The line whole (tokens not counted: most lines are short), or its pieces packed into units:
    (start, end, tokens, whether a piece was cut at token boundaries)."""
    body = text[line.start : line.end]
    # A token is at least one UTF-8 byte: a line of at most ``budget`` bytes fits.
    if len(body) <= budget // 4 or len(body.encode("utf-8")) <= budget:
        return [(line.start, line.end, None, False)]
    n = tokens.count(body)
    if n <= budget:
        return [(line.start, line.end, None, False)]
    pieces = _record_pieces(text, line.start, line.end, n, line.record, budget)
    return [
        (group[0].start, group[-1].end, sum(p.tokens for p in group), any(p.split for p in group))
        for group in _pack(pieces, budget)
    ]


def _serial_order(units: list[Unit]) -> tuple[int, ...]:
    """Units by serial; an unmarked unit stays right after the marked one before it."""
    keys: list[tuple[int, int]] = []
    current = -1
    for unit in units:
        if unit.serial is not None:
            current = unit.serial
        keys.append((current, unit.id))
    return tuple(uid for _, uid in sorted(keys))


def _token_windows(text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
    """``text[start:end]`` as consecutive spans of at most ``budget`` tokens: (start, end, tokens).

    A cut falls where a token of the span's encoding ends, moved back to the start of a character
    when that token ends inside one (cl100k splits some characters into bytes). Each window is
    counted again on its own, as every other piece is, and shortened in the rare case its own
    encoding comes out longer than the budget. Together the windows are the span, verbatim.
    """
    encoding = tokens.encoding()
    raw = text[start:end].encode("utf-8")
    ids = encoding.encode_ordinary(text[start:end])
    ends = list(itertools.accumulate(len(encoding.decode_single_token_bytes(t)) for t in ids))
    windows: list[tuple[int, int, int]] = []
    done = 0  # bytes of the span already in a window
    char = start
    while done < len(raw):
        first = bisect.bisect_right(ends, done)  # the first token that ends after ``done``
        take = budget
        while True:
            cut = _char_boundary(raw, ends[min(first + take, len(ids)) - 1], done)
            chunk = raw[done:cut].decode("utf-8")
            n = tokens.count(chunk)
            if n <= budget or take == 1:
                break
            take = max(1, take - (n - budget))
        windows.append((char, char + len(chunk), n))
        done, char = cut, char + len(chunk)
    return windows


def _char_boundary(raw: bytes, cut: int, floor: int) -> int:
    """``cut`` moved back to the start of a UTF-8 character, or forward past one if none is left."""
    back = cut
    while floor < back < len(raw) and raw[back] & 0xC0 == 0x80:  # a continuation byte
        back -= 1
    if back > floor:
        return back
    forward = max(cut, floor + 1)
    while forward < len(raw) and raw[forward] & 0xC0 == 0x80:
        forward += 1
    return forward


def _pack(pieces: list[_Piece], budget: int) -> list[list[_Piece]]:
    """Greedy packing in order (every piece is within the budget)."""
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


def _grouped(source: Source, groups: list[list[_Piece]], oversize: int, split: int) -> Cut:
    size = group_size_for(len(groups))
    units = tuple(_units(groups, 0, size))
    parents = _grouped_parents(len(units), size)
    return Cut(source, units, parents, tuple(range(len(units))), size, oversize, split)


def _units(groups: list[list[_Piece]], first: int, size: int) -> list[Unit]:
    """Units of packed pieces, numbered from ``first``, in parents of ``size`` consecutive units."""
    return [
        Unit(
            id=uid,
            start=group[0].start,
            end=group[-1].end,
            records=tuple(dict.fromkeys(p.record for p in group)),
            parent=uid // size,
            tokens=sum(p.tokens for p in group),
        )
        for uid, group in enumerate(groups, start=first)
    ]


def _grouped_parents(n_units: int, size: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(range(first, min(first + size, n_units))) for first in range(0, n_units, size))


def newest_version(cut: Cut, unit: Unit, allowed: Collection[int] | None = None) -> int:
    """The highest-serial line of the unit's slot (itself if it has no slot); of the ``allowed``
    units only, when given (a filtered read)."""
    if unit.serial is None or unit.slot is None:
        return unit.id
    versions = [
        cut.units[u]
        for u in cut.parents[unit.parent]
        if cut.units[u].serial is not None and (allowed is None or u in allowed)
    ]
    return max(versions, key=lambda u: (u.serial or 0, u.id)).id
