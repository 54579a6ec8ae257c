"""Metrics from saved judgments: verdict reading, runs, failures, BEAM's rubric and rank score."""

from __future__ import annotations

import pytest

from harness import benchmarks
from harness.llm.judging import read_verdict

LOCOMO = benchmarks.load("locomo")
BEAM = benchmarks.load("beam")


def test_verdicts_are_read_from_labels_and_scores() -> None:
    assert read_verdict("verdict", {"label": "CORRECT"}) == 1.0
    assert read_verdict("verdict", {"label": "wrong"}) == 0.0
    assert read_verdict("verdict", {"label": "maybe"}) is None
    assert read_verdict("rubric:0", {"score": "0.5"}) == 0.5
    assert read_verdict("rubric:0", {"score": 0.7}) is None  # only 1 / 0.5 / 0 are rubric scores


def test_runs_give_majority_and_mean_and_failed_runs_are_left_out() -> None:
    line = {"question": "q", "gold": ["Lisbon"], "category": "4", "answer": "Lisbon"}
    metrics = LOCOMO.question_metrics({**line, "verdicts": {"verdict": [1.0, 0.0, 1.0]}}, True)
    assert metrics["llm_judge"] == 1.0 and metrics["llm_judge_mean"] == pytest.approx(2 / 3)
    metrics = LOCOMO.question_metrics({**line, "verdicts": {"verdict": [0.0, None, 1.0]}}, True)
    assert metrics["llm_judge"] == 0.0 and metrics["llm_judge_mean"] == 0.5  # 1 of 2 is not a majority
    assert LOCOMO.question_metrics({**line, "verdicts": {"verdict": [None]}}, True)["llm_judge"] is None


def test_adversarial_questions_are_never_sent_to_the_judge() -> None:
    question = {"question": "q", "gold": ["trap"], "category": "5"}
    assert LOCOMO.judge_requests(question, "Not mentioned in the conversation") == []
    metrics = LOCOMO.question_metrics({**question, "answer": "Not mentioned in the conversation"}, True)
    assert metrics == {"f1": 1.0}


def test_a_failed_answer_scores_zero_on_every_metric() -> None:
    failed = {"question": "q", "gold": ["Lisbon"], "category": "1", "answer": None}
    assert LOCOMO.question_metrics(failed, True) == {"f1": 0.0, "llm_judge": 0.0, "llm_judge_mean": 0.0}
    beam = {
        "question": "q",
        "gold": ["x"],
        "category": "information_extraction",
        "rubric": ["a"],
        "answer": None,
    }
    assert BEAM.question_metrics(beam, True) == {"rubric": 0.0, "rubric_official": 0.0}


def test_beam_rubric_quirks_and_event_order_rank_score() -> None:
    line = {"question": "q", "gold": ["x"], "category": "information_extraction", "rubric": ["a", "b"]}
    judged = {**line, "answer": "a and half of b", "verdicts": {"rubric:0": [1.0], "rubric:1": [0.5]}}
    # The faithful mean keeps the half point; the official scorer's int() drops it.
    assert BEAM.question_metrics(judged, True) == {"rubric": 0.75, "rubric_official": 0.5}
    assert BEAM.question_metrics(judged, False) == {"rubric": 0.75, "rubric_official": None}
    events = {
        "question": "q",
        "gold": ["x"],
        "category": "event_ordering",
        "rubric": ["first", "second", "third"],
    }
    # The answer lists the events in reverse: each line matched to its reference event.
    ordered = {**events, "answer": "3rd\n2nd\n1st", "alignment": [2, 1, 0], "verdicts": {"rubric:0": [1.0]}}
    metrics = BEAM.question_metrics(ordered, True)
    assert metrics["tau_norm"] == 0.0 and metrics["rubric_official"] == 0.0  # tau = -1 -> (tau + 1) / 2 = 0
    in_order = {**ordered, "answer": "1st\n2nd\n3rd", "alignment": [0, 1, 2]}
    assert BEAM.question_metrics(in_order, True)["tau_norm"] == 1.0


def _resampled_two_level_means(rows: list[tuple[str, str, float]], seed: int) -> list[float]:
    """The BEAM interval's resamples the plain way (the reference): draw conversations, then mean
    per category within each drawn conversation, across them, and across categories."""
    import numpy as np

    from harness.tables import BOOTSTRAP

    stores = sorted({store for store, _, _ in rows})
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(BOOTSTRAP):
        by_category: dict[str, list[float]] = {}
        for i in rng.integers(0, len(stores), size=len(stores)):
            mine: dict[str, list[float]] = {}
            for store, category, value in rows:
                if store == stores[i]:
                    mine.setdefault(category, []).append(value)
            for category, values in mine.items():
                by_category.setdefault(category, []).append(sum(values) / len(values))
        out.append(sum(sum(v) / len(v) for v in by_category.values()) / len(by_category))
    return out


def test_the_clustered_interval_equals_resampling_conversations_one_frame_at_a_time() -> None:
    import numpy as np
    import pandas as pd

    from harness.tables import SEED, _cluster_ci

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "store": [f"conv-{rng.integers(0, 4)}" for _ in range(60)],
            "category": [f"ability-{rng.integers(0, 3)}" for _ in range(60)],
            "rubric": rng.choice([0.0, 0.5, 1.0], 60),
        }
    )
    frame = frame[~((frame["store"] == "conv-0") & (frame["category"] != "ability-0"))]  # a sparse one
    rows = list(frame[["store", "category", "rubric"]].itertuples(index=False, name=None))
    expected = np.percentile(_resampled_two_level_means(rows, SEED), [2.5, 97.5])
    assert np.allclose(_cluster_ci(frame, "rubric"), expected, rtol=0, atol=1e-12)
