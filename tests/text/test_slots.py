from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from muster_exact.text.slots import slot_of

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


@pytest.mark.parametrize(
    ("line", "slot"),
    [
        ("The chairperson of Fatah is Mahmoud Abbas.", "the chairperson of fatah is"),
        ("The CEO of Acme is Ann Lee.", "the ceo of acme is"),
        ("Thomas Kyd was born in the city of London.", "thomas kyd was born in the city of"),
        ("Lorenzo Lamas is a citizen of United States of America.", "lorenzo lamas is a citizen of"),
        ("Dick Advocaat is a citizen of Kingdom of the Netherlands.", "dick advocaat is a citizen of"),
        (
            "The type of music that John McVie plays is rock music.",
            "the type of music that john mcvie plays is",
        ),
        ("Hines Ward plays the position of wide receiver.", "hines ward plays the position of"),
        ("Scientology was founded by L. Ron Hubbard.", "scientology was founded by"),
        ("Glenn L. Martin Company was founded by Glenn L. Martin.", "glenn l. martin company was founded by"),
    ],
)
def test_slot_keeps_subject_and_attribute(line, slot) -> None:
    assert slot_of(line) == slot


def test_revisions_share_a_slot() -> None:
    assert slot_of("The chairperson of Fatah is Mahmoud Abbas.") == slot_of(
        "The chairperson of Fatah is Yasser Arafat."
    )
    assert slot_of("Hines Ward plays the position of wide receiver.") == slot_of(
        "Hines Ward plays the position of quarterback."
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # different subjects
        ("The chairperson of Fatah is Mahmoud Abbas.", "The chairperson of Hamas is Ismail Haniyeh."),
        ("Thomas Kyd was born in the city of London.", "Amy Winehouse was born in the city of London."),
        # different attributes of one subject
        ("Thomas Kyd was born in the city of London.", "Thomas Kyd died in the city of London."),
        ("Lorenzo Lamas is a citizen of Canada.", "Lorenzo Lamas is employed by Canada Post."),
    ],
)
def test_different_facts_never_merge(a, b) -> None:
    assert slot_of(a) != slot_of(b)


@pytest.mark.parametrize(
    "line",
    [
        "Clicked the submit button",
        "Apple Inc. Was Founded By Steve Jobs",
        "ok",
        "Paris is Nice",
        "word " * 50,
    ],
)
def test_unreadable_lines_get_no_slot(line) -> None:
    assert slot_of(line) is None


# Words, separators and the letters whose lower case is not one letter of their own: the
# final-sigma rule (Σ), a dotted capital I (İ lowers to two code points), and a title-case digraph.
_ALPHABET = "aZ Σσ İ ǅ ß.,;:\t\u00a0\u2003Fatah of the 12 (x)"


@given(st.lists(st.text(alphabet=_ALPHABET, min_size=1, max_size=12), min_size=1, max_size=12))
def test_a_line_lowered_whole_splits_into_its_words_lowered(parts: list[str]) -> None:
    # slot_of lowers the whole line once and splits it: the same words as lowering each.
    line = " ".join(parts)
    assert line.lower().split() == [word.lower() for word in line.split()]
