"""LoCoMo (snap-research/LoCoMo): 10 conversations, 1,986 questions, one record per turn.

Answers: the temporal prompt for category 2, and for category 5
(adversarial) a choice between "not mentioned" and the trap answer. Judged
with one CORRECT/WRONG verdict per run, never for adversarial questions
(those are scored by their phrase check); token F1 by LoCoMo's own rules.
With ``judge.errata=true`` the locomo-audit errata's corrected golds are
judged as well.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.benchmark import BenchmarkBase, Judged, Metrics, Verdicts
from harness.benchmarks.locomo import audit, scorer
from harness.benchmarks.locomo.prompts import official as read_official_prompts
from harness.config import BenchmarkConfig
from harness.data import DataRoot
from harness.llm.judging import LLM_JUDGE, Request, verdict_metrics
from harness.pinned import PinnedFiles
from harness.prompts import PromptSet, Template
from muster_exact.verify.corpora import (
    LOCOMO,
    BenchmarkStore,
    Question,
    locomo_sessions,
    locomo_stores,
    locomo_turn_text,
)

FILE = str(LOCOMO)
ADVERSARIAL = "5"
TEMPORAL = "2"
# LoCoMo asks its adversarial questions as a choice between "not mentioned" and the trap answer.
NOT_MENTIONED = "Not mentioned in the conversation"


def session_fields(path: Path, name: str) -> dict[str, dict[str, Any]]:
    """Each turn of conversation ``name``: its words (with its image's caption, as MUSTER's record
    shows it), speaker, session date, session and place in the session, by turn id (what a peer is
    told beside the record's text)."""
    for sample in json.loads(path.read_text(encoding="utf-8")):
        if sample["sample_id"] == name:
            return {
                turn["dia_id"]: {
                    "words": locomo_turn_text(turn, date).split(": ", 1)[1],  # as the record shows them
                    "speaker": turn["speaker"],
                    "time": date,
                    "group": str(n),
                    "index": index,
                }
                for n, date, turns in locomo_sessions(sample["conversation"])
                for index, turn in enumerate(turns)
            }
    return {}


class LoCoMo(BenchmarkBase):
    name = "locomo"
    preset_family = "locomo"
    reproduced = True

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
        return locomo_stores(data.path(FILE))

    def peer_fields(self, data: DataRoot, store: BenchmarkStore) -> dict[str, dict[str, Any]]:
        return session_fields(data.path(FILE), store.name)

    def answer_template(self, prompts: PromptSet, question: Question) -> tuple[Template, dict[str, str]]:
        values = {"question": question.text}
        if question.category == TEMPORAL:
            return prompts.get("answer_temporal"), values
        if question.category == ADVERSARIAL:
            trap = question.gold[0] if question.gold else ""
            # Which option comes first is fixed per question (not random per run): reruns ask the same.
            first = int(hashlib.sha256(question.id.encode()).hexdigest(), 16) % 2 == 0
            a, b = (NOT_MENTIONED, trap) if first else (trap, NOT_MENTIONED)
            return prompts.get("answer_choice"), {**values, "option_a": a, "option_b": b}
        return super().answer_template(prompts, question)

    def official_prompts(self, pinned: PinnedFiles) -> PromptSet:
        return read_official_prompts(pinned)

    def judge_requests(self, question: Judged, answer: str, corrected: str | None = None) -> list[Request]:
        if question["category"] == ADVERSARIAL:  # scored by its phrase check, never by the judge
            return []
        base = {"question": question["question"], "answer": answer}
        golds = question["gold"]
        requests = [Request("verdict", "judge", {**base, "gold": golds[0] if golds else ""})]
        if corrected is not None:
            requests.append(Request("verdict_corrected", "judge", {**base, "gold": corrected}))
        return requests

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics:
        golds, category = list(judged["gold"]), judged["category"]
        metrics: dict[str, float | None] = {"f1": scorer.score(answer, golds[0] if golds else "", category)}
        if judged.get("gold_corrected") is not None:
            metrics["f1_corrected"] = scorer.score(answer, judged["gold_corrected"], category)
        if category != ADVERSARIAL:
            metrics.update(verdict_metrics(LLM_JUDGE, verdicts.get("verdict", [])))
            if "verdict_corrected" in verdicts:
                metrics.update(verdict_metrics(f"{LLM_JUDGE}_corrected", verdicts["verdict_corrected"]))
            elif judged.get("errata_checked"):  # not flagged: the corrected figure is the original one
                metrics.update(verdict_metrics(f"{LLM_JUDGE}_corrected", verdicts.get("verdict", [])))
        return metrics

    def corrected_golds(self, data: DataRoot) -> dict[str, str]:
        errata = audit.load_errata(data.path(audit.ERRATA_FILE), data.path(FILE))
        return {qid: e.correct_answer for qid, e in errata.items() if e.gold_wrong}


LOCOMO_BENCHMARK = LoCoMo()
