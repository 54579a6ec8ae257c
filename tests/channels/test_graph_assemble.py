from __future__ import annotations

import numpy as np
import pytest

from muster_exact import analyse
from muster_exact.channels import Proposals
from muster_exact.channels.graph import GraphChannel
from muster_exact.retrieve.assemble import assemble
from muster_exact.retrieve.rerank import fuse
from muster_exact.retrieve.select import Selected

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def _graph(policy: str) -> GraphChannel:
    unit_entities = [
        frozenset({"fatah"}),
        frozenset({"fatah", "mahmoud abbas"}),
        frozenset(),
        frozenset({"london"}),
        frozenset({"mahmoud abbas", "ramallah"}),
        frozenset({"paris"}),
    ]
    parents = [(0, 1, 2), (3,), (4, 5)]
    unit_parent = [0, 0, 0, 1, 2, 2]
    return GraphChannel(unit_entities, unit_parent, parents, policy)  # type: ignore[arg-type]


def test_walk_seeds_from_query_entities_and_spreads() -> None:
    graph = _graph("flr")
    assert graph.seeds("Who chairs Fatah today?") == ["fatah"]
    mass = np.asarray(graph.walk([graph._entity_id["fatah"]]))
    assert mass[0] > mass[2] > 0  # parent 2 is reached through "mahmoud abbas"
    assert mass[1] == 0  # nothing links London's parent
    proposals = graph.propose("Who chairs Fatah today?", 20)
    # parent 0: both Fatah units (equal overlap, by id); parent 2: its best unit only
    assert proposals.units == (0, 1, 4)


def test_flrs_adds_immediate_siblings() -> None:
    proposals = _graph("flrs").propose("Who chairs Fatah today?", 20)
    assert proposals.units == (0, 1, 2, 4, 5)


def test_no_known_entity_proposes_nothing() -> None:
    assert _graph("flrs").propose("what happened next?", 20).units == ()


def test_numbered_assembly_shows_only_the_newest_version() -> None:
    derived = analyse(
        "0. The CEO of Acme is Ann Lee.\n1. Thomas Kyd was born in the city of London.\n"
        "2. The CEO of Acme is Bo Li.\n3. The CEO of Acme is Cy Wu.\n4. Kyd died in the city of Rome.\n"
    )
    cut, plan = derived.cut, derived.plan
    proposals = [Proposals("dense", (4, 0, 1), (0, 0, 0))]
    chosen = [Selected(4, "floor:dense"), Selected(0, "fill"), Selected(2, "fill"), Selected(1, "fill")]
    context = assemble("q", cut, plan, chosen, fuse(proposals), proposals)
    assert context.text == (
        "1. Thomas Kyd was born in the city of London.\n"
        "3. The CEO of Acme is Cy Wu.\n"
        "4. Kyd died in the city of Rome."
    )
    assert {p.unit: p.shown_as for p in context.provenance} == {4: 4, 0: 3, 2: 3, 1: 1}


def test_record_assembly_groups_by_parent_in_stored_order() -> None:
    records = [f"record {i} " + "word " * 300 for i in range(40)]  # one record per unit
    derived = analyse("\n\n".join(records))
    cut, plan = derived.cut, derived.plan
    assert plan.parent_group_size == 4
    chosen = [Selected(u, "fill") for u in (13, 2, 12, 0, 30)]
    proposals = [Proposals("dense", (13, 2, 12, 0, 30), (0,) * 5)]
    context = assemble("q", cut, plan, chosen, fuse(proposals), proposals)
    assert [b.units for b in context.blocks] == [(0, 2), (12, 13), (30,)]
    assert [b.parent for b in context.blocks] == [0, 3, 7]
    assert context.text == "\n\n".join(records[u] for u in (0, 2, 12, 13, 30))
    assert context.record_ids == ("r0", "r2", "r12", "r13", "r30")
