"""The published LoCoMo judge outputs and errata (dial481/locomo-audit), read offline.

Pins the figures harness.benchmarks.locomo.audit computes from the files in ../shared/data, and
checks them against each file's own summary fields (metadata, accuracy).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.benchmarks.locomo import audit
from muster_exact.core.errors import DataError
from muster_exact.verify.corpora import Question, locomo_questions

FC = "locomo/outputs/locomo-audit_fc-baseline/{}/eval_results.json"
AP = "locomo/outputs/locomo-audit_ap-baseline/{}/ap_eval_results_scored.json"
ERRATA = "locomo/errata/locomo-audit_errors.json"
LOCOMO = "locomo/locomo10.json"

CATEGORY_N = {"1": 282, "2": 321, "3": 96, "4": 841, "all": 1540}

# Majority vote (2 of 3 verdicts): answers accepted, per category (measured).
FC_MAJORITY = {
    "gpt-4o-mini-cot": {"1": 234, "2": 184, "3": 65, "4": 748, "all": 1231},
    "gpt-4o-mini-memos": {"1": 199, "2": 165, "3": 54, "4": 727, "all": 1145},
    "gpt-4.1-mini-cot": {"1": 260, "2": 277, "3": 78, "4": 812, "all": 1427},
    "gpt-4.1-mini-memos": {"1": 224, "2": 226, "3": 59, "4": 755, "all": 1264},
}
# Mean of the three runs' accuracies, to 4 decimals (measured).
FC_MEAN = {
    "gpt-4o-mini-cot": {"1": 0.8262, "2": 0.5732, "3": 0.6667, "4": 0.8910, "all": 0.7989},
    "gpt-4o-mini-memos": {"1": 0.7021, "2": 0.5109, "3": 0.5660, "4": 0.8652, "all": 0.7429},
    "gpt-4.1-mini-cot": {"1": 0.9220, "2": 0.8629, "3": 0.8090, "4": 0.9651, "all": 0.9262},
    "gpt-4.1-mini-memos": {"1": 0.7884, "2": 0.7051, "3": 0.6181, "4": 0.8966, "all": 0.8195},
}
FC_MEAN_ALL = {
    "gpt-4o-mini-cot": 0.7989177489177489,
    "gpt-4o-mini-memos": 0.7428571428571429,
    "gpt-4.1-mini-cot": 0.9261904761904762,
    "gpt-4.1-mini-memos": 0.8194805194805195,
}
# Judge leniency: wrong answers accepted. Mean to 4 decimals; majority as counts.
AP_MEAN = {
    "v1": {"1": 0.0591, "2": 0.0343, "3": 0.0833, "4": 0.1518, "all": 0.1061},
    "v2": {"1": 0.4444, "2": 0.6324, "3": 0.6528, "4": 0.6853, "all": 0.6281},
}
AP_MEAN_ALL = {"v1": 0.10606060606060606, "v2": 0.6281385281385282}
AP_MAJORITY = {
    "v1": {"1": 17, "2": 11, "3": 8, "4": 128, "all": 164},
    "v2": {"1": 126, "2": 201, "3": 63, "4": 576, "all": 966},
}
ERROR_TYPES = {
    "WRONG_CITATION": 57,
    "HALLUCINATION": 33,
    "TEMPORAL_ERROR": 26,
    "ATTRIBUTION_ERROR": 24,
    "AMBIGUOUS": 13,
    "INCOMPLETE": 3,
}


@pytest.fixture(scope="module")
def ids(data: Path) -> audit.LocomoIds:
    return audit.locomo_ids(data / LOCOMO)


@pytest.fixture(scope="module")
def locomo(data: Path) -> dict[str, Question]:
    """Our question id -> question, through the library's own LoCoMo reader."""
    samples = json.loads((data / LOCOMO).read_text(encoding="utf-8"))
    return {q.id: q for s in samples for q in locomo_questions(s)}


@pytest.fixture(scope="module")
def errata(data: Path, ids: audit.LocomoIds) -> dict[str, audit.Erratum]:
    return audit.load_errata(data / ERRATA, ids)


def _file(data: Path, template: str, name: str) -> tuple[Path, dict[str, Any]]:
    path = data / template.format(name)
    return path, json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("run", sorted(FC_MAJORITY))
