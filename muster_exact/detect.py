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
start of its text only.
"""

from __future__ import annotations

import itertools
import re
import statistics
from dataclasses import dataclass
from typing import NamedTuple

from muster_exact import serials
from muster_exact.memo import Memo
from muster_exact.plan import Branch, Mode, Thresholds
from muster_exact.records import Source

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


def lines_of(source: Source) -> list[Line]:
    """Every serial-bearing item of the source, in stored order."""
    if source.layout == "records":
        return [Line(r.start, r.end, r.body_start, r.index) for r in source.records]
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


def continuity(source: Source, lines: list[Line], style: str) -> tuple[float, bool]:
    """Share of items after the first whose serial is one above the previous item's.

    Also returns whether every item after the first carries a serial.
    """
    numbers = [serials.read(source.text, style, line.body_start) for line in lines]
    if len(numbers) < 2:
        return 0.0, False
    steps = sum(
        prev is not None and cur is not None and cur.number == prev.number + 1
        for prev, cur in itertools.pairwise(numbers)
    )
    return steps / (len(numbers) - 1), all(n is not None for n in numbers[1:])


def _native_style(
    source: Source, n_items: int, marked: dict[str, int], thresholds: Thresholds, memo: Memo
) -> tuple[str, float, float, bool] | None:
    """The first native style that passes both conditions, with its measurements."""
    # Continuity needs a serial on 95% of the lines after the first, so a style
    # that starts fewer lines cannot pass; most stores stop here, unlisted.
    candidates = [
        style
        for style in serials.NATIVE_STYLES
        if n_items >= 2 and marked[style] >= thresholds.native_continuity * (n_items - 1)
    ]
    if not candidates:
        return None
    lines = lines_of(source)
    median: float | None = None
    for style in candidates:
        share, all_marked = continuity(source, lines, style)
        if share < thresholds.native_continuity:
            continue
        if median is None:
            counts = memo.tokens([source.text[line.body_start : line.end] for line in lines])
            median = float(statistics.median(counts))
        if median <= thresholds.native_median_tokens:
            return style, share, median, all_marked
    return None


def detect(
    source: Source,
    *,
    mode: Mode = "native",
    record_budget: int = 512,
    thresholds: Thresholds | None = None,
    memo: Memo | None = None,
) -> Detection:
    th = thresholds or Thresholds()
    memo = memo if memo is not None else Memo()
    record_tokens = tuple(memo.tokens([source.record_text(r) for r in source.records]))
    total = sum(record_tokens)
    short = sum(n for n in record_tokens if n <= record_budget)
    record_share = short / total if total else 0.0
    marked_by_style, n_lines = _marked_counts(source), _item_count(source)
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
    if mode == "native" and (native := _native_style(source, n_lines, marked_by_style, th, memo)) is not None:
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
