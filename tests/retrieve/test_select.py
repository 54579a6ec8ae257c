"""Floors with controlled channel outputs (SPEC 4)."""

from __future__ import annotations

import pytest

from muster_exact.channels import CHANNELS, Proposals
from muster_exact.core.errors import InputError
from muster_exact.retrieve.rerank import Ranking, fuse
from muster_exact.retrieve.select import scaled_floors, select

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


@pytest.mark.parametrize(
    ("per_ten", "units", "floors"),
    [
        ({"dense": 4, "bm25": 3, "graph": 3}, 10, {"dense": 4, "bm25": 3, "graph": 3}),
        ({"dense": 4, "bm25": 3, "graph": 3}, 20, {"dense": 8, "bm25": 6, "graph": 6}),
        ({"dense": 4, "bm25": 3, "graph": 3}, 40, {"dense": 16, "bm25": 12, "graph": 12}),
        ({"dense": 2, "bm25": 0, "graph": 8}, 10, {"dense": 2, "bm25": 0, "graph": 8}),
        ({"dense": 2, "bm25": 0, "graph": 8}, 40, {"dense": 8, "bm25": 0, "graph": 32}),
        # 6, 4.5, 4.5: the tie on remainders goes to the earlier channel (BM25).
        ({"dense": 4, "bm25": 3, "graph": 3}, 15, {"dense": 6, "bm25": 5, "graph": 4}),
        ({"dense": 4, "bm25": 3, "graph": 3}, 1, {"dense": 1, "bm25": 0, "graph": 0}),
        ({"dense": 2, "bm25": 0, "graph": 8}, 3, {"dense": 1, "bm25": 0, "graph": 2}),
    ],
)
def test_scaled_floors_sum_to_u(per_ten, units, floors) -> None:
    assert scaled_floors(per_ten, units) == floors
    assert list(scaled_floors(per_ten, units)) == CHANNELS.names()
    assert sum(floors.values()) == units


def test_floors_are_by_channel_name() -> None:
    # a channel not named has no floor; the floors come back over every channel, in order
    assert scaled_floors({"graph": 8, "dense": 2}, 10) == {"dense": 2, "bm25": 0, "graph": 8}
    proposals = [Proposals("dense", (1, 2), (0,) * 2), Proposals("graph", (3, 4), (0,) * 2)]
    chosen = select(proposals, _ranking([4, 3, 2, 1]), {"graph": 1}, 2)
    assert [(s.unit, s.reason) for s in chosen] == [(4, "floor:graph"), (3, "fill")]
    with pytest.raises(InputError, match="unknown retrieval channel 'bm52'; did you mean bm25"):
        scaled_floors({"bm52": 3}, 10)


def _ranking(order: list[int]) -> Ranking:
    return Ranking("test", tuple(order), {u: -i for i, u in enumerate(order)})


def test_each_channel_gets_exactly_its_floor() -> None:
    proposals = [
        Proposals("dense", (1, 2, 3, 4, 5, 6), (0,) * 6),
        Proposals("bm25", (11, 12, 13, 14), (0,) * 4),
        Proposals("graph", (21, 22, 23, 24), (0,) * 4),
    ]
    # The rerank order favours BM25's units; floors still reserve each channel's share.
    ranking = _ranking([11, 12, 13, 14, 21, 22, 23, 24, 6, 5, 4, 3, 2, 1])
    chosen = select(proposals, ranking, {"dense": 4, "bm25": 3, "graph": 3}, 10)
    by_reason: dict[str, list[int]] = {}
    for s in chosen:
        by_reason.setdefault(s.reason, []).append(s.unit)
    # each channel takes its floor from its own proposals in rerank order
    assert by_reason == {"floor:dense": [6, 5, 4, 3], "floor:bm25": [11, 12, 13], "floor:graph": [21, 22, 23]}


def test_shared_units_are_taken_once_and_skipped() -> None:
    proposals = [
        Proposals("dense", (1, 2, 3), (0,) * 3),
        Proposals("bm25", (1, 2, 7, 8), (0,) * 4),
        Proposals("graph", (9,), (0,)),
    ]
    ranking = _ranking([1, 2, 7, 3, 8, 9])
    chosen = select(proposals, ranking, {"dense": 2, "bm25": 2, "graph": 1}, 5)
    assert [(s.unit, s.reason) for s in chosen] == [
        (1, "floor:dense"),
        (2, "floor:dense"),
        (7, "floor:bm25"),
        (8, "floor:bm25"),
        (9, "floor:graph"),
    ]


