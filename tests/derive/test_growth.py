"""Growth: detection's running counts and a cut grown by appended records equal a fresh pass.

A store that grows by ``Store.add`` extends the last read's detection tally and cut instead of
starting again (muster_exact.derive.detect.Tally, muster_exact.derive.growth.grown). These properties hold the
extension to the fresh computation over random stores made of real benchmark text, grown in
random steps, on every branch and with budgets small enough that records are cut in parts.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster_exact.cache.memo import Memo
from muster_exact.derive.cut import cut
from muster_exact.derive.detect import Detection, detect
from muster_exact.derive.growth import grown
from muster_exact.text import tokens
from muster_exact.text.records import from_records
from tests.conftest import data_root

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


@cache
def pools() -> dict[str, list[str]]:
    root = data_root()
    if root is None:
        pytest.skip("benchmark data not found")
    rows = json.loads((root / "memoryagentbench/data/Conflict_Resolution.json").read_text())
    row = next(r for r in rows if r["metadata"]["source"] == "factconsolidation_sh_6k")
    facts = [line for line in row["context"].split("\n") if line.strip()][:200]
    sample = json.loads((root / "locomo/locomo10.json").read_text())[0]["conversation"]
    turns = [
        t["text"]
        for key, value in sample.items()
        if key.startswith("session_") and isinstance(value, list)
        for t in value
    ][:200]
    # Long records: several turns joined (sentence breaks), and one run of words (none).
    long = [" ".join(turns[i : i + 12]) for i in range(0, 120, 12)] + [" ".join(["word"] * 700)]
    # Native-style serials on short lines (the facts' own text): a native numbered log.
    steps = [f"Step {i + 1}: {line.split('. ', 1)[-1]}" for i, line in enumerate(facts[1:61])]
    return {"facts": facts, "turns": turns, "long": long, "steps": steps}


def stores() -> st.SearchStrategy[list[str]]:
    """Records drawn in runs from the pools: numbered facts, native-style steps, chat turns and
    long records, mixed so that a growing store can change its branch."""
    run = st.tuples(st.sampled_from(["facts", "turns", "long", "steps"]), st.integers(1, 40))
    return st.lists(run, min_size=1, max_size=5).map(
        lambda runs: [
            pools()[kind][(at + i) % len(pools()[kind])]
            for at, (kind, n) in enumerate(runs)
            for i in range(n)
        ]
    )


def steps_of(n: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(1, max(n - 1, 1)), max_size=5, unique=True).map(sorted)


def without_tally(found: Detection) -> Detection:
    return dataclasses.replace(found, tally=None)


def test_detection_extended_record_by_record_equals_a_fresh_detection_on_a_native_log() -> None:
    # 40 steps, one unmarked turn, 20 more: continuous on 58 of 60 lines, so a native log with
    # supersession off; grown one record at a time.
    records = [*pools()["steps"][:40], pools()["turns"][0], *pools()["steps"][40:60]]
    check_detection(records, list(range(1, len(records))), "native", 512)
    assert detect(from_records(records)).branch == "numbered_log"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), mode=st.sampled_from(["native", "exact"]), budget=st.sampled_from([512, 64]))
def test_detection_extended_record_by_record_equals_a_fresh_detection(
    data: st.DataObject, mode: str, budget: int
) -> None:
    records = data.draw(stores())
    check_detection(records, data.draw(steps_of(len(records))), mode, budget)


def check_detection(records: list[str], steps: list[int], mode: str, budget: int) -> None:
    memo = Memo()
    tally = None
    for end in [*steps, len(records)]:
        source = from_records(records[:end])
        grown_found = detect(source, mode=mode, record_budget=budget, memo=memo, tally=tally)  # type: ignore[arg-type]
        fresh = detect(source, mode=mode, record_budget=budget)  # type: ignore[arg-type]
        assert without_tally(grown_found) == without_tally(fresh)
        tally = grown_found.tally
        assert tally is not None and tally.records == end


BRANCHES = [("numbered_log", "dot"), ("numbered_log", "step"), ("record_store", None), ("prose", None)]


@settings(max_examples=80, deadline=None)
@given(data=st.data(), branch=st.sampled_from(BRANCHES), budget=st.sampled_from([512, 96, 40]))
def test_a_cut_grown_by_appended_records_equals_a_fresh_cut(
    data: st.DataObject, branch: tuple[str, str | None], budget: int
) -> None:
    records = data.draw(stores())
    name, style = branch
    memo = Memo()
    previous = None
    for end in [*data.draw(steps_of(len(records))), len(records)]:
        source = from_records(records[:end])
        counts = tuple(tokens.count_many([source.record_text(r) for r in source.records]))
        options = {"branch": name, "style": style, "unit_budget": budget, "record_tokens": counts}
        fresh = cut(source, **options)  # type: ignore[arg-type]
        if previous is not None:
            extended, growth = grown(previous, source, memo=memo, **options)  # type: ignore[arg-type]
            assert extended == fresh
            # Units before the first changed one stand as they were (their parent aside when the
            # group size changed), and the parents said to change are all that changed.
            first = growth.first_unit
            for old, new in zip(previous.units[:first], fresh.units[:first], strict=True):
                assert old == new or (growth.regrouped and old._replace(parent=new.parent) == new)
            unchanged = set(range(len(fresh.parents))) - set(growth.parents)
            assert all(previous.parents[p] == fresh.parents[p] for p in unchanged)
            # The tail: at most one old unit is cut again (the last one, where packing resumes).
            assert growth.first_unit >= len(previous.units) - 1
        previous = fresh
