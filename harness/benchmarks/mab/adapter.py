"""MemoryAgentBench (HUST-AI-HYZ/MemoryAgentBench).

Conflict_Resolution (the 8 FactConsolidation stores) is read from the JSON
export in the data root. The other splits (Accurate_Retrieval,
Test_Time_Learning, Long_Range_Understanding) exist only on the dataset hub:
they are read with ``datasets`` from the split's parquet file, taken from a
local mirror (``memoryagentbench/hf/data/<split>-00000-of-00001.parquet``
under the data root) or downloaded once at the pinned revision, and checked
against the SHA-256 pinned in ``manifests/data.json`` either way.

Answered with the official template of the source's dataset (or the plain
prompt); scored by MemoryAgentBench's lexical metrics, routed by source;
only the sources the benchmark judges with an LLM (LongMemEval's) get a
yes/no verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.benchmark import BenchmarkBase, Judged, Metrics, Verdicts
from harness.benchmarks.mab import scorer
from harness.benchmarks.mab.prompts import official as read_official_prompts
from harness.config import BenchmarkConfig
from harness.data import DataRoot, sha256_file
from harness.llm.judging import LLM_JUDGE, Request, verdict_metrics, yes_no_request
from harness.pinned import PinnedFiles
from harness.prompts import PromptSet, Template
from muster_exact.core.errors import DataError
from muster_exact.text.records import from_text
from muster_exact.verify.corpora import MAB_CONFLICT, BenchmarkStore, Question, mab_questions, mab_stores

CONFLICT_JSON = str(MAB_CONFLICT)
SPLITS = ("Accurate_Retrieval", "Test_Time_Learning", "Long_Range_Understanding", "Conflict_Resolution")


def parquet_name(split: str) -> str:
    return f"data/{split}-00000-of-00001.parquet"


class MemoryAgentBench(BenchmarkBase):
    name = "mab"
    preset_family = "mab"
    reproduced = True

    def answer_template(self, prompts: PromptSet, question: Question) -> tuple[Template, dict[str, str]]:
        if dataset := prompts.dataset(question.category):
            return prompts.get(f"answer:{dataset}"), {"question": question.text}
        return super().answer_template(prompts, question)

    def official_prompts(self, pinned: PinnedFiles) -> PromptSet:
        return read_official_prompts(pinned)

    def judge_requests(self, question: Judged, answer: str, corrected: str | None = None) -> list[Request]:
        if scorer.llm_judge(question["category"]) != "yes_no":
            return []  # lexical metrics only; InfBench's summary judge is not asked (scorer.LLM_JUDGED)
        return [yes_no_request(question, answer)]

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics:
        metrics: dict[str, float | None] = dict(
            scorer.scores(answer, list(judged["gold"]), judged["category"])
        )
        if "verdict" in verdicts:
            metrics.update(verdict_metrics(LLM_JUDGE, verdicts["verdict"]))
        return metrics

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
        for split in config.splits or ["Conflict_Resolution"]:
            if split not in SPLITS:
                raise DataError(f"unknown MemoryAgentBench split {split!r}; choose from {', '.join(SPLITS)}")
            if split == "Conflict_Resolution" and data.exists(CONFLICT_JSON):
                yield from mab_stores(data.path(CONFLICT_JSON))
            else:
                yield from self._parquet_stores(data, split)

    def _parquet_stores(self, data: DataRoot, split: str) -> Iterator[BenchmarkStore]:
        path = self._parquet(data, split)
        import datasets

        rows = datasets.Dataset.from_parquet(str(path))
        for index, row in enumerate(rows):
            yield self._store(row, split, index)

    @staticmethod
    def _store(row: dict[str, Any], split: str, index: int) -> BenchmarkStore:
        metadata = row.get("metadata") or {}
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        name = str(metadata.get("source") or f"{split}_{index}")
        row = {**row, "metadata": metadata}
        return BenchmarkStore(
            "memoryagentbench", name, from_text(row["context"]), tuple(mab_questions(row, name))
        )

    @staticmethod
    def _parquet(data: DataRoot, split: str) -> Path:
        hub = data.manifest.get("memoryagentbench_hub", {})
        expected = hub.get("files", {}).get(split)
        if expected is None:
            raise DataError(f"no pinned SHA-256 for MemoryAgentBench split {split} in manifests/data.json")
        local = data.root / "memoryagentbench" / "hf" / parquet_name(split)
        if local.is_file():
            path = local
        else:
            try:
                from huggingface_hub import hf_hub_download

                path = Path(
                    hf_hub_download(
                        repo_id=hub["repo"],
                        filename=parquet_name(split),
                        repo_type="dataset",
                        revision=hub["revision"],
                    )
                )
            except Exception as exc:  # any hub failure means: not available here
                raise DataError(
                    f"MemoryAgentBench split {split} is not in {local.parent} and cannot be downloaded "
                    f"({type(exc).__name__}); put {parquet_name(split)} (SHA-256 {expected}) there"
                ) from None
        actual = sha256_file(path)
        if actual != expected:
            raise DataError(f"{path} has SHA-256 {actual}, expected {expected} (revision {hub['revision']})")
        data.checked[f"memoryagentbench/hf/{parquet_name(split)}"] = actual
        return path


MAB = MemoryAgentBench()
