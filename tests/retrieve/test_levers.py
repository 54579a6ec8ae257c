"""Two standard levers, each a rule off by default (issue 56's study measures them): Rocchio
feedback on the dense query and maximal marginal relevance over parents for the fill."""

from __future__ import annotations

import numpy as np
import pytest

from muster_exact import explain, rules
from muster_exact.channels import Proposals
from muster_exact.channels.dense import ALPHA, BETA, FEEDBACK_DEPTH
from muster_exact.memory import build
from muster_exact.retrieve.rerank import Ranking
from muster_exact.retrieve.select import select
from tests.memory.test_variants import CHAT


def _ranking(order: list[int]) -> Ranking:
    return Ranking("rrf", tuple(order), {u: 1.0 / (60 + i) for i, u in enumerate(order, start=1)})


@pytest.mark.fast
def test_mmr_over_parents_shows_a_new_parent_before_a_second_unit_of_one() -> None:
    parents = [0, 0, 0, 1, 1, 2]
    order = [0, 1, 2, 3, 4, 5]
    proposals = [Proposals("dense", tuple(order), ())]
    ranking = _ranking(order)
    plain = select(proposals, ranking, {}, 3)
    assert [s.unit for s in plain] == [0, 1, 2]
    covered = select(proposals, ranking, {}, 3, parents=parents)
    assert [s.unit for s in covered] == [0, 3, 5]
    # A floor's unit counts as shown: its parent waits behind the others.
    floored = select(proposals, ranking, {"dense": 1}, 4, parents=parents)
    assert [(s.unit, s.reason) for s in floored] == [
        (0, "floor:dense"),
        (3, "fill"),
        (5, "fill"),
        (1, "fill"),
    ]


def test_rocchio_moves_the_dense_query_towards_its_top_units(tmp_path) -> None:
    memory = build(CHAT, models="cpu-small", cache=tmp_path / "vectors.sqlite")
    query = "What breed is the dog Melanie adopted?"
    plain = memory.channel("dense")
    moved = memory.with_rules(dense_feedback="rocchio").channel("dense")
    assert plain.feedback == "none" and moved.feedback == "rocchio"
    first = plain.scores(query)
    # By hand: the best piece of each of the top ten units, their centroid, alpha q + beta c.
    vectors = plain._vectors.astype(np.float64)
    starts = [*plain._start, len(vectors)]
    q = plain.query_vector(query).astype(np.float64)
    top = sorted(range(len(first)), key=lambda u: (-first[u], u))[:FEEDBACK_DEPTH]
    best = [max(range(starts[u], starts[u + 1]), key=lambda p: vectors[p] @ q) for u in top]
    target = ALPHA * q + BETA * vectors[best].mean(axis=0)
    target /= np.linalg.norm(target)
    expected = [max(vectors[p] @ target for p in range(starts[u], starts[u + 1])) for u in range(len(first))]
    np.testing.assert_allclose(moved.scores(query), np.array(expected, dtype=np.float32), rtol=0, atol=1e-6)
    assert not np.array_equal(moved.scores(query), first)
    # Off by default in both modes, and the plain scores are what they were.
    assert rules.EXACT.dense_feedback == rules.NATIVE.dense_feedback == "none"
    np.testing.assert_array_equal(memory.channel("dense").scores(query), first)


def test_coverage_rule_reaches_the_memorys_selection(tmp_path) -> None:
    memory = build(CHAT, models="cpu-small", cache=tmp_path / "vectors.sqlite", rules=rules.EXACT)
    query = "Where did Caroline move for the new job?"
    covered = memory.with_rules(coverage="mmr")
    done = covered.retrieve(query, 4)
    parents = [memory.cut.units[p.unit].parent for p in done.context.provenance]
    plain = [memory.cut.units[p.unit].parent for p in memory.retrieve(query, 4).context.provenance]
    assert len(set(parents)) >= len(set(plain))
    assert "coverage mmr" in explain(covered.plan)
