"""The graph of current facts on a numbered log (``graph_facts = current``, native mode; decision 0199).

A chain "the sport of Steve Sax -> where that sport was created" whose first hop was updated:
the current graph follows the newest version's value (a lower-case one, which the entity rule
alone does not see) to the line about it; the graph of every version cannot.
"""

from __future__ import annotations

import pytest

from muster_exact import analyse
from muster_exact.cache.memo import Memo
from muster_exact.channels.graph import GraphChannel, newest_of_slots, unit_entities, with_values
from muster_exact.text.slots import slot_and_value

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

FACTS = (
    "Here is a list of facts:\n"
    "0. Steve Sax is associated with the sport of baseball.\n"
    "1. baseball was created in the country of United States of America.\n"
    "2. The capital of Peru is Lima.\n"
    "3. Steve Sax is associated with the sport of cricket.\n"
    "4. cricket was created in the country of England.\n"
    "5. Lima is located in the continent of South America.\n"
    "6. The author of Dune is Frank Herbert.\n"
)
QUESTION = "Which country is the birthplace of the sport associated with Steve Sax?"


def _graph(facts: str) -> tuple[GraphChannel, list[str]]:
    cut = analyse(FACTS).cut
    texts = [cut.retrieval_text(u) for u in cut.units]
    found = unit_entities(cut.units, texts, Memo())
    if facts == "all":
        return GraphChannel(found, [u.parent for u in cut.units], cut.parents), texts
    current = with_values(cut.units, texts, found)
    return GraphChannel(
        current, [u.parent for u in cut.units], cut.parents, "flrs", newest_of_slots(cut), "current"
    ), texts


def test_a_fact_line_splits_into_its_slot_and_value() -> None:
    assert slot_and_value("Steve Sax is associated with the sport of baseball.") == (
        "steve sax is associated with the sport of",
        "baseball",
    )
    assert slot_and_value("The capital of Peru is Lima.") == ("the capital of peru is", "lima")
    assert slot_and_value("Paris is Nice.") is None  # no attribute: no slot, so no value


def test_the_current_graph_follows_the_newest_value_to_the_next_hop() -> None:
    graph, texts = _graph("current")
    proposed = [texts[u] for u in graph.propose(QUESTION, 20).units]
    # The newest version of the first hop, then the line about its value; never the superseded
    # version, nor the line about the superseded value (its edges left the graph with it).
    assert proposed[:2] == [
        "Steve Sax is associated with the sport of cricket.",
        "cricket was created in the country of England.",
    ]
    assert "Steve Sax is associated with the sport of baseball." not in proposed
    assert "baseball was created in the country of United States of America." not in proposed


def test_the_graph_of_every_version_stops_at_the_first_hop() -> None:
    graph, texts = _graph("all")
    proposed = [texts[u] for u in graph.propose(QUESTION, 20).units]
    assert "cricket was created in the country of England." not in proposed
    assert "Steve Sax is associated with the sport of baseball." in proposed  # the superseded one too


def test_lines_without_slots_keep_their_entities_and_proposals() -> None:
    graph, _ = _graph("current")
    every, _ = _graph("all")
    question = "Which continent is Lima in?"
    # Capitalised names linked these lines before; they still do, one version each.
    assert graph.propose(question, 20).units == every.propose(question, 20).units
