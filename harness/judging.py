"""How each benchmark judges an answer: the LLM requests, and the metrics from what was saved.

Two halves, kept apart so scores can be recomputed offline:

* :func:`judge_requests` says which judge calls a question needs (LoCoMo:
  one CORRECT/WRONG verdict per run, none for adversarial questions;
  LoCoMo-Refined: the strict verdict; MemoryAgentBench: a verdict only for
  the sources the benchmark judges with an LLM; BEAM: one 1 / 0.5 / 0 score
  per rubric item). Their raw replies are saved in ``judgments.jsonl``.
* :func:`question_metrics` turns one saved answer and its saved judgments
  into numbers, with the benchmark's own lexical scorers and the verdicts.
  It needs no network and no model: ``stage=rescore`` calls only this.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any

from harness.scorers import beam as beam_scorer
from harness.scorers import locomo as locomo_scorer
from harness.scorers import locomo_refined as refined_scorer
from harness.scorers import mab as mab_scorer

# MemoryAgentBench sources judged by an LLM (LongMemEval questions); the rest are lexical only.
MAB_LLM_SOURCES = ("longmemeval",)


@dataclass(frozen=True)
class Request:
    """One judge call: which template, with what values; ``slot`` names where its verdict goes."""

    slot: str  # "verdict", "verdict_corrected", "rubric:<i>"
    template: str
    values: dict[str, str]


def judge_requests(
    benchmark: str, question: dict[str, Any], answer: str, corrected_gold: str | None = None
) -> list[Request]:
    """The judge calls one answered question needs (before repeating them ``runs`` times)."""
    text, golds, category = question["question"], question["gold"], question["category"]
    base = {"question": text, "answer": answer}
    if benchmark == "locomo":
        if category == "5":  # adversarial: scored by its phrase check, never by the judge
            return []
        requests = [Request("verdict", "judge", {**base, "gold": golds[0] if golds else ""})]
        if corrected_gold is not None:
            requests.append(Request("verdict_corrected", "judge", {**base, "gold": corrected_gold}))
        return requests
    if benchmark == "locomo_refined":
        return [
            Request("verdict", "judge_strict", {**base, "gold": json.dumps(list(golds), ensure_ascii=False)})
        ]
    if benchmark == "mab":
        if not any(category.startswith(prefix) for prefix in MAB_LLM_SOURCES):
            return []
        return [Request("verdict", "judge_yes_no", {**base, "gold": golds[0] if golds else ""})]
    if benchmark == "beam":
        return [
            Request(f"rubric:{i}", "judge_rubric", {**base, "rubric_item": item})
            for i, item in enumerate(question.get("rubric") or [])
        ]
    raise ValueError(f"no judge rule for benchmark {benchmark!r}")


EVENT_ORDERING = "event_ordering"


def needs_alignment(benchmark: str, question: dict[str, Any]) -> bool:
    """BEAM's event-ordering questions are also scored by the order of the events the answer lists."""
    return benchmark == "beam" and question["category"] == EVENT_ORDERING and bool(question.get("rubric"))


def answer_lines(answer: str) -> list[str]:
    """The answer's events as the official scorer reads them: one per line, as written."""
    return beam_scorer.response_items(answer)


def aligned_order(lines: list[str], matches: list[int | None], rubric: list[str]) -> list[str]:
    """Each line replaced by the reference event it was matched to (unmatched lines stay as written)."""
    return [rubric[m] if m is not None else line for line, m in zip(lines, matches, strict=True)]


def read_verdict(slot: str, reply: dict[str, Any]) -> float | None:
    """A verdict from a parsed JSON reply: 1/0 from a CORRECT/WRONG label (or yes/no), a rubric
    item's 1 / 0.5 / 0 from ``score``; None when the reply does not say."""
    if slot.startswith("rubric:"):
        value = reply.get("score")
        try:
            score = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return score if score in (0.0, 0.5, 1.0) else None
    label = str(reply.get("label", reply.get("answer", ""))).strip().upper()
    if label in ("CORRECT", "YES", "TRUE"):
        return 1.0
    if label in ("WRONG", "INCORRECT", "NO", "FALSE"):
        return 0.0
    return None


