"""Judging, benchmark by benchmark: the LLM requests, and the metrics from what was saved.

Two halves, kept apart so scores can be recomputed offline:

* a benchmark's :meth:`~harness.benchmark.Benchmark.judge_requests` says which
  judge calls a question needs (each benchmark module under
  :mod:`harness.benchmarks` states its own rule). Their raw replies are
  saved in ``judgments.jsonl``.
* a benchmark's :meth:`~harness.benchmark.BenchmarkBase.question_metrics`
  turns one saved answer and its saved judgments into numbers, through its
  :meth:`~harness.benchmark.Benchmark.answer_metrics`. It needs no network
  and no model: ``stage=rescore`` calls only this.

What every benchmark shares lives here: the request, reading a verdict from
a judge's reply, majority and mean over the judge's runs, and the rule that
a failed answer scores 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Request:
    """One judge call: which template, with what values; ``slot`` names where its verdict goes."""

    slot: str  # "verdict", "verdict_corrected", "rubric:<i>"
    template: str
    values: dict[str, str]


def yes_no_request(question: dict[str, Any], answer: str) -> Request:
    """One yes/no verdict of ``answer`` against the question's first gold answer."""
    golds = question["gold"]
    values = {"question": question["question"], "answer": answer, "gold": golds[0] if golds else ""}
    return Request("verdict", "judge_yes_no", values)


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


def majority(verdicts: Sequence[float | None] | None) -> float | None:
    """1 when most of the judge's runs said correct (failed runs left out; all failed: no value)."""
    kept = [v for v in verdicts or [] if v is not None]
    return None if not kept else float(sum(kept) > len(kept) / 2)


# The metric a judge's verdicts make (with ``_mean``; LoCoMo's errata add ``_corrected``).
LLM_JUDGE = "llm_judge"


def verdict_metrics(name: str, verdicts: list[float | None]) -> dict[str, float | None]:
    """Majority and mean over the judge's runs (failed runs left out; all failed: no value)."""
    kept = [v for v in verdicts if v is not None]
    return {name: majority(kept), f"{name}_mean": statistics.fmean(kept) if kept else None}
