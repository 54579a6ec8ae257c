"""The graph walk by sparse products gives, bit for bit, the walk by bincounts over the edges
(the formula it replaced, kept here as the reference)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster_exact.channels.graph import CONTINUE, STEPS, GraphChannel

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def _reference_walk(channel: GraphChannel, seed_ids: list[int]) -> np.ndarray:
    index = channel._index
    ep, ee, out = index.edge_parent, index.edge_entity, index.edge_out
    n_parents, n_entities = index.n_parents, index.n_entities
    seed_weight = np.zeros(n_entities)
    seed_weight[seed_ids] = index.idf[seed_ids]
    start = np.bincount(ep, weights=seed_weight[ee], minlength=n_parents)
    if start.sum() <= 0:
        return start
    start /= start.sum()
    mass = start.copy()
    for _ in range(STEPS):
        entity_mass = np.bincount(ee, weights=mass[ep] * out, minlength=n_entities)
        spread = np.bincount(ep, weights=entity_mass[ee] / index.df[ee], minlength=n_parents)
        mass = (1 - CONTINUE) * start + CONTINUE * spread
    return mass


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[frozenset[str]], list[int], list[list[int]]]:
    names = [f"E{i}" for i in range(draw(st.integers(1, 30)))]
    n_units = draw(st.integers(1, 60))
    unit_entities = [frozenset(draw(st.lists(st.sampled_from(names), max_size=8))) for _ in range(n_units)]
    size = draw(st.integers(1, 8))
    parents = [list(range(i, min(i + size, n_units))) for i in range(0, n_units, size)]
    unit_parent = [u // size for u in range(n_units)]
    return unit_entities, unit_parent, parents


@settings(max_examples=300, deadline=None)
@given(graphs(), st.data())
def test_the_sparse_walk_is_the_bincount_walk_bit_for_bit(graph, data) -> None:
    unit_entities, unit_parent, parents = graph
    channel = GraphChannel(unit_entities, unit_parent, parents)
    known = sorted(channel.vocabulary)
    if not known:
        return
    seeds = data.draw(st.lists(st.sampled_from(known), min_size=1, max_size=4, unique=True))
    seed_ids = [channel._entity_id[e] for e in seeds]
    assert np.array_equal(channel.walk(seed_ids), _reference_walk(channel, seed_ids))


def test_a_graph_with_no_entities_proposes_nothing() -> None:
    channel = GraphChannel([frozenset(), frozenset()], [0, 0], [[0, 1]])
    assert channel.propose("Who is Ann?", 5).units == ()
