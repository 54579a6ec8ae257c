"""BEAM rubric means, quirks, two-level aggregation and tau_norm, worked by hand."""

from __future__ import annotations

import math
import random
import warnings

import pytest

from harness.benchmarks.beam import scorer as beam

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

# ---------------------------------------------------------------- question scores


def test_rubric_mean_keeps_half_points_without_quirks() -> None:
    # (1 + 0.5 + 0) / 3 = 0.5
    assert beam.question_score([1, 0.5, 0], "summarization") == pytest.approx(0.5)


def test_quirks_truncate_half_points_except_event_ordering() -> None:
    # int(): [1, 0, 0] -> 1/3
    assert beam.question_score([1, 0.5, 0], "summarization", official_quirks=True) == pytest.approx(1 / 3)
    # event_ordering adds floats upstream: still (1 + 0.5 + 0) / 3
    assert beam.question_score([1, 0.5, 0], "event_ordering", official_quirks=True) == pytest.approx(0.5)
    # all halves: 0 with quirks, 0.5 without
    assert beam.question_score([0.5, 0.5], "abstention", official_quirks=True) == 0.0
    assert beam.question_score([0.5, 0.5], "abstention") == 0.5


def test_question_score_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="ability"):
        beam.question_score([1], "event_order")
    with pytest.raises(ValueError, match="nugget"):
        beam.question_score([], "summarization")


# ---------------------------------------------------------------- aggregation


def test_mean_per_conversation_then_across_conversations() -> None:
    rows = [
        {"conversation": "1", "ability": "information_extraction", "score": 1.0},
        {"conversation": "1", "ability": "information_extraction", "score": 0.0},
        {"conversation": "2", "ability": "information_extraction", "score": 1.0},
    ]
    # conversation 1: (1 + 0) / 2 = 0.5; conversation 2: 1.0; across: (0.5 + 1.0) / 2 = 0.75
    # (a flat mean over the three questions would be 2/3)
    assert beam.aggregate(rows) == {"information_extraction": pytest.approx(0.75)}


def test_quirks_report_tau_norm_for_event_ordering() -> None:
    rows = [
        beam.ScoredQuestion("1", "event_ordering", score=0.9, tau_norm=0.25),
        beam.ScoredQuestion("1", "event_ordering", score=0.7, tau_norm=0.75),
        beam.ScoredQuestion("1", "abstention", score=1.0, tau_norm=0.0),
    ]
    # quirks: event_ordering = mean tau (0.25 + 0.75) / 2 = 0.5; abstention keeps its judge score
    assert beam.aggregate(rows, official_quirks=True) == {
        "abstention": 1.0,
        "event_ordering": pytest.approx(0.5),
    }
    # no quirks: the judge score (0.9 + 0.7) / 2 = 0.8
    assert beam.aggregate(rows)["event_ordering"] == pytest.approx(0.8)


def test_quirks_need_tau_norm_for_event_ordering() -> None:
    rows = [{"conversation": "3", "ability": "event_ordering", "score": 1.0}]
    with pytest.raises(ValueError, match="tau_norm"):
        beam.aggregate(rows, official_quirks=True)
    assert beam.aggregate(rows) == {"event_ordering": 1.0}


def test_aggregate_orders_abilities_and_overall() -> None:
    rows = [
        {"conversation": "1", "ability": "temporal_reasoning", "score": 0.0},
        {"conversation": "1", "ability": "abstention", "score": 1.0},
    ]
    table = beam.aggregate(rows)
    assert list(table) == ["abstention", "temporal_reasoning"]
    assert beam.overall(table) == 0.5
    with pytest.raises(ValueError):
        beam.aggregate([{"conversation": "1", "ability": "bogus", "score": 1.0}])


# ---------------------------------------------------------------- tau_norm


def test_tau_norm_perfect_and_reversed() -> None:
    # identical: ranks [1,2,3] and [1,2,3], all 3 pairs concordant, tau = 1 -> (1+1)/2 = 1
    assert beam.tau_norm(["A", "B", "C"], ["A", "B", "C"]) == 1.0
    # reversed: gold [1,2,3], predicted A3 B2 C1 = [3,2,1], all discordant, tau = -1 -> 0
    assert beam.tau_norm(["C", "B", "A"], ["A", "B", "C"]) == 0.0


def test_tau_norm_one_swap() -> None:
    # predicted [B, A, C] over union [A, B, C] -> [2, 1, 3]; gold [1, 2, 3]
    # (A,B) discordant, (A,C) concordant, (B,C) concordant: tau = (2-1)/3 = 1/3 -> 2/3
    assert beam.tau_norm(["B", "A", "C"], ["A", "B", "C"]) == pytest.approx(2 / 3)


