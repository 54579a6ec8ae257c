"""LoCoMo's own prompts, read from their pinned files at run time (never copied here).

Answer: ``QA_PROMPT`` / ``QA_PROMPT_CAT_5`` of ``task_eval/gpt_utils.py``, with the suffixes its
``get_gpt_answers`` appends for temporal (2) and adversarial (5) questions; judge: ``llm_judge``
of locomo-audit's ``evaluation/config/prompts.yaml`` (the judge behind the published verdicts in
``../shared/data/locomo/outputs``). How a template is taken out of its file:
:mod:`harness.prompts.official`.
"""

from __future__ import annotations

import yaml

from harness.pinned import PinnedFiles
from harness.prompts import PromptError, PromptSet, Template
from harness.prompts.official import appended_strings, format_style, module_constants


def official(pinned: PinnedFiles) -> PromptSet:
    return PromptSet("official", templates(pinned))


def templates(pinned: PinnedFiles) -> dict[str, Template]:
    name = "locomo.gpt_utils"
    source = pinned.text(name)
    constants = module_constants(source, "QA_PROMPT")
    suffixes = appended_strings(source, "get_gpt_answers")
    choice = [s for s in suffixes if "(a) {}" in s]
    temporal = [s for s in suffixes if "{}" not in s]
    if len(choice) != 1 or len(temporal) != 1:
        raise PromptError(f"{name}: expected one temporal and one choice suffix, found {suffixes!r}")
    # The official query is the conversation, a blank line, then the QA prompt with the question.
    qa, qa_choice = constants["QA_PROMPT"], constants["QA_PROMPT_CAT_5"]
    templates = {
        "answer": Template(
            "answer", "{context}\n\n" + format_style(qa, ("question",)), source=f"{name}:QA_PROMPT"
        ),
        "answer_temporal": Template(
            "answer_temporal",
            "{context}\n\n"
            + format_style(qa, ("question",)).replace("{question}", "{question}" + temporal[0]),
            source=f"{name}:QA_PROMPT+get_gpt_answers(category 2)",
        ),
        "answer_choice": Template(
            "answer_choice",
            "{context}\n\n"
            + format_style(qa_choice, ("question",)).replace(
                "{question}", "{question}" + format_style(choice[0], ("option_a", "option_b"))
            ),
            source=f"{name}:QA_PROMPT_CAT_5+get_gpt_answers(category 5)",
        ),
    }
    templates["judge"] = audit_judge(pinned)
    return templates


def audit_judge(pinned: PinnedFiles) -> Template:
    name = "locomo_audit.prompts"
    try:
        judge = yaml.safe_load(pinned.text(name))["llm_judge"]
        system, user = judge["system_prompt"], judge["user_prompt"]
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise PromptError(f"{name}: no llm_judge system_prompt / user_prompt ({exc})") from None
    return Template(
        "judge", format_style(user), system=format_style(system), json_reply=True, source=f"{name}:llm_judge"
    )
