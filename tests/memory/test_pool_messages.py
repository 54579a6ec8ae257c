"""The pool_messages rule (decision 0205): on a record store, native's channel pools hold one unit
per message; exact mode and numbered logs keep every unit a channel ranks. Real embedder."""

from __future__ import annotations

import pytest

from muster_exact import rules
from muster_exact.channels import Proposals, distinct_records
from muster_exact.memory import build
from muster_exact.retrieve.assemble import Candidates
from muster_exact.retrieve.explain import explain

# Replies longer than a unit (each cut into two or three window units, all about sourdough) among
# short turns, one of which holds the fact the question asks for; every record within the record
# budget, so the store is a record store.
PARAGRAPH = (
    "A sourdough starter is a culture of flour and water that wild yeast and lactic acid bacteria "
    "live in; feed it at the same hour each day, keep it warm, discard half before each feeding, "
    "and watch how far it rises in the jar before you bake a loaf of sourdough bread with it. "
)
GARDEN = (
    "the tomatoes by the fence need water every evening, the beans climb the poles faster than "
    "last year, the lettuce bolted in the heat, the compost heap wants turning twice a week, the "
    "apple tree has blossom at last, and the hose at the back has a leak near the tap that drips. "
)
CHAT = [
    {"speaker": "user", "text": "I named my sourdough starter Bubbles and keep it on the fridge."},
    *(
        {"speaker": "assistant", "text": "\n\n".join(f"Reply {r}, step {i}: {PARAGRAPH}" for i in range(5))}
        for r in range(4)
    ),
    *({"speaker": "user", "text": f"Garden note {i}: {GARDEN}{GARDEN}"} for i in range(30)),
]
QUERY = "What did I name my sourdough starter?"


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    memory = build(CHAT, models="cpu-small", cache=tmp_path_factory.mktemp("pool") / "vectors.sqlite")
    assert memory.plan.branch == "record_store"
    return memory


def _repeats(memory, pool: Proposals) -> int:
    """Units of ``pool`` that show no message a unit above them does not already show."""
    seen: set[str] = set()
    repeats = 0
    for unit in pool.units:
        shown = memory.cut.shown_records[unit]
        repeats += shown <= seen
        seen |= shown
    return repeats


def _pools(memory, **where) -> dict[str, Proposals]:
    query, units_read = memory.checked(QUERY, 1)
    return {p.channel: p for p in memory.proposals(query, units_read, **where)[0]}


def test_native_pools_hold_one_unit_per_message_and_any_keeps_the_long_reply(chat) -> None:
    replies = [u.id for u in chat.cut.units if chat.cut.shown_records[u.id] <= {"r1", "r2", "r3", "r4"}]
    assert len(replies) >= 4  # units showing nothing but a reply: the replies are longer than a unit
    assert chat.rules.pool_messages == "distinct" and rules.EXACT.pool_messages == "any"
    anyone = chat.with_rules(pool_messages="any")
    for name in ("dense", "bm25"):
        before, now = _pools(anyone)[name], _pools(chat)[name]
        assert _repeats(anyone, before) >= 3  # several units of the one reply
        assert _repeats(chat, now) == 0
        if name == "dense":  # (BM25 proposes only the units holding a query term)
            assert len(now.units) == len(before.units) == 20  # read deeper to fill the pool
        held = [chat.cut.shown_records[u] for u in now.units if u in replies]
        assert len(held) == len(set(held)) >= 1  # each reply by its best unit
        # What the rule keeps is the channel's own ranking with the repeats left out.
        ranking = anyone.channel(name).propose(QUERY, len(chat.cut.units))
        assert now.units == distinct_records(ranking, chat.cut.shown_records, 20).units
    assert "Bubbles" in chat.context(QUERY, 1).text
    assert "pool messages distinct" in explain(chat.plan)


def test_a_filtered_read_applies_the_rule_to_the_allowed_units(chat) -> None:
    allowed = frozenset(u.id for u in chat.cut.units if u.id % 2 == 0 or u.id < 12)
    records = frozenset(r for u in allowed for r in chat.cut.units[u].records)
    candidates = Candidates(allowed, records)
    pools = _pools(chat, allowed=candidates)
    for name in ("dense", "bm25"):
        assert set(pools[name].units) <= allowed
        assert _repeats(chat, pools[name]) == 0
    assert _repeats(chat, _pools(chat.with_rules(pool_messages="any"), allowed=candidates)["dense"]) >= 3


def test_a_numbered_log_keeps_every_unit_a_channel_ranks(tmp_path) -> None:
    # One block of numbered lines is one record: its units (lines) all show it, and the rule
    # would leave a pool of one. It applies to record stores only.
    log = "\n".join(f"{i}. The capital of Country{i} is City{i}." for i in range(60))
    memory = build(log, models="cpu-small", cache=tmp_path / "vectors.sqlite")
    assert memory.plan.branch == "numbered_log" and memory.rules.pool_messages == "distinct"
    query, units_read = memory.checked("What is the capital of Country7?", 2)
    pools = memory.proposals(query, units_read)[0]
    anyone = memory.with_rules(pool_messages="any").proposals(query, units_read)[0]
    assert [p.units for p in pools] == [p.units for p in anyone]
    assert len(pools[0].units) == 20


def test_distinct_records_keeps_the_first_unit_showing_each_new_record() -> None:
    shown = [frozenset({"a"}), frozenset({"a"}), frozenset({"a", "b"}), frozenset({"b"}), frozenset({"c"})]
    ranked = Proposals("bm25", (0, 1, 2, 3, 4), (5.0, 4.0, 3.0, 2.0, 1.0))
    assert distinct_records(ranked, shown, 3) == Proposals("bm25", (0, 2, 4), (5.0, 3.0, 1.0))
    assert distinct_records(ranked, shown, 2).units == (0, 2)
    assert distinct_records(Proposals("bm25", (), ()), shown, 3).units == ()