def majority(verdicts: list[float | None] | None) -> float | None:
    """1 when most of the judge's runs said correct (failed runs left out; all failed: no value)."""
    kept = [v for v in verdicts or [] if v is not None]
    return None if not kept else float(sum(kept) > len(kept) / 2)


def _verdict_metrics(name: str, verdicts: list[float | None]) -> dict[str, float | None]:
    """Majority and mean over the judge's runs (failed runs left out; all failed: no value)."""
    kept = [v for v in verdicts if v is not None]
    return {name: majority(kept), f"{name}_mean": statistics.fmean(kept) if kept else None}


def question_metrics(
    benchmark: str, judged: dict[str, Any], official_quirks: bool
) -> dict[str, float | None]:
    """Every metric of one judged question, from its saved line alone.

    A question the reader failed (no answer) scores 0 everywhere: a failure
    counts against the system, never out of the table.
    """
    answer = judged.get("answer")
    failed = answer is None
    answer = answer or ""
    golds: list[str] = list(judged["gold"])
    category = judged["category"]
    verdicts: dict[str, list[float | None]] = judged.get("verdicts") or {}
    if failed:  # nothing was judged: every verdict the answer would have had is a 0
        question = {"question": judged.get("question", ""), "gold": golds, "category": category}
        question["rubric"] = judged.get("rubric") or []
        needed = judge_requests(benchmark, question, "", judged.get("gold_corrected"))
        verdicts = {request.slot: [0.0] for request in needed}
    metrics: dict[str, float | None] = {}
    if benchmark == "locomo":
        metrics["f1"] = locomo_scorer.score(answer, golds[0] if golds else "", category)
        if judged.get("gold_corrected") is not None:
            metrics["f1_corrected"] = locomo_scorer.score(answer, judged["gold_corrected"], category)
        if category != "5":
            metrics.update(_verdict_metrics("llm_judge", verdicts.get("verdict", [])))
            if "verdict_corrected" in verdicts:
                metrics.update(_verdict_metrics("llm_judge_corrected", verdicts["verdict_corrected"]))
            elif judged.get("errata_checked"):  # not flagged: the corrected figure is the original one
                metrics.update(_verdict_metrics("llm_judge_corrected", verdicts.get("verdict", [])))
    elif benchmark == "locomo_refined":
        metrics.update(refined_scorer.scores(answer, golds))
        metrics.update(_verdict_metrics("llm_judge", verdicts.get("verdict", [])))
    elif benchmark == "mab":
        metrics.update(mab_scorer.scores(answer, golds, category))
        if "verdict" in verdicts:
            metrics.update(_verdict_metrics("llm_judge", verdicts["verdict"]))
    elif benchmark == "beam":
        metrics.update(_beam_metrics(judged, verdicts, official_quirks))
    if failed:
        metrics = {name: 0.0 if value is not None else None for name, value in metrics.items()}
    return metrics


def _beam_metrics(
    judged: dict[str, Any], verdicts: dict[str, list[float | None]], official_quirks: bool
) -> dict[str, float | None]:
    """BEAM: the mean of the rubric items' scores (each item's first judge run); with the official
    quirks, the scorer's truncation as the official code has it."""
    ability = judged["category"]
    items = sorted(
        (slot for slot in verdicts if slot.startswith("rubric:")), key=lambda s: int(s.split(":")[1])
    )
    scores = [verdicts[slot][0] for slot in items]
    metrics: dict[str, float | None] = {"rubric": None, "rubric_official": None}
    if items and all(score is not None for score in scores):
        kept = [float(s) for s in scores if s is not None]
        metrics["rubric"] = beam_scorer.question_score(kept, ability, official_quirks=False)
        metrics["rubric_official"] = beam_scorer.question_score(kept, ability, official_quirks=True)
    if ability == EVENT_ORDERING and judged.get("alignment") is not None:
        rubric = list(judged.get("rubric") or [])
        order = aligned_order(answer_lines(judged.get("answer") or ""), judged["alignment"], rubric)
        tau = beam_scorer.tau_norm(order, rubric)
        metrics["tau_norm"] = None if math.isnan(tau) else tau
        # The official report ranks event ordering by its rank score, not by the judge's.
        metrics["rubric_official"] = metrics["tau_norm"]
    if not official_quirks:
        metrics["rubric_official"] = None
    return metrics