def test_unfilled_floors_go_to_the_best_remaining_units() -> None:
    proposals = [
        Proposals("dense", (1, 2, 3, 4, 5, 6, 7, 8), (0,) * 8),
        Proposals("bm25", (), ()),  # proposes nothing: its 3 slots are free
        Proposals("graph", (20,), (0,)),  # one of its 3
    ]
    ranking = _ranking([8, 20, 7, 6, 5, 4, 3, 2, 1])
    chosen = select(proposals, ranking, {"dense": 4, "bm25": 3, "graph": 3}, 10)
    assert [s.unit for s in chosen if s.reason == "floor:dense"] == [8, 7, 6, 5]
    assert [s.unit for s in chosen if s.reason == "floor:graph"] == [20]
    assert [s.unit for s in chosen if s.reason == "fill"] == [4, 3, 2, 1]  # best remaining, only 4 left


def test_u_larger_than_candidates_returns_them_all() -> None:
    proposals = [Proposals("dense", (2, 1), (0, 0)), Proposals("bm25", (), ()), Proposals("graph", (), ())]
    chosen = select(proposals, fuse(proposals), {"dense": 4, "bm25": 3, "graph": 3}, 10)
    assert sorted(s.unit for s in chosen) == [1, 2]


def test_rrf_arithmetic_and_ties_by_position() -> None:
    proposals = [
        Proposals("dense", (5, 3), (0, 0)),
        Proposals("bm25", (3, 5), (0, 0)),
        Proposals("graph", (9,), (0,)),
    ]
    ranking = fuse(proposals)
    # 3 and 5 both score 1/61 + 1/62; the tie goes to the earlier unit (3).
    assert ranking.order == (3, 5, 9)
    assert ranking.scores[3] == pytest.approx(1 / 61 + 1 / 62)
    assert ranking.scores[9] == pytest.approx(1 / 61)


def test_minmax_fusion_arithmetic() -> None:
    # dense scores 0.9, 0.5, 0.1 -> 1, 0.5, 0; bm25 12, 6, 3 -> 1, 1/3, 0.
    proposals = [
        Proposals("dense", (1, 2, 3), (0.9, 0.5, 0.1)),
        Proposals("bm25", (3, 4, 2), (12.0, 6.0, 3.0)),
    ]
    ranking = fuse(proposals, "minmax")
    assert ranking.method == "minmax"
    assert ranking.scores == pytest.approx({1: 1.0, 2: 0.5 + 0.0, 3: 0.0 + 1.0, 4: 1 / 3})
    # 1 and 3 tie at 1.0: the lower id first.
    assert ranking.order == (1, 3, 2, 4)


def test_zscore_fusion_scales_by_spread() -> None:
    proposals = [Proposals("dense", (1, 2, 3), (3.0, 2.0, 1.0)), Proposals("graph", (4, 5), (7.0, 7.0))]
    ranking = fuse(proposals, "zscore")
    spread = (2 / 3) ** 0.5  # population std of 3, 2, 1
    # A channel whose proposals all score alike gives each 1.
    assert ranking.scores == pytest.approx({1: 2 / spread, 2: 1 / spread, 3: 0.0, 4: 1.0, 5: 1.0})
    assert ranking.order == (1, 2, 4, 5, 3)


def test_floors_in_each_channels_own_order() -> None:
    proposals = [Proposals("dense", (5, 6, 7), (0,) * 3), Proposals("bm25", (8, 9), (0,) * 2)]
    ranking = _ranking([7, 9, 6, 8, 5])
    chosen = select(proposals, ranking, {"dense": 2, "bm25": 1, "graph": 0}, 4, own_order=True)
    # Floors follow the channels' own rankings; the free slot follows the fused order.
    assert [(s.unit, s.reason) for s in chosen] == [
        (5, "floor:dense"),
        (6, "floor:dense"),
        (8, "floor:bm25"),
        (7, "fill"),
    ]
