"""The worked example of adding a channel (docs/architecture.md, "How to add a channel").

A fourth channel is one class (here, in this file) and its registration: ``CHANNELS.register``
with the class, and a ``channels`` rule that names it. ``Memory`` builds, grows, re-rules and
asks it with no other change; plans, floors and ``explain`` speak of it by name. The paper's
three are what exact and native mode build, so a registered channel changes no pinned context.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from muster_exact.cache.memo import Memo
from muster_exact.channels import CHANNELS, Proposals
from muster_exact.channels.given import Given
from muster_exact.core.errors import InputError
from muster_exact.memory import build
from muster_exact.retrieve.select import Selected
from muster_exact.rules import EXACT, NATIVE


class RecencyChannel:
    """Proposes the newest units, newest first: what an agent said last is often what it is
    asked about next. Its only index is the number of units."""

    name = "recency"

    def __init__(self, units: int) -> None:
        self.units = units

    @classmethod
    def build(cls, given: Given) -> RecencyChannel:
        with given.timed("recency"):
            return cls(len(given.texts))

    def grown(self, given: Given, keep: int) -> RecencyChannel:
        return RecencyChannel(len(given.texts))

    def ruled(self, given: Given) -> RecencyChannel:
        return self  # it reads no rule

    def texts_from(self, unit: int) -> Sequence[str]:
        return ()

    def propose(self, query: str, k: int) -> Proposals:
        newest = tuple(range(self.units - 1, max(self.units - k, 0) - 1, -1))
        return Proposals(self.name, newest, tuple(1.0 / (1 + rank) for rank in range(len(newest))))


@pytest.fixture
def recency() -> Iterator[str]:
    """The registration, undone after the test so no other test sees a fourth channel."""
    CHANNELS.register("recency", RecencyChannel)
    try:
        yield "recency"
    finally:
        CHANNELS.unregister("recency")


# Notes long enough to be cut into several units, then a short last turn.
CHAT = [
    {"speaker": "Ann", "text": f"Note {i}: the {w} report is due on day {i}. " * 20}
    for i, w in enumerate("abcdefgh")
]
LAST = {"speaker": "Bob", "text": "Okay, thanks, talk tomorrow."}
QUESTION = "When is the c report due?"
WITH_RECENCY = "dense,bm25,graph,recency"


def test_a_registered_channel_is_built_asked_and_explained_where_the_rules_name_it(recency, tmp_path) -> None:
    cache = tmp_path / "vectors.sqlite"
    plain = build([*CHAT, LAST], models="cpu-small", cache=cache)
    memory = build(
        [*CHAT, LAST], models="cpu-small", cache=cache, rules=NATIVE.replace(channels=WITH_RECENCY)
    )
    assert list(plain.channels()) == ["dense", "bm25", "graph"]  # the mode's rule: the paper's three
    assert list(memory.channels()) == ["dense", "bm25", "graph", "recency"]  # in the registry's order
    assert "recency" in memory.timings and memory.plan.retrieval.channels == WITH_RECENCY

    last = len(memory.cut.units) - 1
    assert last > 3 and memory.unit_texts[last].endswith(LAST["text"])
    done = memory.retrieve(QUESTION)
    assert [p.channel for p in plain.retrieve(QUESTION).proposals] == ["dense", "bm25", "graph"]
    assert [p.channel for p in done.proposals] == ["dense", "bm25", "graph", "recency"]
    assert done.proposals[-1].units[0] == last and last in done.ranking.order  # fused with the rest
    assert done.floors["recency"] == 0  # no floor in FLOORS; a floor by its name is taken first:
    assert memory.select(done.proposals, done.ranking, {"recency": 1}, 1) == [Selected(last, "floor:recency")]
    _, explained = memory.explain_query(QUESTION)
    assert explained["channels"][-1]["channel"] == "recency" and explained["channels"][-1]["floor"] == 0
    assert explained["channels"][-1]["proposals"][:3] == [last, last - 1, last - 2]

    with pytest.raises(InputError, match="does not build the recency channel"):
        plain.channel("recency")
    ruled = memory.with_rules(fusion="minmax")  # re-ruled as one with the others
    assert ruled.channel("recency") is memory.channel("recency")


def test_a_grown_memory_grows_the_new_channel(recency, tmp_path) -> None:
    rules = NATIVE.replace(channels=WITH_RECENCY)
    memo = Memo()
    memory = build(CHAT, models="cpu-small", cache=tmp_path / "v.sqlite", rules=rules, memo=memo)
    grown = memory.grown([LAST], memo)
    assert not isinstance(grown, str), grown
    fresh = build([*CHAT, LAST], models="cpu-small", cache=tmp_path / "v.sqlite", rules=rules)
    assert grown.channel("recency").propose(QUESTION, 3) == fresh.channel("recency").propose(QUESTION, 3)
    assert grown.context(QUESTION).text == fresh.context(QUESTION).text


def test_the_channels_rule_names_registered_channels_only() -> None:
    with pytest.raises(InputError, match=r"unknown retrieval channel 'recncy'"):
        EXACT.replace(channels="dense,recncy")
    with pytest.raises(InputError, match="comma-separated list of distinct channel names"):
        EXACT.replace(channels="dense,dense")
    assert EXACT.channel_names() == NATIVE.channel_names() == ("dense", "bm25", "graph")
