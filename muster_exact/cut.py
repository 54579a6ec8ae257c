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

A piece kept whole (a record, a sentence, a line) is bounded too: one longer
than ``HARD_LIMIT`` unit budgets, text with no sentence break, is cut at
token boundaries into units of at most one budget (``_token_windows``), so
no unit, and no context of U units, can be a whole namespace.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from muster_exact import sentences, serials, slots
from muster_exact.detect import Line, lines_of
from muster_exact.plan import Branch
from muster_exact.records import Source

PARENT_GROUP_START = 8
MIN_PARENTS = 10
# A record, sentence or line over this many unit budgets is cut at token boundaries; one up to it
# stays whole (SPEC 3). Every benchmark's longest (30 budgets, a BEAM message of ASCII art) stays whole.
HARD_LIMIT = 32


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
    split: int = 0  # records (lines) with a piece over HARD_LIMIT budgets, cut at token boundaries

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
    split: bool = False  # one of the token windows of a piece over HARD_LIMIT budgets


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
        return _cut_numbered(source, style or serials.PAPER_STYLE, unit_budget)
    if branch == "record_store":
        pieces = [
            _Piece(r.start, r.end, n, r.index) for r, n in zip(source.records, record_tokens, strict=True)
        ]
        pieces = _bounded(source.text, pieces, unit_budget)
    else:
        pieces = _prose_pieces(source, unit_budget, record_tokens)
    split = len({p.record for p in pieces if p.split})
    return _grouped(source, _pack(pieces, unit_budget), unit_budget, split)


def _cut_numbered(source: Source, style: str, budget: int) -> Cut:
    """One unit per line; a line over ``HARD_LIMIT`` budgets is cut at token boundaries, its
    first part keeping the serial and slot, every later part its own unmarked fact."""
    lines: list[Line] = lines_of(source)
    parent_of_slot: dict[str, int] = {}
    parents: list[list[int]] = []
    units: list[Unit] = []
    text = source.text
    split = 0
    for line in lines:
        serial = serials.read(text, style, line.body_start)
        slot = None
        if serial is not None:
            slot = slots.slot_of(text[serial.end : line.end])
        spans = _line_spans(text, line, budget)
        split += len(spans) > 1
        for part, (start, end, n) in enumerate(spans):
            marked = serial if part == 0 else None
            part_slot = slot if part == 0 else None
            # An unmarked line, or one whose slot cannot be read, is its own fact.
            if part_slot is not None and part_slot in parent_of_slot:
                parent = parent_of_slot[part_slot]
            else:
                parent = len(parents)
                parents.append([])
                if part_slot is not None:
                    parent_of_slot[part_slot] = parent
            parents[parent].append(len(units))
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
    parent_tuples = tuple(tuple(p) for p in parents)
    return Cut(source, tuple(units), parent_tuples, _serial_order(units), None, 0, split)


def _line_spans(text: str, line: Line, budget: int) -> list[tuple[int, int, int | None]]:
    """The line whole (tokens not counted: most lines are short), or its token windows."""
    from muster_exact import tokens

    # A token is at least one UTF-8 byte and a character at most four: a line this short fits.
    if 4 * (line.end - line.start) <= HARD_LIMIT * budget:
        return [(line.start, line.end, None)]
    if tokens.count(text[line.start : line.end]) <= HARD_LIMIT * budget:
        return [(line.start, line.end, None)]
    return [(s, e, n) for s, e, n in _token_windows(text, line.start, line.end, budget)]


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
        sentence_pieces = [_Piece(s, e, c, record.index) for (s, e), c in zip(spans, counts, strict=True)]
        pieces.extend(_bounded(source.text, sentence_pieces, budget))
    return pieces


def _bounded(text: str, pieces: list[_Piece], budget: int) -> list[_Piece]:
    """Pieces up to ``HARD_LIMIT`` budgets as they are; a longer one as its token windows."""
    out: list[_Piece] = []
    for piece in pieces:
        if piece.tokens <= HARD_LIMIT * budget:
            out.append(piece)
            continue
        windows = _token_windows(text, piece.start, piece.end, budget)
        out.extend(_Piece(s, e, n, piece.record, split=True) for s, e, n in windows)
    return out


def _token_windows(text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
    """``text[start:end]`` as consecutive spans of at most ``budget`` tokens: (start, end, tokens).

    A cut falls where a token of the span's encoding ends, moved back to the start of a character
    when that token ends inside one (cl100k splits some characters into bytes). Each window is
    counted again on its own, as every other piece is, and shortened in the rare case its own
    encoding comes out longer than the budget. Together the windows are the span, verbatim.
    """
    from muster_exact import tokens

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


def _grouped(source: Source, groups: list[list[_Piece]], budget: int, split: int) -> Cut:
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
    return Cut(source, units, parents, tuple(range(len(units))), size, oversize, split)