def test_tau_norm_missing_item_ranks_last() -> None:
    # predicted [A, C]; union [A, B, C]; missing rank 4: predicted [1, 4, 2], gold [1, 2, 3]
    # (A,B) C, (A,C) C, (B,C): 2<3 but 4>2 D -> tau = 1/3 -> 2/3
    assert beam.tau_norm(["A", "C"], ["A", "B", "C"]) == pytest.approx(2 / 3)


def test_tau_norm_extra_item_joins_the_union() -> None:
    # predicted [A, X, B]; union [A, B, X], missing rank 4: gold [1, 2, 4], predicted [1, 3, 2]
    # (A,B) C, (A,X) C, (B,X): 2<4 but 3>2 D -> tau = 1/3 -> 2/3
    assert beam.tau_norm(["A", "X", "B"], ["A", "B"]) == pytest.approx(2 / 3)


def test_tau_norm_ties_use_tau_b() -> None:
    # predicted [A, B]; gold [A, B, C, D]; missing rank 5: gold [1,2,3,4], predicted [1,2,5,5]
    # pairs with A or B: 5 concordant; (C,D) tied in predicted only
    # tau_b = (5 - 0) / sqrt((5 + 0 + 1) * (5 + 0 + 0)) = 5 / sqrt(30)
    assert beam.tau_norm(["A", "B"], ["A", "B", "C", "D"]) == pytest.approx((1 + 5 / math.sqrt(30)) / 2)
    # nothing shared: union [A, B, X, Y], missing 5: gold [1,2,5,5], predicted [5,5,1,2]
    # (A,B) tied in predicted only; (X,Y) tied in gold only; the other 4 pairs discordant
    # tau_b = -4 / sqrt((4 + 1) * (4 + 1)) = -0.8 -> 0.1
    assert beam.tau_norm(["X", "Y"], ["A", "B"]) == pytest.approx(0.1)


def test_tau_norm_repeated_item_keeps_its_last_position() -> None:
    # predicted [A, B, A]: A -> 3, B -> 2, so [3, 2] against gold [1, 2]: discordant, tau = -1 -> 0
    assert beam.tau_norm(["A", "B", "A"], ["A", "B"]) == 0.0


def test_tau_norm_undefined_is_nan_like_upstream() -> None:
    # a one-item union has no pair: scipy gives NaN, and upstream's guard lets it through
    assert math.isnan(beam.tau_norm(["A"], ["A"]))
    assert beam.tau_norm(["A"], ["A"], undefined=0.0) == 0.0


def test_kendall_tau_b_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(300):
        gold = [rng.choice("ABCDEF") for _ in range(rng.randint(1, 5))]
        predicted = [rng.choice("ABCDEFXY") for _ in range(rng.randint(1, 6))]
        first, second = beam.rank_vectors(predicted, gold)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns on the undefined cases
            expected = stats.kendalltau(first, second, variant="b").statistic
        ours = beam.kendall_tau_b(first, second)
        if ours is None:
            assert math.isnan(expected)
        else:
            assert ours == pytest.approx(expected)


def test_event_ordering_scores() -> None:
    # predicted [A, X], gold [A, B]: tp 1 (A), fp 1 (X), fn 1 (B): P = R = F1 = 0.5
    # ranks over [A, B, X], missing 4: gold [1, 2, 4], predicted [1, 4, 2]
    # (A,B) C, (A,X) C, (B,X) D -> tau 1/3 -> tau_norm 2/3; final = 2/3 * 0.5 = 1/3
    result = beam.event_ordering_scores(["A", "X"], ["A", "B"])
    assert result == pytest.approx(
        {"precision": 0.5, "recall": 0.5, "f1": 0.5, "tau_norm": 2 / 3, "final_score": 1 / 3}
    )


def test_canonicalise_claims_each_gold_item_once() -> None:
    gold = ["Core functionality", "Security"]

    def same(gold_item: str, item: str) -> bool:
        return gold_item.lower() in item.lower()

    predicted = ["I set up core functionality", "blah", "core functionality again", "security last"]
    assert beam.canonicalise(predicted, gold, same) == [
        "Core functionality",
        "blah",
        "core functionality again",  # its gold item is already claimed
        "Security",
    ]
    assert beam.response_items("1. A\n\n2. B") == ["1. A", "", "2. B"]
