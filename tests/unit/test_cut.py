from __future__ import annotations

import pytest

from muster_exact import analyse, tokens
from muster_exact.cut import group_size_for


@pytest.mark.parametrize(
    ("units", "size"),
    [(0, 1), (5, 1), (10, 1), (18, 1), (19, 2), (36, 2), (37, 4), (72, 4), (73, 8), (500, 8)],
)
def test_parent_group_halves_until_ten_parents(units: int, size: int) -> None:
    assert group_size_for(units) == size


def test_record_store_packs_whole_records_up_to_the_budget() -> None:
    sizes = (30, 200, 250, 100, 600, 10, 10, *([400] * 15))  # the 600 is 8% of the tokens
    records = [("word " * n).strip() for n in sizes]
    derived = analyse("\n\n".join(records))
    plan, cut = derived.plan, derived.cut
    assert plan.branch == "record_store" and plan.unit_budget == 512
    assert [u.records for u in cut.units][:5] == [(0, 1, 2), (3,), (4,), (5, 6, 7), (8,)]
    assert [r for u in cut.units for r in u.records] == list(range(len(records)))
    assert plan.stats.oversize_records == 1
    for unit in cut.units:
        assert unit.tokens == sum(tokens.count(records[r]) for r in unit.records)


def test_numbered_log_units_slots_and_serial_order() -> None:
    text = (
        "Here is a list of facts:\n"
        "3. The CEO of Acme is Ann Lee.\n"
        "1. Thomas Kyd was born in the city of London.\n"
        "2. The CEO of Acme is Bo Li.\n"
        "4. Clicked the button\n"
    )
    derived = analyse(text)
    cut = derived.cut
    assert [cut.text(u) for u in cut.units][1] == "3. The CEO of Acme is Ann Lee."
    assert cut.retrieval_text(cut.units[1]) == "The CEO of Acme is Ann Lee."
    assert cut.serial_order == (0, 2, 3, 1, 4)
    ceo = cut.units[1].parent
    assert cut.units[3].parent == ceo and cut.parents[ceo] == (1, 3)
    assert len(cut.parents) == 4  # header, CEO, Kyd, the unreadable line
    assert derived.plan.stats.slots_with_versions == 1


def test_prose_cuts_long_paragraphs_at_sentences() -> None:
    sentence = "The river bends past the old mill and the hills beyond it turn gold in autumn."
    paragraph = " ".join([sentence] * 120)  # about 2,000 tokens, one paragraph
    derived = analyse(paragraph + "\n\nA short closing line.", prose_budget=256)
    plan, cut = derived.plan, derived.cut
    assert plan.branch == "prose"
    assert all(u.tokens is not None and u.tokens <= 256 for u in cut.units)
    assert all(cut.text(u).endswith(".") for u in cut.units)
    joined = " ".join(cut.text(u) for u in cut.units)
    assert joined.replace("\n\n", " ") == (paragraph + " A short closing line.")