def test_fc_baseline_accuracy(data: Path, ids: audit.LocomoIds, run: str) -> None:
    path, raw = _file(data, FC, run)
    rows = audit.load_judged(path, ids)
    meta = raw["metadata"]
    assert len(rows) == 1540 and {len(r.verdicts) for r in rows} == {meta["num_runs"]} == {3}

    majority = audit.accuracy(rows, "majority")
    assert {c: r.n for c, r in majority.items()} == CATEGORY_N
    assert {c: round(r.value * r.n) for c, r in majority.items()} == FC_MAJORITY[run]
    assert majority["all"].value == pytest.approx(meta["majority_vote_accuracy"], abs=1e-12)
    # The file's `correct` is the majority-vote count, while its `accuracy` is the mean.
    assert raw["correct"] == FC_MAJORITY[run]["all"]

    mean = audit.accuracy(rows, "mean")
    assert {c: round(r.value, 4) for c, r in mean.items()} == FC_MEAN[run]
    assert mean["all"].value == pytest.approx(FC_MEAN_ALL[run], abs=1e-12)
    assert mean["all"].value == pytest.approx(meta["mean_accuracy"], abs=1e-12)
    assert mean["all"].value == pytest.approx(raw["accuracy"], abs=1e-12)
    for category, summary in meta["category_accuracies"].items():
        assert mean[category].value == pytest.approx(summary["mean"], abs=1e-12)
        assert mean[category].n == summary["total"]
        singles = [audit.accuracy(rows, f"run:{k}")[category].value for k in (1, 2, 3)]
        assert singles == pytest.approx(summary["individual_runs"], abs=1e-12)
    singles = [audit.accuracy(rows, f"run:{k}")["all"].value for k in (1, 2, 3)]
    assert singles == pytest.approx(meta["run_scores"], abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_ap_baseline_false_accept_rate(data: Path, ids: audit.LocomoIds, version: str) -> None:
    path, raw = _file(data, AP, version)
    rows = audit.load_judged(path, ids)
    assert len(rows) == 1540

    mean = audit.false_accept_rate(rows, "mean")
    assert mean["all"].value == pytest.approx(raw["accuracy"], abs=1e-12)
    assert mean["all"].value == pytest.approx(AP_MEAN_ALL[version], abs=1e-12)
    assert {c: round(r.value, 4) for c, r in mean.items()} == AP_MEAN[version]

    majority = audit.false_accept_rate(rows, "majority")
    assert {c: r.n for c, r in majority.items()} == CATEGORY_N
    assert {c: round(r.value * r.n) for c, r in majority.items()} == AP_MAJORITY[version]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("template", "name"),
    [(FC, run) for run in sorted(FC_MAJORITY)] + [(AP, "v1"), (AP, "v2")],
)
def test_every_judged_id_is_a_locomo_question(
    data: Path, ids: audit.LocomoIds, locomo: dict[str, Question], template: str, name: str
) -> None:
    path, _ = _file(data, template, name)
    rows = audit.load_judged(path, ids)
    assert all(locomo[r.qid].text == r.question and locomo[r.qid].category == r.category for r in rows)
    # Exactly LoCoMo's non-adversarial questions, each once.
    assert sorted(r.qid for r in rows) == sorted(q.id for q in locomo.values() if q.category != "5")


@pytest.mark.slow
def test_audit_index_counts_adversarial_questions_too(data: Path) -> None:
    """Evidence for the mapping: N indexes all of a conversation's qa, category 5 included."""
    samples = json.loads((data / LOCOMO).read_text(encoding="utf-8"))
    _, raw = _file(data, FC, "gpt-4o-mini-cot")
    over_all = over_scored = 0
    for user, entries in raw["detailed_results"].items():
        qa = samples[int(user.rsplit("_", 1)[1])]["qa"]
        scored = [q for q in qa if str(q["category"]) != "5"]
        for entry in entries:
            n = int(entry["question_id"].rpartition("_qa")[2])
            over_all += qa[n]["question"] == entry["question"]
            over_scored += n < len(scored) and scored[n]["question"] == entry["question"]
    # Counting only categories 1-4 goes wrong where conv-30 has category 5 between others.
    assert (over_all, over_scored) == (1540, 1538)


@pytest.mark.slow
def test_errata_counts_and_ceiling(errata: dict[str, audit.Erratum], locomo: dict[str, Question]) -> None:
    assert len(errata) == 156
    assert Counter(e.error_type for e in errata.values()) == ERROR_TYPES
    wrong = [e for e in errata.values() if e.gold_wrong]
    assert len(wrong) == 99
    assert {e.error_type for e in wrong} == audit.GOLD_WRONG
    assert all(locomo[qid].text == e.question for qid, e in errata.items())
    assert audit.ceiling(errata) == (1540 - 99) / 1540
    assert round(audit.ceiling(errata), 4) == 0.9357


@pytest.mark.slow
def test_errata_are_among_the_judged_questions(
    data: Path, ids: audit.LocomoIds, errata: dict[str, audit.Erratum]
) -> None:
    rows = audit.load_judged(data / FC.format("gpt-4o-mini-cot"), ids)
    by_id = {r.qid: r for r in rows}
    assert set(errata) <= set(by_id)
    assert all(by_id[qid].gold == e.gold and by_id[qid].category == e.category for qid, e in errata.items())


