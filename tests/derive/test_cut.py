from __future__ import annotations

import random

import pytest

from muster_exact import analyse
from muster_exact.derive import Derived
from muster_exact.derive.cut import group_size_for
from muster_exact.retrieve.assemble import assemble
from muster_exact.retrieve.rerank import Ranking
from muster_exact.retrieve.select import Selected
from muster_exact.text import tokens

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


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
    # The 600-token record has no sentence break: 512 tokens, then 88 packed with what follows.
    assert [u.records for u in cut.units][:5] == [(0, 1, 2), (3,), (4,), (4, 5, 6, 7), (8,)]
    assert [u.tokens for u in cut.units][:5] == [480, 100, 512, 508, 400]
    assert plan.stats.oversize_records == 1
    assert all(tokens.count(cut.text(u)) <= 512 for u in cut.units)
    assert "".join(cut.text(u) for u in cut.units[2:4]).startswith(records[4] + "\n\n" + records[5])
    for unit in (*cut.units[:2], *cut.units[4:]):
        assert unit.tokens == sum(tokens.count(records[r]) for r in unit.records)


def test_a_record_over_the_budget_is_cut_at_its_sentences() -> None:
    sentence = "The river bends past the old mill and the hills beyond it turn gold."
    long_record = " ".join([sentence] * 60)  # about 900 tokens with sentence breaks
    records = [*(("word " * 300).strip() for _ in range(30)), long_record]  # 91% in whole records
    derived = analyse("\n\n".join(records))
    plan, cut = derived.plan, derived.cut
    assert plan.branch == "record_store" and plan.stats.oversize_records == 1
    mine = [u for u in cut.units if 30 in u.records]
    assert len(mine) == 3 and mine[0].records == (29, 30)  # its first sentences pack with record 29
    assert all(cut.text(u).endswith(".") for u in mine)
    assert all(cut.text(u).startswith("The river") for u in mine[1:])
    assert all(u.tokens is not None and u.tokens <= 512 for u in cut.units)
    assert long_record in cut.source.text[mine[0].start : mine[-1].end]
    assert any("1 record(s) longer than 512 tokens cut at sentence breaks" in r for r in plan.reasons)


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


WORDS = "alpha beta gamma delta river stone quiet market yellow seven window".split()


def unbroken(chars: int, seed: int) -> str:
    """Words and no sentence break at all (no '.', '!' or '?'), ``chars`` long."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(chars // 4))[:chars]


def assert_tiled(derived: Derived, records: list[str], budget: int) -> None:
    """Every unit within the budget, and the units of each record are that record, verbatim."""
    cut = derived.cut
    assert max(u.tokens or tokens.count(cut.text(u)) for u in cut.units) <= budget
    for index, record in enumerate(records):
        mine = [u for u in cut.units if u.records == (index,)]
        assert "".join(cut.text(u) for u in mine) == record
    for unit in cut.units[:: max(1, len(cut.units) // 25)]:  # counts are the text's own
        assert unit.tokens is None or tokens.count(cut.text(unit)) == unit.tokens


def test_text_without_sentence_breaks_is_cut_at_token_boundaries() -> None:
    records = [unbroken(30_000, seed) for seed in range(3)]  # about 19 budgets of 256 each
    derived = analyse("\n\n".join(records), prose_budget=256)
    plan, cut = derived.plan, derived.cut
    assert plan.branch == "prose" and plan.unit_budget == 256
    assert_tiled(derived, records, 256)
    # A context is at most U units, so at most U budgets (and a separator between two units).
    budget, units_read = plan.unit_budget, plan.units_read
    largest = sorted(cut.units, key=lambda u: u.tokens or 0)[-units_read:]
    chosen = [Selected(u.id, "fill") for u in largest]
    context = assemble("q", cut, plan, chosen, Ranking("none", tuple(u.id for u in largest), {}), [])
    assert len(context.unit_ids) == units_read
    assert context.tokens <= units_read * (budget + 1)


def test_unbroken_text_in_many_scripts_is_cut_between_characters() -> None:
    # Tokens of these scripts split characters into bytes: a cut never lands inside a character.
    record = ("日本語のテキスト🙂🚲ëß" * 3000)[:40_000]
    derived = analyse(record, prose_budget=64)
    assert derived.plan.branch == "prose"
    assert_tiled(derived, [record], 64)


def test_a_huge_record_in_a_record_store_is_cut_too() -> None:
    small = [unbroken(2_400, seed) for seed in range(100)]  # about 390 tokens each
    huge = unbroken(12_000, 999)  # about 1,940 tokens, four budgets of 512, 5% of the store
    records = [*small[:200], huge, *small[200:]]
    derived = analyse("\n\n".join(records))
    assert derived.plan.branch == "record_store"
    assert_tiled(derived, records, 512)


def test_a_huge_line_in_a_numbered_log_is_cut_too() -> None:
    lines = [f"{i}. The CEO of Company {i} is Person {i}." for i in range(1, 400)]
    huge = "400. " + unbroken(12_000, 5)  # about four budgets
    records = [*lines, huge]
    derived = analyse("\n".join(records))
    assert derived.plan.branch == "numbered_log"
    units = derived.cut.units
    assert max(tokens.count(derived.cut.text(u)) for u in units) <= 512
    assert "".join(derived.cut.text(u) for u in units[399:]) == huge
    assert units[399].serial == 400
