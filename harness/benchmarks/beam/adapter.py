"""BEAM (mohammadtavakoli78/BEAM): chats at 100K / 500K / 1M / 10M tokens, 20 questions each.

``chat_trunecated.json`` (sic) wins over ``chat.json`` as in the official loader;
a conversation whose chat is not in the data root is skipped and counted.

Judged with one 1 / 0.5 / 0 score per rubric item; an event-ordering answer's
lines are also aligned to the reference events and scored by ``tau_norm``.
A category's value is the mean over conversations of the conversation's
mean, 'all' the mean over categories, as BEAM reports.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

from harness.benchmark import BenchmarkBase, Judged, Metrics, Verdicts
from harness.benchmarks.beam import scorer
from harness.benchmarks.beam.prompts import official as read_official_prompts
from harness.config import BenchmarkConfig
from harness.data import DataRoot
from harness.llm.judging import Request
from harness.pinned import PinnedFiles
from harness.prompts import PromptSet
from muster_exact.verify.corpora import BEAM_DIR, BenchmarkStore, beam_chat_file, beam_stores

log = logging.getLogger(__name__)

EVENT_ORDERING = "event_ordering"


def answer_lines(answer: str) -> list[str]:
    """The answer's events as the official scorer reads them: one per line, as written."""
    return scorer.response_items(answer)


def aligned_order(lines: list[str], matches: list[int | None], rubric: list[str]) -> list[str]:
    """Each line replaced by the reference event it was matched to (unmatched lines stay as written)."""
    return [rubric[m] if m is not None else line for line, m in zip(lines, matches, strict=True)]


class BEAM(BenchmarkBase):
    name = "beam"
    preset_family = "beam"
    reproduced = True
    clustered = True
    cpu_replay = "beam.u20"  # the paper's CPU replay: BEAM-100K at 20 units

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
        scales = config.scales or ["100K"]
        root = data.root / BEAM_DIR
        for scale in scales:
            scale_dir = root / scale
            if not scale_dir.is_dir():
                log.warning("BEAM scale %s is not under %s", scale, root)
                continue
            skipped = 0
            for conversation in sorted(p.name for p in scale_dir.iterdir() if p.is_dir()):
                chat = beam_chat_file(scale_dir / conversation)
                if chat is None:
                    skipped += 1
                    continue
                # Check the files this conversation reads against the manifest.
                data.path(f"{BEAM_DIR}/{scale}/{conversation}/{chat.name}")
                data.path(f"{BEAM_DIR}/{scale}/{conversation}/probing_questions.json")
            if skipped:
                log.warning("BEAM %s: %d conversations have no chat here and are skipped", scale, skipped)
        yield from beam_stores(root, scales)

    def official_prompts(self, pinned: PinnedFiles) -> PromptSet:
        return read_official_prompts(pinned)

    def judge_requests(self, question: Judged, answer: str, corrected: str | None = None) -> list[Request]:
        base = {"question": question["question"], "answer": answer}
        return [
            Request(f"rubric:{i}", "judge_rubric", {**base, "rubric_item": item})
            for i, item in enumerate(question.get("rubric") or [])
        ]

    def events_to_align(self, question: Judged, answer: str) -> list[str] | None:
        if question["category"] == EVENT_ORDERING and question.get("rubric"):
            return answer_lines(answer)
        return None

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics:
        """The mean of the rubric items' scores (each item's first judge run); with the official
        quirks, the scorer's truncation as the official code has it."""
        ability = judged["category"]
        items = sorted(
            (slot for slot in verdicts if slot.startswith("rubric:")), key=lambda s: int(s.split(":")[1])
        )
        scores = [verdicts[slot][0] for slot in items]
        metrics: dict[str, float | None] = {"rubric": None, "rubric_official": None}
        if items and all(score is not None for score in scores):
            kept = [float(s) for s in scores if s is not None]
            metrics["rubric"] = scorer.question_score(kept, ability, official_quirks=False)
            metrics["rubric_official"] = scorer.question_score(kept, ability, official_quirks=True)
        if ability == EVENT_ORDERING and judged.get("alignment") is not None:
            rubric = list(judged.get("rubric") or [])
            order = aligned_order(answer_lines(judged.get("answer") or ""), judged["alignment"], rubric)
            tau = scorer.tau_norm(order, rubric)
            metrics["tau_norm"] = None if math.isnan(tau) else tau
            # The official report ranks event ordering by its rank score, not by the judge's.
            metrics["rubric_official"] = metrics["tau_norm"]
        if not quirks:
            metrics["rubric_official"] = None
        return metrics

    def table_note(self, official_quirks: bool) -> str:
        state = "on" if official_quirks else "off"
        return (
            f"\nOfficial-scorer quirks {state}: `rubric_official` truncates 0.5 to 0 for every ability "
            "but event_ordering, as the official code does; `rubric` keeps the judge's scores.\n"
        )


BEAM_BENCHMARK = BEAM()
