"""What a benchmark is to the harness: one class per benchmark, one module each.

A benchmark module under :mod:`harness.benchmarks` owns everything that
differs between benchmarks, so the stages, the tables and
``scripts/reproduce.py`` never name one:

* its data files (paths relative to the data root, each pinned by SHA-256
  in ``manifests/data.json``) and how they become stores and questions;
* the preset family its presets come from (``<family>.u10`` ...);
* its answer template for each question, and its official prompt set;
* its judge requests, and the metrics of a judged answer;
* how its table aggregates (plain per-category means, or per conversation
  then across) and what the table says beside the numbers.

:class:`BenchmarkBase` holds the common answers (the plain answer prompt, no
judge, no alignment, plain means), so a benchmark writes only its
differences, in the spirit of mteb's task classes and lm-evaluation-harness's
task registry. A benchmark is registered by name in
:data:`harness.benchmarks.REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from harness.config import BenchmarkConfig
from harness.data import DataRoot
from harness.llm.judging import Request
from harness.pinned import PinnedFiles
from harness.prompts import PromptError, PromptSet, Template
from harness.runs import StageOrderError
from muster_exact.verify.corpora import BenchmarkStore, Question

Judged = dict[str, Any]  # a question, or a saved judged line (question, gold, category, answer...)
Verdicts = dict[str, list[float | None]]  # slot -> the judge's verdict per run
Metrics = dict[str, float | None]


class Benchmark(Protocol):
    name: str
    preset_family: str  # its presets are <family>.u10, .u20, .u40
    reproduced: bool  # part of `make reproduce` (its context hashes are pinned)
    clustered: bool  # a table's category value: per conversation, then across conversations
    cpu_replay: str | None  # the preset of the paper's CPU replay on this benchmark, if it has one

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]: ...

    def answer_template(self, prompts: PromptSet, question: Question) -> tuple[Template, dict[str, str]]: ...

    def official_prompts(self, pinned: PinnedFiles) -> PromptSet: ...

    def judge_requests(
        self, question: Judged, answer: str, corrected: str | None = None
    ) -> list[Request]: ...

    def events_to_align(self, question: Judged, answer: str) -> list[str] | None: ...

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics: ...

    def question_metrics(self, judged: Judged, official_quirks: bool) -> Metrics: ...

    def corrected_golds(self, data: DataRoot) -> dict[str, str]: ...

    def table_note(self, official_quirks: bool) -> str: ...


class BenchmarkBase:
    """The common answers; a benchmark subclasses this and overrides what it does its own way."""

    name = ""
    preset_family = ""
    reproduced = False
    clustered = False
    cpu_replay: str | None = None

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
        raise NotImplementedError

    def peer_fields(self, data: DataRoot, store: BenchmarkStore) -> dict[str, dict[str, Any]]:
        """What a peer is told of each record beyond its text (``speaker``, ``time``, ``group``,
        ``index``), by record id (:mod:`harness.systems.external`); nothing unless the benchmark
        knows it."""
        return {}

    def answer_template(self, prompts: PromptSet, question: Question) -> tuple[Template, dict[str, str]]:
        """The plain answer prompt, with the question."""
        return prompts.get("answer"), {"question": question.text}

    def official_prompts(self, pinned: PinnedFiles) -> PromptSet:
        raise PromptError(f"no official prompts for benchmark {self.name!r}")

    def judge_requests(self, question: Judged, answer: str, corrected: str | None = None) -> list[Request]:
        """No judge: the benchmark is scored by its lexical metrics alone."""
        return []

    def events_to_align(self, question: Judged, answer: str) -> list[str] | None:
        """The answer's events to align with the question's reference order (None: not scored so)."""
        return None

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics:
        raise NotImplementedError

    def question_metrics(self, judged: Judged, official_quirks: bool) -> Metrics:
        """Every metric of one judged question, from its saved line alone.

        A question the reader failed (no answer) scores 0 everywhere: a failure
        counts against the system, never out of the table.
        """
        answer = judged.get("answer")
        failed = answer is None
        verdicts: Verdicts = judged.get("verdicts") or {}
        if failed:  # nothing was judged: every verdict the answer would have had is a 0
            question = {
                "question": judged.get("question", ""),
                "gold": list(judged["gold"]),
                "category": judged["category"],
                "rubric": judged.get("rubric") or [],
            }
            needed = self.judge_requests(question, "", judged.get("gold_corrected"))
            verdicts = {request.slot: [0.0] for request in needed}
        metrics = self.answer_metrics(judged, answer or "", verdicts, official_quirks)
        if failed:
            metrics = {name: 0.0 if value is not None else None for name, value in metrics.items()}
        return metrics

    def corrected_golds(self, data: DataRoot) -> dict[str, str]:
        """qid -> the corrected gold of each question whose gold an audit found wrong."""
        raise StageOrderError(f"judge.errata: benchmark {self.name} has no errata")

    def table_note(self, official_quirks: bool) -> str:
        """Text the judged table prints between its title and its numbers."""
        return ""
