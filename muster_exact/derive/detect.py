"""Detection: two byte statistics decide the branch (SPEC 2), no model.

Checked in order:

1. numbered log: the share of non-empty lines that start with ``N. `` is at
   least 0.80; or, in native mode only, a native style (``Step 12:``, ``#12``,
   ``(12)``, ``[12]``) is continuous on at least 95% of the lines after the
   first and the median line is at most 20 tokens;
2. record store: the share of tokens in blank-line-separated records that
   fit the record budget (512 tokens) is at least 0.90;
3. prose: otherwise.

In the records layout a "line" is a record and its serial is read from the
start of its text only. There the statistics are running counts
(:class:`Tally`): a store that grows by appended records extends them by the
new records alone, and a fresh detection is the same fold from nothing, so
the two cannot disagree.
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from muster_exact.cache.memo import Memo
from muster_exact.derive.plan import Branch, Mode, Thresholds
from muster_exact.text import serials
from muster_exact.text.records import Record, Source

# Lines that start with a serial, one alternative (one group) per style, so a
# single pass over the text counts every style.
_STYLE_NAMES = tuple(serials.STYLES)
_LINE_START = re.compile(
    "^(?:" + "|".join("(" + p.pattern.replace(r"(\d", r"(?:\d") + ")" for p in serials.STYLES.values()) + ")",
    re.MULTILINE,
)
_NON_EMPTY_LINE = re.compile(r"^[^\S\n]*\S", re.MULTILINE)


class Line(NamedTuple):
    """A serial-bearing item: a non-empty line (text) or a record (records). A named tuple, as
    ``cut.Unit`` is: one per line of a numbered log."""

    start: int
    end: int
    body_start: int
    record: int


@dataclass(frozen=True)
class Detection:
    branch: Branch
    serial_share: float
    record_share: float
    style: str | None
    continuity: float | None
    median_tokens: float | None
    supersession: bool
    record_tokens: tuple[int, ...]
    n_lines: int
    reasons: tuple[str, ...]
    tally: Tally | None = None  # records layout: the running counts, for the next growth


def record_lines(records: Iterable[Record]) -> list[Line]:
    """Records as items, in the records layout (a record is a line)."""
    return [Line(r.start, r.end, r.body_start, r.index) for r in records]


def lines_of(source: Source) -> list[Line]:
    """Every serial-bearing item of the source, in stored order."""
    if source.layout == "records":
        return record_lines(source.records)
    items: list[Line] = []
    text = source.text
    for record in source.records:
        pos = record.start
        for line in text[record.start : record.end].split("\n"):
            if line.strip():
                items.append(Line(pos, pos + len(line), pos, record.index))
            pos += len(line) + 1
    return items


def _marked_counts(source: Source) -> dict[str, int]:
    """Items that start with a serial, per style, without listing the lines."""
    if source.layout == "records":
        return {
            style: sum(serials.read(source.text, style, r.body_start) is not None for r in source.records)
            for style in _STYLE_NAMES
        }
    counts = dict.fromkeys(_STYLE_NAMES, 0)
    for groups in _LINE_START.findall(source.text):
        for style, matched in zip(_STYLE_NAMES, groups, strict=True):
            if matched:
                counts[style] += 1
    return counts


def _item_count(source: Source) -> int:
    if source.layout == "records":
        return len(source.records)
    return len(_NON_EMPTY_LINE.findall(source.text))


@dataclass(frozen=True)
class Run:
    """One style's serials over the items so far, as running counts: continuity is
    ``steps / (items - 1)``, and every item after the first is marked when ``unmarked`` is 0."""

    items: int = 0
    steps: int = 0  # items whose serial is one above the previous item's
    unmarked: int = 0  # items after the first without a serial
    last: int | None = None  # the last item's serial

    def extended(self, numbers: Iterable[int | None]) -> Run:
        items, steps, unmarked, last = self.items, self.steps, self.unmarked, self.last
        for number in numbers:
            if items:
                steps += last is not None and number is not None and number == last + 1
                unmarked += number is None
            items += 1
            last = number
        return Run(items, steps, unmarked, last)

    @property
    def share(self) -> float:
        return self.steps / (self.items - 1) if self.items >= 2 else 0.0

    @property
    def all_marked(self) -> bool:
        return self.items >= 2 and self.unmarked == 0


def _numbers(source: Source, lines: Iterable[Line], style: str) -> list[int | None]:
    found = (serials.read(source.text, style, line.body_start) for line in lines)
    return [None if serial is None else serial.number for serial in found]


def continuity(source: Source, lines: list[Line], style: str) -> tuple[float, bool]:
    """Share of items after the first whose serial is one above the previous item's.

    Also returns whether every item after the first carries a serial.
    """
    run = Run().extended(_numbers(source, lines, style))
    return run.share, run.all_marked


@dataclass(frozen=True)
class Tally:
    """Detection's statistics of a records-layout store, as running counts over its records.

    ``extended`` folds in the records after the first ``records``; a fresh detection folds all
    of them into an empty tally. What only a native style's check needs (its run, the sorted body
    token counts) is counted the first time it is needed, then kept up to date."""

    record_budget: int
    records: int = 0
    record_tokens: tuple[int, ...] = ()
    short: int = 0  # tokens in records within the budget
    marked: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(_STYLE_NAMES, 0))
    runs: Mapping[str, Run] = field(default_factory=dict)
    body_tokens: tuple[int, ...] | None = None  # sorted

    def extended(self, source: Source, memo: Memo) -> Tally:
        new = source.records[self.records :]
        counts = memo.tokens([source.record_text(r) for r in new])
        marked = dict(self.marked)
        lines = record_lines(new)
        for style in _STYLE_NAMES:
            marked[style] += sum(n is not None for n in _numbers(source, lines, style))
        runs = {style: run.extended(_numbers(source, lines, style)) for style, run in self.runs.items()}
        body_tokens = self.body_tokens
        if body_tokens is not None:
            body_tokens = _inserted(body_tokens, memo.tokens([source.body(r) for r in new]))
        return replace(
            self,
            records=len(source.records),
            record_tokens=self.record_tokens + tuple(counts),
            short=self.short + sum(n for n in counts if n <= self.record_budget),
            marked=marked,
            runs=runs,
            body_tokens=body_tokens,
        )

    def with_run(self, source: Source, style: str) -> Tally:
        if style in self.runs:
            return self
        run = Run().extended(_numbers(source, lines_of(source), style))
        return replace(self, runs={**self.runs, style: run})

    def with_body_tokens(self, source: Source, memo: Memo) -> Tally:
        if self.body_tokens is not None:
            return self
        return replace(self, body_tokens=tuple(sorted(memo.tokens([source.body(r) for r in source.records]))))


def _inserted(ordered: tuple[int, ...], values: list[int]) -> tuple[int, ...]:
    out = list(ordered)
    for value in values:
        bisect.insort(out, value)
    return tuple(out)


def _native_style(
    n_items: int,
    marked: Mapping[str, int],
    thresholds: Thresholds,
    run_of: Callable[[str], Run],
    median_of: Callable[[], float],
) -> tuple[str, float, float, bool] | None:
    """The first native style that passes both conditions, with its measurements."""
    # Continuity needs a serial on 95% of the lines after the first, so a style
    # that starts fewer lines cannot pass; most stores stop here, unlisted.
    candidates = [
        style
        for style in serials.NATIVE_STYLES
        if n_items >= 2 and marked[style] >= thresholds.native_continuity * (n_items - 1)
    ]
    median: float | None = None
    for style in candidates:
        run = run_of(style)
        if run.share < thresholds.native_continuity:
            continue
        if median is None:
            median = median_of()
        if median <= thresholds.native_median_tokens:
            return style, run.share, median, run.all_marked
    return None


def _native(
    source: Source,
    n_items: int,
    marked: Mapping[str, int],
    thresholds: Thresholds,
    memo: Memo,
    tally: Tally | None,
) -> tuple[tuple[str, float, float, bool] | None, Tally | None]:
    """The native-style check, and the tally holding what it counted (records layout: a style's
    run and the body token counts are counted once, then kept by the running counts)."""
    if tally is not None:
        held = tally

        def run_of(style: str) -> Run:
            nonlocal held
            held = held.with_run(source, style)
            return held.runs[style]

        def median_of() -> float:
            nonlocal held
            held = held.with_body_tokens(source, memo)
            return float(statistics.median(held.body_tokens or (0,)))

        return _native_style(n_items, marked, thresholds, run_of, median_of), held
    lines: list[Line] = []

    def text_run(style: str) -> Run:
        if not lines:
            lines.extend(lines_of(source))
        return Run().extended(_numbers(source, lines, style))

    def text_median() -> float:
        return float(statistics.median(memo.tokens([source.text[ln.body_start : ln.end] for ln in lines])))

    return _native_style(n_items, marked, thresholds, text_run, text_median), None


def detect(
    source: Source,
    *,
    mode: Mode = "native",
    record_budget: int = 512,
    thresholds: Thresholds | None = None,
    memo: Memo | None = None,
    tally: Tally | None = None,
) -> Detection:
    """The branch of ``source``. ``tally``: the running counts of a records-layout store's first
    records (an earlier detection's), extended by the records after them."""
    th = thresholds or Thresholds()
    memo = memo if memo is not None else Memo()
    if source.layout == "records":
        if tally is None or tally.record_budget != record_budget or tally.records > len(source.records):
            tally = Tally(record_budget)
        tally = tally.extended(source, memo)
        record_tokens, short = tally.record_tokens, tally.short
        marked_by_style, n_lines = dict(tally.marked), len(source.records)
    else:
        tally = None
        record_tokens = tuple(memo.tokens([source.record_text(r) for r in source.records]))
        short = sum(n for n in record_tokens if n <= record_budget)
        marked_by_style, n_lines = _marked_counts(source), _item_count(source)
    total = sum(record_tokens)
    record_share = short / total if total else 0.0
    marked = marked_by_style[serials.PAPER_STYLE]
    serial_share = marked / n_lines if n_lines else 0.0
    reasons = [
        f"serial share {serial_share:.4f}: {marked} of {n_lines} non-empty "
        f"{'records' if source.layout == 'records' else 'lines'} start with 'N. ' "
        f"(numbered log at >= {th.serial_share:.2f})",
        f"record share {record_share:.4f}: {short} of {total} tokens sit in records of "
        f"<= {record_budget} tokens (record store at >= {th.record_share:.2f})",
    ]

    def found(
        branch: Branch,
        style: str | None,
        supersession: bool,
        why: str,
        cont: float | None = None,
        median: float | None = None,
    ) -> Detection:
        return Detection(
            branch,
            serial_share,
            record_share,
            style,
            cont,
            median,
            supersession,
            record_tokens,
            n_lines,
            (*reasons, why),
            tally,
        )

    if serial_share >= th.serial_share:
        # Plain-text logs keep supersession on (an unmarked header line is simply its
        # own fact); a record array with an unmarked record has no revision clock.
        on = source.layout == "text" or marked == n_lines
        return found(
            "numbered_log",
            "dot",
            on,
            "numbered log: serial share reaches the threshold; units are lines, "
            "ordered by serial" + ("" if on else "; supersession off (unmarked records)"),
        )
    if mode == "native":
        native, tally = _native(source, n_lines, marked_by_style, th, memo, tally)
        if native is not None:
            style, cont, median, all_marked = native
            return found(
                "numbered_log",
                style,
                all_marked,
                f"numbered log (native '{style}' style): {cont:.4f} of lines continue the "
                f"previous serial (>= {th.native_continuity:.2f}) and the median line is "
                f"{median:g} tokens (<= {th.native_median_tokens:g})"
                + ("" if all_marked else "; supersession off (unmarked lines)"),
                cont,
                median,
            )
    if record_share >= th.record_share:
        return found(
            "record_store",
            None,
            False,
            "record store: record share reaches the threshold; records are packed "
            "whole into units, stored order",
        )
    return found(
        "prose",
        None,
        False,
        "prose: neither threshold is reached; sentences are packed into units, stored order",
    )
