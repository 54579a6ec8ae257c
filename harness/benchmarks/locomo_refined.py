"""LoCoMo-Refined (mem-eval-suite/LoCoMo_refined v1.0.0): LoCoMo's conversations, 1,382 refined questions."""

from __future__ import annotations

from collections.abc import Iterator

from harness.config import BenchmarkConfig
from harness.data import DataRoot
from muster_exact.corpora import Store, locomo_refined_stores

RAW = "locomo_refined/raw/locomo_refined.json"
QUESTIONS = "locomo_refined/public/questions.jsonl"


class LoCoMoRefined:
    name = "locomo_refined"

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[Store]:
        return locomo_refined_stores(data.path(RAW), data.path(QUESTIONS))
