"""Entities for the parent graph: the rules, and the fast forms of two of them equal to the plain
regular expressions they replace (same entities on every text, so no context moves)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster_exact.text import entities
from muster_exact.text.entities import _MONTHS, _opens_sentence, extract

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

# The rules as first written: a regex searched over everything before the word, and the date
# pattern without its lookahead and four-digit test.
_SENTENCE_END = re.compile(r"[.!?:;\n]\s*$")
_PLAIN_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})\.?,?\s+\d{{4}}|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|(?:{_MONTHS})\.?\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})\b",
    re.IGNORECASE,
)

# Characters where the rules turn: sentence marks, every kind of whitespace (a no-break space, a
# line separator, a vertical tab), digits of two scripts, month letters, quotes, capitals.
_ALPHABET = st.sampled_from(
    list(".!?:;,-' \n\t\x0b\x1c\u00a0\u2028\u3000\"“”")
    + list("0123456789٣")
    + ["May", "may", "Sept", "Dec.", "june", "2023", "1999-01-02", "8 ", "th", "The", "Oxford", "of"]
)
_TEXTS = st.lists(_ALPHABET, max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(_TEXTS, st.integers(min_value=0, max_value=200))
def test_a_sentence_opens_where_the_regex_said(text: str, at: int) -> None:
    start = min(at, len(text))
    expected = start == 0 or bool(_SENTENCE_END.search(text, 0, start))
    assert _opens_sentence(text, start) == expected


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
def test_dates_are_the_plain_patterns_matches(text: str) -> None:
    assert [m.span() for m in entities._DATE.finditer(text)] == [m.span() for m in _PLAIN_DATE.finditer(text)]
    plain = {entities.normalise(m.group()) for m in _PLAIN_DATE.finditer(text)}
    assert plain <= extract(text)


def test_the_rules_on_examples() -> None:
    assert "scientology" in extract("Scientology was founded in 1953.")
    assert extract("The chairperson spoke.") == set()
    assert {"university of oxford", "8 may, 2023", "2023"} <= extract(
        "She left the University of Oxford on 8 May, 2023."
    )
    assert "mahmoud abbas" in extract("Yesterday Mahmoud Abbas spoke.")
    assert "red door" in extract('He painted a "red door" at home.')
    # After a line break a capitalised opener is a sentence start, as after a full stop.
    assert extract("notes\n  The Plan") == {"plan"}
    assert "the plan" in extract("notes,  The Plan")
