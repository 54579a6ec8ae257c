from __future__ import annotations

import pytest

from muster_exact.slots import slot_of


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
