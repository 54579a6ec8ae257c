"""Rule-based sentence spans (no model download), for cutting prose.

A sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes or brackets)
followed by white space and a capital letter, digit, quote or bracket, unless
the word before the period is a known abbreviation or a single initial
("L. Ron Hubbard"). A blank line always ends a sentence; the caller passes
one paragraph at a time.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e inc ltd co corp no fig figs mt jan "
    "feb mar apr jun jul aug sep sept oct nov dec approx dept est gen gov lt col "
    "capt sgt rev hon u.s u.k a.m p.m ph.d cf al".split()
)
_END = re.compile(r"""[.!?]+["'”’)\]]*(?=\s+["'“‘(\[]?[A-Z0-9])""")


def _is_abbreviation(text: str, period: int, floor: int = 0) -> bool:
    """Whether the word before ``period`` (looked for no further back than ``floor``, the start
    of the span being split, so a span splits alike wherever it lies) is an abbreviation."""
    if text[period] != ".":
        return False
    start = period
    while start > floor and not text[start - 1].isspace():
        start -= 1
    word = text[start:period].lower().lstrip("\"'“‘([")
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans inside ``text[start:end]``; gaps between them are white space."""
    stop = len(text) if end is None else end
    out: list[tuple[int, int]] = []
    pos = start
    for match in _END.finditer(text, start, stop):
        if _is_abbreviation(text, match.start(), start):
            continue
        _add(text, pos, match.end(), out)
        pos = match.end()
    _add(text, pos, stop, out)
    return out


def _add(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append((start, end))
