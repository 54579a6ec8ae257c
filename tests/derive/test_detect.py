"""Branch edges (SPEC 2): exactly 0.80 and 0.90, skips, the 20-token median."""

from __future__ import annotations

import pytest

from muster_exact import derive, from_records
from muster_exact.text import serials, tokens

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def _padded(prefix: str, target: int) -> str:
    """A line of exactly ``target`` tokens that starts with ``prefix``."""
    line = prefix + "go"
    while tokens.count(line) < target:
        line += " x"
    assert tokens.count(line) == target
    return line


def test_serial_share_exactly_080_is_a_numbered_log() -> None:
    text = "\n".join([*(f"{i}. fact {i}" for i in range(1, 9)), "note one", "note two"])
    plan = derive(text)
    assert plan.serial_share == 0.8
    assert plan.branch == "numbered_log"


def test_serial_share_just_below_080_is_not() -> None:
    text = "\n".join([*(f"{i}. fact {i}" for i in range(1, 80)), *(f"note {i}" for i in range(21))])
    plan = derive(text)
    assert plan.serial_share == 0.79
    assert plan.branch != "numbered_log"


def _record_text(long_tokens: int) -> str:
    # 99 one-token records and one long record; budget 10.
    long = "a" + " a" * (long_tokens - 1)
    assert tokens.count(long) == long_tokens
    return "\n\n".join(["b"] * 99 + [long])


def test_record_share_exactly_090_is_a_record_store() -> None:
    plan = derive(_record_text(11), record_budget=10)
    assert plan.record_share == 0.9
    assert plan.branch == "record_store"


def test_record_share_below_090_is_prose() -> None:
    plan = derive(_record_text(12), record_budget=10)
    assert plan.record_share < 0.9
    assert plan.branch == "prose"


def _steps(numbers: list[int], target: int = 8) -> str:
    return "\n".join(_padded(f"Step {n}: ", target) for n in numbers)


def test_native_style_with_95_percent_continuity() -> None:
    numbers = list(range(1, 11)) + list(range(20, 31))  # 21 lines, one jump -> 19/20
    plan = derive(_steps(numbers))
    assert plan.branch == "numbered_log" and plan.serial_style == "step"
    assert plan.native_continuity == 0.95


def test_a_serial_that_skips_too_often_is_not_a_log() -> None:
    numbers = list(range(1, 8)) + list(range(10, 17)) + list(range(20, 27))  # two jumps -> 18/20
    plan = derive(_steps(numbers))
    assert plan.branch != "numbered_log"


@pytest.mark.parametrize(("median", "numbered"), [(20, True), (21, False)])
def test_native_median_line_tokens(median: int, numbered: bool) -> None:
    plan = derive("\n".join(_padded(f"#{n} ", median) for n in range(1, 22)))
    assert (plan.branch == "numbered_log") is numbered


def test_exact_mode_reads_only_the_paper_style() -> None:
    text = _steps(list(range(1, 30)))
    assert derive(text, mode="native").branch == "numbered_log"
    assert derive(text, mode="exact").branch != "numbered_log"


@pytest.mark.parametrize("style", ["dot", "step", "hash", "paren", "bracket"])
def test_serial_must_end_within_32_characters(style: str) -> None:
    pattern = {"dot": "{}. x", "step": "Step {}: x", "hash": "#{} x", "paren": "({}) x", "bracket": "[{}] x"}
    fits = "9" * (32 - pattern[style].index("{}"))
    assert serials.read(pattern[style].format(fits), style) is not None
    assert serials.read(pattern[style].format(fits + "9"), style) is None


def test_records_read_serials_from_text_only() -> None:
    records = [{"speaker": f"{i}. Bob", "id": f"{i}.", "text": "hello there"} for i in range(1, 20)]
    plan = derive(from_records(records))
    assert plan.serial_share == 0.0 and plan.branch != "numbered_log"


def test_records_with_an_unmarked_record_turn_supersession_off() -> None:
    marked = [{"text": f"{i}. The CEO of Acme is Person {i}."} for i in range(1, 10)]
    assert derive(marked).supersession is True
    plan = derive([*marked, {"text": "an unmarked note"}])
    assert plan.branch == "numbered_log" and plan.supersession is False


def test_plain_text_log_with_a_header_keeps_supersession() -> None:
    text = "Here is a list of facts:\n" + "\n".join(f"{i}. The CEO of Acme is Person {i}." for i in range(9))
    plan = derive(text)
    assert plan.branch == "numbered_log" and plan.supersession is True
