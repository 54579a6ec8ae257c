"""LoCoMo (snap-research/LoCoMo): 10 conversations, 1,986 questions, one record per turn."""

from __future__ import annotations

from collections.abc import Iterator

from harness.config import BenchmarkConfig
from harness.data import DataRoot
from muster_exact.corpora import Store, locomo_stores

FILE = "locomo/locomo10.json"


class LoCoMo:
    name = "locomo"

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[Store]:
        return locomo_stores(data.path(FILE))
