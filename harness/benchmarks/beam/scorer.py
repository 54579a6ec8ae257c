"""BEAM scores from judged rubric nuggets, aggregated as the benchmark's own code does.

Facts read for mohammadtavakoli78/BEAM at b2a3ee8ba12d68f83143dda191097dc3e028ddd3
(``src/evaluation/compute_metrics.py``, ``run_evaluation.py``,
``report_results.py``). The index here holds those files only through a
fork (suhas1999/beam-64k-hybrid@4ef4a40, whose ``run_evaluation.py`` and
``report_results.py`` match the description in ``shared/SCORERS.md``, and
whose ``compute_metrics.py`` already replaced upstream's ``int`` by
``float``); the ``int`` truncation is taken from ``shared/SCORERS.md`` and
two independent third-party audits that quote upstream's line numbers.
Our own code, written from those facts.

* A question's judge score is the sum of its nugget scores (the judge gives
  1, 0.5 or 0 per rubric item) divided by the number of nuggets.
* Upstream quirk 1: nine of the ten ability evaluators add
  ``int(score)``, so a 0.5 counts as 0; event_ordering adds ``float(score)``.
* Upstream quirk 2: the final report (``report_results.py``) uses, for
  event_ordering, the rank score ``tau_norm`` instead of the judge score.
* Aggregation: within one conversation, the mean per ability over its
  questions; then, per ability, the mean over conversations. The report is
  a per-ability table; it has no overall column (:func:`overall` is ours).
* ``tau_norm`` (``event_ordering_score``): the answer is split on ``"\\n"``;
  each answer line greedily claims the first unclaimed rubric item that the
  judge calls the same event and is replaced by that item's text (lines
  matching nothing stay as they are); see :func:`canonicalise`. Then both
  lists are ranked over their union (rubric items first, then answer-only
  lines, first appearance order): an item's rank is its 1-based position in
  the list (a repeated item keeps its last position), and an item missing
  from a list gets the shared rank ``len(union) + 1``, a tie at the bottom.
  Kendall's tau-b between the two rank vectors (scipy ``variant="b"``) is
  mapped to [0, 1] by ``(tau + 1) / 2``. Upstream also computes set
  precision / recall / F1 of the lists and ``final_score = tau_norm * F1``,
  but the report reads ``tau_norm`` alone.
* When tau-b is undefined (every item in one place: a one-item union),
  scipy returns NaN and upstream's ``is not None`` guard lets it through;
  :func:`tau_norm` returns NaN there too unless told otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
EVENT_ORDERING = "event_ordering"


def _check_ability(ability: str) -> None:
    if ability not in ABILITIES:
        raise ValueError(f"unknown BEAM ability {ability!r}; expected one of {', '.join(ABILITIES)}")


def question_score(nugget_scores: Sequence[float], ability: str, official_quirks: bool = False) -> float:
    """Mean of the nugget scores; ``official_quirks`` counts a 0.5 as 0 (except in event_ordering)."""
    _check_ability(ability)
    if not nugget_scores:
        raise ValueError("a BEAM question needs at least one judged rubric nugget")
    if official_quirks and ability != EVENT_ORDERING:
        # Upstream adds int(score): truncation toward zero turns every 0.5 into 0.
        nugget_scores = [int(value) for value in nugget_scores]
    return sum(nugget_scores) / len(nugget_scores)


# ---------------------------------------------------------------- event ordering


def response_items(response: str) -> list[str]:
    """The answer's lines, exactly as upstream splits them (blank lines included)."""
    return response.split("\n")


def canonicalise(
    predicted: Sequence[str], gold: Sequence[str], same: Callable[[str, str], bool]
) -> list[str]:
    """Replace each predicted item by the first unclaimed gold item ``same(gold_item, item)`` accepts."""
    claimed: set[int] = set()
    canonical = []
    for item in predicted:
        match = next((i for i, g in enumerate(gold) if i not in claimed and same(g, item)), None)
        if match is None:
            canonical.append(item)
        else:
            claimed.add(match)
            canonical.append(gold[match])
    return canonical


