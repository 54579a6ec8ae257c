"""BEAM's own prompts, read from their pinned file at run time (never copied here).

Answer: ``answer_generation_for_rag``; judge: ``unified_llm_judge_base_prompt`` of
``src/prompts.py``. Its ``<question>`` slot, which the official code never fills, is left
unfilled, as there. How a template is taken out of its file: :mod:`harness.prompts.official`.
"""

from __future__ import annotations

import dataclasses

from harness.pinned import PinnedFiles
from harness.prompts import PromptSet, Template, muster_set
from harness.prompts.official import module_constants, tag_style


def official(pinned: PinnedFiles) -> PromptSet:
    return PromptSet("official", _templates(pinned))


def _templates(pinned: PinnedFiles) -> dict[str, Template]:
    name = "beam.prompts"
    source = pinned.text(name)
    answer = module_constants(source, "answer_generation_for_rag")["answer_generation_for_rag"]
    judge = module_constants(source, "unified_llm_judge_base_prompt")["unified_llm_judge_base_prompt"]
    # BEAM aligns an event-ordering answer's lines to the reference events with an LLM; that prompt
    # was not extracted from its file, so this set says plainly that it uses this repo's own.
    own = muster_set().templates["judge_event_match"]
    return {
        "judge_event_match": dataclasses.replace(
            own, source=own.source + " (no official template extracted)"
        ),
        "answer": Template("answer", tag_style(answer), source=f"{name}:answer_generation_for_rag"),
        "judge_rubric": Template(
            "judge_rubric",
            tag_style(judge, keep=("<question>",)),  # never filled by the official code: kept so
            json_reply=True,
            source=f"{name}:unified_llm_judge_base_prompt",
        ),
    }
