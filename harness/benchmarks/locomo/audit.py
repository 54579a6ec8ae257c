"""Published LoCoMo judge outputs and errata (dial481/locomo-audit), read offline.

Three kinds of file, all read in place from the data root:

* judged answers (``fc-baseline/<run>/eval_results.json``): one answer per
  question with several LLM-judge verdicts each (three in the published runs);
* the judge-leniency set (``ap-baseline/v1|v2/ap_eval_results_scored.json``):
  the same shape, but every answer is deliberately wrong, so the share the
  judge accepts is its false-accept rate;
* the errata (``errata/locomo-audit_errors.json``): flagged questions with an
  error type and the audit's corrected answer.

The audit names questions ``locomo_K_qaN``: K is the conversation's position
in ``locomo10.json`` and N the index into that conversation's ``qa`` list over
ALL entries, category 5 included (in conv-30 some category-5 entries sit
between others, so counting only categories 1-4 lands on the wrong question).
Our name is ``f"{sample_id}#q{N:04d}"`` (``muster_exact.verify.corpora.locomo_questions``).
Every id is checked against LoCoMo's question text when it is read.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_exact.core.errors import DataError
from muster_exact.verify.corpora import LOCOMO

# The benchmark whose judge is audited, and the files (under the data root) the audit reads.
BENCHMARK = "locomo"
LOCOMO_FILE = str(LOCOMO)
ERRATA_FILE = "locomo/errata/locomo-audit_errors.json"
OUTPUTS = "locomo/outputs"
PUBLISHED = {
    **{
        f"fc-{run}": f"{OUTPUTS}/locomo-audit_fc-baseline/{run}/eval_results.json"
        for run in ("gpt-4o-mini-cot", "gpt-4o-mini-memos", "gpt-4.1-mini-cot", "gpt-4.1-mini-memos")
    },
    "ap-v1": f"{OUTPUTS}/locomo-audit_ap-baseline/v1/ap_eval_results_scored.json",
    "ap-v2": f"{OUTPUTS}/locomo-audit_ap-baseline/v2/ap_eval_results_scored.json",
}

ALL = "all"
_AUDIT_ID = re.compile(r"locomo_(\d+)_qa(\d+)")
_USER_KEY = re.compile(r"locomo_exp_user_(\d+)")
_RUN = re.compile(r"run:(\d+)")

# Error types in the errata. Only a wrong citation leaves the gold answer right
# (its ``correct_answer`` repeats the gold, sometimes with a remark appended), so
# only it does not change a score; every other type says the gold is wrong.
CITATION_ONLY = frozenset({"WRONG_CITATION"})
GOLD_WRONG = frozenset({"HALLUCINATION", "TEMPORAL_ERROR", "ATTRIBUTION_ERROR", "AMBIGUOUS", "INCOMPLETE"})


@dataclass(frozen=True)
class JudgedAnswer:
    """One answer with the judge's verdicts, under our question id."""

    qid: str
    audit_id: str
    category: str
    question: str
    gold: str
    answer: str
    verdicts: tuple[bool, ...]


@dataclass(frozen=True)
class Rate:
    """A share of questions (accepted by the judge) and how many questions it is over."""

    value: float
    n: int


@dataclass(frozen=True)
class Erratum:
    """One flagged question; ``gold_wrong`` says whether it corrupts scores."""

    qid: str
    audit_id: str
    category: str
    question: str
    gold: str
    error_type: str
    gold_wrong: bool
    correct_answer: str
    cited_evidence: tuple[str, ...]
    correct_evidence: tuple[str, ...]
    reasoning: str


@dataclass(frozen=True)
class LocomoIds:
    """LoCoMo's sample ids and question texts (all ``qa`` entries), in file order."""

    sample_ids: tuple[str, ...]
    questions: tuple[tuple[str, ...], ...]

    def resolve(self, audit_id: str, question: str, where: str) -> str:
        """Our id for an audit id, after checking that the question text is LoCoMo's."""
        match = _AUDIT_ID.fullmatch(audit_id)
        if match is None:
            raise DataError(f"{where}: question id {audit_id!r} is not of the form locomo_K_qaN")
        conversation, index = int(match[1]), int(match[2])
        if conversation >= len(self.sample_ids):
            raise DataError(f"{where}: {audit_id}: LoCoMo has {len(self.sample_ids)} conversations")
        texts = self.questions[conversation]
        if index >= len(texts):
            raise DataError(f"{where}: {audit_id}: conversation {conversation} has {len(texts)} questions")
        if texts[index] != question:
            raise DataError(
                f"{where}: {audit_id} does not match LoCoMo: file has {question!r}, "
                f"LoCoMo {self.sample_ids[conversation]} qa[{index}] is {texts[index]!r}"
            )
        return f"{self.sample_ids[conversation]}#q{index:04d}"


