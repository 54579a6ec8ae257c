"""LoCoMo-Refined (mem-eval-suite/LoCoMo_refined v1.0.0): LoCoMo's conversations, 1,382 refined questions.

Answered with LoCoMo's plain prompt; judged by the strict verdict against
every gold; token F1 and BLEU-1, best over the golds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.benchmark import BenchmarkBase, Judged, Metrics, Verdicts
from harness.benchmarks.locomo.adapter import session_fields
from harness.benchmarks.locomo_refined import scorer
from harness.benchmarks.locomo_refined.prompts import official as read_official_prompts
from harness.config import BenchmarkConfig
from harness.data import DataRoot
from harness.llm.judging import LLM_JUDGE, Request, verdict_metrics
from harness.pinned import PinnedFiles
from harness.prompts import PromptSet
from muster_exact.verify.corpora import (
    LOCOMO_REFINED_QUESTIONS,
    LOCOMO_REFINED_RAW,
    BenchmarkStore,
    locomo_refined_stores,
)

RAW = str(LOCOMO_REFINED_RAW)
QUESTIONS = str(LOCOMO_REFINED_QUESTIONS)


class LoCoMoRefined(BenchmarkBase):
    name = "locomo_refined"
    preset_family = "locomo"
    reproduced = True

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
        return locomo_refined_stores(data.path(RAW), data.path(QUESTIONS))

    def peer_fields(self, data: DataRoot, store: BenchmarkStore) -> dict[str, dict[str, Any]]:
        return session_fields(data.path(RAW), store.name)

    def official_prompts(self, pinned: PinnedFiles) -> PromptSet:
        return read_official_prompts(pinned)

    def judge_requests(self, question: Judged, answer: str, corrected: str | None = None) -> list[Request]:
        golds = json.dumps(list(question["gold"]), ensure_ascii=False)
        return [
            Request(
                "verdict", "judge_strict", {"question": question["question"], "answer": answer, "gold": golds}
            )
        ]

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics:
        metrics: dict[str, float | None] = dict(scorer.scores(answer, list(judged["gold"])))
        metrics.update(verdict_metrics(LLM_JUDGE, verdicts.get("verdict", [])))
        return metrics


LOCOMO_REFINED = LoCoMoRefined()