def rank_vectors(predicted: Sequence[str], gold: Sequence[str]) -> tuple[list[int], list[int]]:
    """Gold and predicted ranks over the union of items; a missing item ties at ``len(union) + 1``."""
    union = list(dict.fromkeys([*gold, *predicted]))
    missing = len(union) + 1

    def ranks(items: Sequence[str]) -> list[int]:
        position = {item: index for index, item in enumerate(items, start=1)}
        return [position.get(item, missing) for item in union]

    return ranks(gold), ranks(predicted)


def kendall_tau_b(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Kendall's tau-b; None when undefined (fewer than two items, or one side all tied)."""
    concordant = discordant = tied_first_only = tied_second_only = 0
    for i in range(len(first)):
        for j in range(i + 1, len(first)):
            gap_first = first[i] - first[j]
            gap_second = second[i] - second[j]
            if gap_first == 0 and gap_second == 0:
                continue  # tied in both: counts nowhere
            if gap_first == 0:
                tied_first_only += 1
            elif gap_second == 0:
                tied_second_only += 1
            elif (gap_first > 0) == (gap_second > 0):
                concordant += 1
            else:
                discordant += 1
    untied_first = concordant + discordant + tied_second_only
    untied_second = concordant + discordant + tied_first_only
    if untied_first == 0 or untied_second == 0:
        return None
    return (concordant - discordant) / math.sqrt(untied_first * untied_second)


def tau_norm(predicted: Sequence[str], gold: Sequence[str], *, undefined: float = math.nan) -> float:
    """BEAM's rank score: ``(tau_b + 1) / 2`` over the rank vectors (``undefined`` when tau-b is)."""
    tau = kendall_tau_b(*rank_vectors(predicted, gold))
    return undefined if tau is None else (tau + 1) / 2


def event_ordering_scores(predicted: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """Everything upstream's ``event_ordering_score`` returns, from canonicalised lists."""
    gold_set, predicted_set = set(gold), set(predicted)
    true_positive = len(gold_set & predicted_set)
    false_positive = sum(item not in gold_set for item in predicted)
    false_negative = sum(item not in predicted_set for item in gold)
    precision = true_positive / (true_positive + false_positive) if true_positive + false_positive else 0.0
    recall = true_positive / (true_positive + false_negative) if true_positive + false_negative else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    rank_score = tau_norm(predicted, gold)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tau_norm": rank_score,
        "final_score": rank_score * f1,
    }


# ---------------------------------------------------------------- aggregation


@dataclass(frozen=True)
class ScoredQuestion:
    """One judged BEAM question: its judge score and, for event_ordering, its rank score."""

    conversation: str
    ability: str
    score: float
    tau_norm: float | None = None


def _as_scored(row: ScoredQuestion | Mapping[str, Any]) -> ScoredQuestion:
    if isinstance(row, ScoredQuestion):
        return row
    return ScoredQuestion(
        conversation=str(row["conversation"]),
        ability=str(row["ability"]),
        score=float(row["score"]),
        tau_norm=None if row.get("tau_norm") is None else float(row["tau_norm"]),
    )


def _reported_value(row: ScoredQuestion, official_quirks: bool) -> float:
    if official_quirks and row.ability == EVENT_ORDERING:
        if row.tau_norm is None:
            raise ValueError(f"{row.conversation}: event_ordering needs tau_norm under official_quirks")
        return row.tau_norm
    return row.score


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def aggregate(
    rows: Iterable[ScoredQuestion | Mapping[str, Any]], official_quirks: bool = False
) -> dict[str, float]:
    """Per ability: the mean over conversations of each conversation's mean over its questions.

    ``rows`` carry ``conversation``, ``ability``, ``score`` (the question
    score, see :func:`question_score`) and, for event_ordering under
    ``official_quirks``, ``tau_norm``. Abilities come back in upstream's
    column order; an ability no row has is left out.
    """
    grouped: dict[str, dict[str, list[float]]] = {}
    for raw in rows:
        row = _as_scored(raw)
        _check_ability(row.ability)
        by_conversation = grouped.setdefault(row.ability, {})
        by_conversation.setdefault(row.conversation, []).append(_reported_value(row, official_quirks))
    return {
        ability: _mean([_mean(scores) for scores in grouped[ability].values()])
        for ability in ABILITIES
        if ability in grouped
    }


def overall(ability_scores: Mapping[str, float]) -> float:
    """Plain mean over the abilities given (our summary; upstream's report has none)."""
    if not ability_scores:
        raise ValueError("no ability scores to average")
    return _mean(list(ability_scores.values()))