def locomo_ids(locomo_path: Path) -> LocomoIds:
    """Read the id mapping's reference from ``locomo10.json``."""
    samples = _read_json(locomo_path)
    try:
        return LocomoIds(
            tuple(str(s["sample_id"]) for s in samples),
            tuple(tuple(str(qa["question"]) for qa in s["qa"]) for s in samples),
        )
    except (KeyError, TypeError) as exc:
        raise DataError(f"{locomo_path}: not LoCoMo's locomo10.json ({exc!r})") from None


def load_judged(path: Path, locomo: Path | LocomoIds) -> list[JudgedAnswer]:
    """Read a judged-answers file (fc-baseline or ap-baseline shape), ids mapped to ours."""
    ids = locomo if isinstance(locomo, LocomoIds) else locomo_ids(locomo)
    data = _read_json(path)
    details = data.get("detailed_results") if isinstance(data, dict) else None
    if not isinstance(details, dict):
        raise DataError(f"{path}: no 'detailed_results' object")
    rows: list[JudgedAnswer] = []
    for user, entries in details.items():
        if not isinstance(entries, list):
            raise DataError(f"{path}: detailed_results[{user!r}] is not a list")
        rows.extend(_judged_row(entry, user, ids, f"{path}: {user}") for entry in entries)
    _check_judged(rows, data, path)
    return rows