@pytest.mark.slow
def test_corrected_gold(errata: dict[str, audit.Erratum]) -> None:
    temporal = errata["conv-26#q0005"]  # locomo_0_qa5: "sunday" should be Saturday
    assert temporal.audit_id == "locomo_0_qa5" and temporal.gold_wrong
    assert audit.corrected_gold(temporal.qid, temporal.gold, errata) == temporal.correct_answer
    citation = errata["conv-26#q0001"]  # locomo_0_qa1: right answer, wrong turn cited
    assert citation.error_type == "WRONG_CITATION" and not citation.gold_wrong
    assert audit.corrected_gold(citation.qid, "2022", errata) == "2022"
    assert audit.corrected_gold("conv-26#q0000", "7 May 2023", errata) == "7 May 2023"


# Malformed files and the arithmetic on a hand-made set: no benchmark data needed.

TINY = audit.LocomoIds(("conv-a", "conv-b"), (("Q0?", "Q1?"), ("R0?",)))


def _judged(question_id: str = "locomo_1_qa0", question: str = "R0?", **changes: object) -> dict[str, object]:
    entry = {
        "question_id": question_id,
        "question": question,
        "golden_answer": "gold",
        "generated_answer": "answer",
        "llm_judgments": {"judgment_1": True, "judgment_2": False, "judgment_3": True},
        "category": "1",
    }
    return {**entry, **changes}


def _write(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "eval_results.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_judged_ids_map_to_ours(tmp_path: Path) -> None:
    path = _write(tmp_path, {"detailed_results": {"locomo_exp_user_1": [_judged()]}})
    [row] = audit.load_judged(path, TINY)
    assert (row.qid, row.audit_id, row.verdicts) == ("conv-b#q0000", "locomo_1_qa0", (True, False, True))


def _file_of(*entries: object, user: str = "locomo_exp_user_1", **top: object) -> dict[str, object]:
    return {**top, "detailed_results": {user: list(entries)}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not readable JSON"),
        ({"results": {}}, "no 'detailed_results'"),
        (_file_of(_judged(question="Other?")), "does not match LoCoMo"),
        (_file_of(_judged("locomo_1_qa7")), "has 1 questions"),
        (_file_of(_judged("locomo_5_qa0")), "has 2 conversations"),
        (_file_of(_judged("q0")), "not of the form"),
        (_file_of(_judged(), user="locomo_exp_user_0"), "is filed under"),
        (_file_of(_judged(llm_judgments={"judgment_1": "yes"})), "true/false"),
        (_file_of(_judged(llm_judgments={})), "true/false"),
        (_file_of({"question_id": "locomo_1_qa0"}), "not a judged answer"),
        (_file_of(_judged(), _judged()), "more than once"),
        (_file_of(_judged(), total_questions=2), "total_questions"),
    ],
)
def test_malformed_judged_file_is_a_data_error(tmp_path: Path, content: object, message: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(DataError, match=re.escape(message)) as error:
        audit.load_judged(path, TINY)
    assert str(path) in str(error.value)


def test_malformed_errata_is_a_data_error(tmp_path: Path) -> None:
    entry = {
        "question_id": "locomo_0_qa1",
        "question": "Q1?",
        "golden_answer": "x",
        "category": 1,
        "error_type": "TYPO",
        "cited_evidence": [],
        "correct_evidence": [],
        "reasoning": "",
        "correct_answer": "y",
    }
    path = _write(tmp_path, [entry])
    with pytest.raises(DataError, match="unknown error_type 'TYPO'"):
        audit.load_errata(path, TINY)
    path = _write(tmp_path, {"question_id": "locomo_0_qa1"})
    with pytest.raises(DataError, match="should be a list"):
        audit.load_errata(path, TINY)
    path = _write(tmp_path, [{**entry, "error_type": "HALLUCINATION"}])
    [erratum] = audit.load_errata(path, TINY).values()
    assert erratum.qid == "conv-a#q0001" and erratum.gold_wrong and erratum.category == "1"


def test_majority_mean_and_single_runs_differ_as_defined() -> None:
    def row(qid: str, category: str, *verdicts: bool) -> audit.JudgedAnswer:
        return audit.JudgedAnswer(qid, qid, category, "q", "g", "a", verdicts)

    rows = [
        row("a", "1", True, True, False),
        row("b", "1", False, False, True),
        row("c", "2", True, True, True),
    ]
    assert audit.accuracy(rows, "majority") == {
        "1": audit.Rate(0.5, 2),
        "2": audit.Rate(1.0, 1),
        "all": audit.Rate(2 / 3, 3),
    }
    assert audit.accuracy(rows, "mean")["1"] == audit.Rate(0.5, 2)
    assert audit.accuracy(rows, "mean")["all"].value == pytest.approx(6 / 9)
    assert audit.accuracy(rows, "run:3")["all"] == audit.Rate(2 / 3, 3)
    for how in ("median", "run:0", "run:4"):
        with pytest.raises(ValueError):
            audit.accuracy(rows, how)
