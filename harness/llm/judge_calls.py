"""Asking the judge: each request ``runs`` times, and BEAM-style event alignment.

Shared by the stages that judge (``judge``, ``audit``): the verdicts are read
with :func:`harness.llm.judging.read_verdict`; a failed call or an unreadable
reply is a ``None`` verdict with its reason, never a stopped run.
"""

from __future__ import annotations

from typing import Any

from harness import llm
from harness.llm import judging
from harness.prompts import PromptSet


def judge_one(
    client: llm.Client,
    prompts: PromptSet,
    requests: list[judging.Request],
    runs_per_request: int,
) -> tuple[dict[str, list[float | None]], list[dict[str, Any]]]:
    verdicts: dict[str, list[float | None]] = {}
    failures: list[dict[str, Any]] = []
    for request in requests:
        template = prompts.get(request.template)
        for run_index in range(runs_per_request):
            messages = template.messages(**request.values)
            outcome = client.ask(messages, template.json_reply, seed_offset=run_index)
            verdict = None
            if isinstance(outcome, llm.Failure):
                failures.append({"slot": request.slot, "run": run_index, "reason": outcome.reason})
            else:
                parsed = llm.parse_json_reply(outcome.text) if template.json_reply else None
                verdict = judging.read_verdict(request.slot, parsed or {"label": outcome.text})
                if verdict is None:
                    failures.append(
                        {
                            "slot": request.slot,
                            "run": run_index,
                            "reason": f"no verdict in {outcome.text[:120]!r}",
                        }
                    )
            verdicts.setdefault(request.slot, []).append(verdict)
    return verdicts, failures


def align_events(
    client: llm.Client, prompts: PromptSet, lines: list[str], rubric: list[str]
) -> tuple[list[int | None], list[dict[str, Any]]]:
    """Event alignment: each answer line, in order, is matched to the first reference event not
    yet claimed that the judge calls the same event. Blank lines match nothing (not asked)."""
    template = prompts.get("judge_event_match")
    claimed: set[int] = set()
    matches: list[int | None] = []
    failures: list[dict[str, Any]] = []
    for line_index, line in enumerate(lines):
        match = None
        for item_index, item in enumerate(rubric):
            if item_index in claimed or not line.strip():
                continue
            outcome = client.ask(template.messages(rubric_item=item, answer=line), template.json_reply)
            if isinstance(outcome, llm.Failure):
                failures.append({"slot": f"align:{line_index}:{item_index}", "reason": outcome.reason})
                continue
            parsed = llm.parse_json_reply(outcome.text) if template.json_reply else None
            if judging.read_verdict("align", parsed or {"label": outcome.text}) == 1.0:
                match = item_index
                claimed.add(item_index)
                break
        matches.append(match)
    return matches, failures