def _judged_row(entry: Any, user: str, ids: LocomoIds, where: str) -> JudgedAnswer:
    try:
        audit_id = str(entry["question_id"])
        judgments = entry["llm_judgments"]
        verdicts = tuple(judgments[key] for key in sorted(judgments, key=_judgment_number))
        row = JudgedAnswer(
            qid=ids.resolve(audit_id, str(entry["question"]), where),
            audit_id=audit_id,
            category=str(entry["category"]),
            question=str(entry["question"]),
            gold=str(entry["golden_answer"]),
            answer=str(entry["generated_answer"]),
            verdicts=verdicts,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise DataError(f"{where}: not a judged answer ({exc!r}): {str(entry)[:200]}") from None
    if not verdicts or not all(isinstance(v, bool) for v in verdicts):
        raise DataError(f"{where}: {audit_id}: llm_judgments must be one or more true/false verdicts")
    # The audit groups questions by conversation; a row under the wrong group
    # would mean the file was assembled differently from what we assume.
    user_match = _USER_KEY.fullmatch(user)
    if user_match is None or not audit_id.startswith(f"locomo_{user_match[1]}_"):
        raise DataError(f"{where}: {audit_id} is filed under {user!r}")
    return row


def _judgment_number(key: str) -> int:
    """``judgment_3`` -> 3, so that judgment_10 sorts after judgment_9."""
    prefix, _, number = key.rpartition("_")
    if prefix != "judgment" or not number.isdigit():
        raise ValueError(f"unexpected verdict key {key!r}")
    return int(number)


def _check_judged(rows: Sequence[JudgedAnswer], data: Mapping[str, Any], path: Path) -> None:
    if not rows:
        raise DataError(f"{path}: no judged answers")
    if len({r.qid for r in rows}) != len(rows):
        raise DataError(f"{path}: a question appears more than once")
    # "mean of run accuracies" only equals "mean of verdict shares" when every
    # question was judged the same number of times.
    if len({len(r.verdicts) for r in rows}) != 1:
        raise DataError(f"{path}: questions have different numbers of verdicts")
    total = data.get("total_questions")
    if total is not None and total != len(rows):
        raise DataError(f"{path}: total_questions is {total} but there are {len(rows)} answers")


def accuracy(rows: Iterable[JudgedAnswer], how: str = "majority") -> dict[str, Rate]:
    """Share of answers the judge accepted, per category and overall (``"all"``).

    ``how``: ``"majority"`` (a strict majority of verdicts, 2 of 3), ``"mean"``
    (the mean over runs of each run's accuracy, as the audit reports it) or
    ``"run:K"`` (run K alone, 1-based like ``judgment_K``).
    """
    score = _scorer(how)
    groups: dict[str, list[JudgedAnswer]] = {}
    for row in rows:
        groups.setdefault(row.category, []).append(row)
    if not groups:
        raise ValueError("no judged answers to score")
    everything = [row for group in groups.values() for row in group]
    table = {category: score(groups[category]) for category in sorted(groups)}
    table[ALL] = score(everything)
    return table


def false_accept_rate(wrong_answers: Iterable[JudgedAnswer], how: str = "mean") -> dict[str, Rate]:
    """Share of deliberately wrong answers the judge accepted (judge leniency).

    The arithmetic is :func:`accuracy`'s; the name says what the number means
    when every answer is known to be wrong.
    """
    return accuracy(wrong_answers, how)


def _scorer(how: str) -> Callable[[Sequence[JudgedAnswer]], Rate]:
    if how == "majority":
        return _majority
    if how == "mean":
        return _mean_of_runs
    match = _RUN.fullmatch(how)
    if match and int(match[1]) >= 1:
        run = int(match[1]) - 1
        return lambda rows: _single_run(rows, run)
    raise ValueError(f"how must be 'majority', 'mean' or 'run:K' (K >= 1), not {how!r}")


def _majority(rows: Sequence[JudgedAnswer]) -> Rate:
    accepted = sum(2 * sum(r.verdicts) > len(r.verdicts) for r in rows)
    return Rate(accepted / len(rows), len(rows))


def _single_run(rows: Sequence[JudgedAnswer], run: int) -> Rate:
    if any(run >= len(r.verdicts) for r in rows):
        raise ValueError(f"run:{run + 1} asked for, but some answers have fewer verdicts")
    return Rate(sum(r.verdicts[run] for r in rows) / len(rows), len(rows))


def _mean_of_runs(rows: Sequence[JudgedAnswer]) -> Rate:
    # The mean of the runs' accuracies, taken with statistics.mean (exact, then
    # rounded once): this reproduces the audit's metadata bit for bit, where a
    # plain sum()/3 or the mean of per-question shares differ in the last bits.
    runs = min(len(r.verdicts) for r in rows)
    return Rate(statistics.mean(_single_run(rows, k).value for k in range(runs)), len(rows))


def load_errata(path: Path, locomo_path: Path | LocomoIds) -> dict[str, Erratum]:
    """Read the audit's errata, keyed by our question id."""
    ids = locomo_path if isinstance(locomo_path, LocomoIds) else locomo_ids(locomo_path)
    data = _read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: errata should be a list of flagged questions")
    errata: dict[str, Erratum] = {}
    for number, entry in enumerate(data):
        erratum = _erratum(entry, ids, f"{path}: entry {number}")
        if erratum.qid in errata:
            raise DataError(f"{path}: {erratum.audit_id} is flagged twice")
        errata[erratum.qid] = erratum
    return errata


def _erratum(entry: Any, ids: LocomoIds, where: str) -> Erratum:
    try:
        audit_id = str(entry["question_id"])
        error_type = str(entry["error_type"])
        erratum = Erratum(
            qid=ids.resolve(audit_id, str(entry["question"]), where),
            audit_id=audit_id,
            category=str(entry["category"]),
            question=str(entry["question"]),
            gold=str(entry["golden_answer"]),
            error_type=error_type,
            gold_wrong=error_type in GOLD_WRONG,
            correct_answer=str(entry["correct_answer"]),
            cited_evidence=tuple(str(e) for e in entry["cited_evidence"]),
            correct_evidence=tuple(str(e) for e in entry["correct_evidence"]),
            reasoning=str(entry["reasoning"]),
        )
    except (KeyError, TypeError) as exc:
        raise DataError(f"{where}: not an erratum ({exc!r})") from None
    # An unknown type must not be silently counted as harmless (or harmful).
    if error_type not in GOLD_WRONG | CITATION_ONLY:
        raise DataError(f"{where}: {audit_id}: unknown error_type {error_type!r}")
    return erratum


def corrected_gold(qid: str, gold: str, errata: Mapping[str, Erratum]) -> str:
    """The audit's answer where it says the gold is wrong, else the gold unchanged.

    A wrong citation keeps the original gold: its ``correct_answer`` is the same
    answer, at times with a remark such as "(answer is correct, citation is wrong)".
    """
    erratum = errata.get(qid)
    return erratum.correct_answer if erratum is not None and erratum.gold_wrong else gold


def ceiling(errata: Mapping[str, Erratum], n: int = 1540) -> float:
    """Best accuracy a perfect system can get under the original golds, over n questions.

    A perfect system gives the right answer, which the judge marks wrong
    wherever the gold itself is wrong.
    """
    wrong = sum(e.gold_wrong for e in errata.values())
    if n <= 0 or wrong > n:
        raise ValueError(f"{wrong} wrong golds cannot be among {n} questions")
    return (n - wrong) / n


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from None
