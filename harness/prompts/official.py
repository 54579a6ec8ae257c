"""The benchmarks' own prompts, read from their pinned files at run time (never copied here).

Each template is taken out of its file by structure, not by quoting it:
Python files are parsed with :mod:`ast` (a module-level string constant by
name, a dict of them, or the string a function appends to the question),
YAML files by key path. Placeholders are then renamed to this harness's
``{name}`` fields: ``.format`` slots (``{}``, ``{golden_answer}``...) and
``<tag>`` slots (BEAM) alike. What comes from where:

==============  ===========================================================
LoCoMo          answer: ``QA_PROMPT`` / ``QA_PROMPT_CAT_5`` of
                ``task_eval/gpt_utils.py``, with the suffixes its
                ``get_gpt_answers`` appends for temporal (2) and adversarial
                (5) questions; judge: ``llm_judge`` of locomo-audit's
                ``evaluation/config/prompts.yaml`` (the judge behind the
                published verdicts in ``../shared/data/locomo/outputs``).
LoCoMo-Refined  answer: LoCoMo's. Its strict judge's repository could not be
                pinned on these machines: asking for it is an error.
MemoryAgentBench  answer: ``BASE_TEMPLATES[<dataset>]`` of
                ``utils/templates.py`` (its system message and the
                ``rag_agent`` query), the dataset chosen by the file's own
                ``DATASET_MAPPING``. No LLM judge is extracted (the sources
                that need one, LongMemEval and InfBench, have no data here).
BEAM            answer: ``answer_generation_for_rag``; judge:
                ``unified_llm_judge_base_prompt`` of ``src/prompts.py``. Its
                ``<question>`` slot, which the official code never fills, is
                left unfilled, as there.
==============  ===========================================================
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

import yaml

from harness.pinned import PinnedFiles
from harness.prompts import PromptError, PromptSet, Template, muster_set

# .format slots and <tag> slots of the official files -> this harness's field names.
RENAMES = {
    "{golden_answer}": "{gold}",
    "{gold_answer}": "{gold}",
    "{generated_answer}": "{answer}",
    "<context>": "{context}",
    "<question>": "{question}",
    "<rubric_item>": "{rubric_item}",
    "<llm_response>": "{answer}",
}


def locomo(pinned: PinnedFiles) -> PromptSet:
    return PromptSet("official", _locomo(pinned))


def locomo_refined(pinned: PinnedFiles) -> PromptSet:
    return PromptSet("official", _locomo_refined(pinned))


def mab(pinned: PinnedFiles) -> PromptSet:
    templates, datasets = _mab(pinned)
    return PromptSet("official", templates, datasets)


def beam(pinned: PinnedFiles) -> PromptSet:
    return PromptSet("official", _beam(pinned))


# --- extraction ---------------------------------------------------------------


def module_constants(source: str, name: str) -> dict[str, Any]:
    """Module-level assignments evaluable as literals (names of other literals resolved)."""
    tree = ast.parse(source)
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = _literal(node.value, found)
            except ValueError:
                continue
    if name not in found:
        raise PromptError(f"the pinned file has no literal {name}")
    return found


def _literal(node: ast.AST, known: dict[str, Any]) -> Any:
    """``ast.literal_eval`` that also resolves a bare name to an earlier literal of the module."""

    class Resolve(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            if name.id in known and isinstance(known[name.id], str):
                return ast.copy_location(ast.Constant(known[name.id]), name)
            return name

    return ast.literal_eval(Resolve().visit(ast.fix_missing_locations(node)))


def appended_strings(source: str, function: str) -> list[str]:
    """String constants a function adds to ``qa['question']`` (``qa['question'] + '...'``), in order."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            found = []
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.BinOp)
                    and isinstance(inner.op, ast.Add)
                    and isinstance(inner.left, ast.Subscript)
                    and isinstance(inner.left.slice, ast.Constant)
                    and inner.left.slice.value == "question"
                    and isinstance(inner.right, ast.Constant)
                    and isinstance(inner.right.value, str)
                ):
                    found.append(inner.right.value)
            return found
    raise PromptError(f"the pinned file has no function {function}")


def format_style(text: str, positional: tuple[str, ...] = ()) -> str:
    """A ``.format`` template in this harness's form: ``{}`` slots named in order, ``{{ }}`` literal."""
    names = iter(positional)

    def slot(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        if token == "{}":
            try:
                return "{" + next(names) + "}"
            except StopIteration:
                raise PromptError("a template has more {} slots than names for them") from None
        return RENAMES.get(token, token)

    return re.sub(r"\{\{|\}\}|\{[a-z_]*\}", slot, text)


def tag_style(text: str, keep: tuple[str, ...] = ()) -> str:
    """A ``.replace('<tag>', ...)`` template in this harness's form; tags in ``keep`` stay as they are."""
    for tag, field in RENAMES.items():
        if tag.startswith("<") and tag not in keep:
            text = text.replace(tag, field)
    return text


# --- per benchmark --------------------------------------------------------------


def _locomo(pinned: PinnedFiles) -> dict[str, Template]:
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
    templates["judge"] = _locomo_audit_judge(pinned)
    return templates


def _locomo_audit_judge(pinned: PinnedFiles) -> Template:
    name = "locomo_audit.prompts"
    try:
        judge = yaml.safe_load(pinned.text(name))["llm_judge"]
        system, user = judge["system_prompt"], judge["user_prompt"]
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise PromptError(f"{name}: no llm_judge system_prompt / user_prompt ({exc})") from None
    return Template(
        "judge", format_style(user), system=format_style(system), json_reply=True, source=f"{name}:llm_judge"
    )


def _locomo_refined(pinned: PinnedFiles) -> dict[str, Template]:
    templates = _locomo(pinned)
    del templates["judge"]  # LoCoMo's lenient judge is not LoCoMo-Refined's strict one
    return templates


def _mab(pinned: PinnedFiles) -> tuple[dict[str, Template], dict[tuple[str, ...], str]]:
    name = "mab.templates"
    constants = module_constants(pinned.text(name), "BASE_TEMPLATES")
    templates: dict[str, Template] = {}
    for dataset, entry in constants["BASE_TEMPLATES"].items():
        try:
            system, query = entry["system"], entry["query"]["rag_agent"]
        except (KeyError, TypeError):
            raise PromptError(
                f"{name}: BASE_TEMPLATES[{dataset!r}] has no system / query.rag_agent"
            ) from None
        # A retrieval agent's message: the retrieved memory, then the query.
        templates[f"answer:{dataset}"] = Template(
            f"answer:{dataset}",
            "{context}\n" + format_style(query),
            system=system,
            source=f"{name}:BASE_TEMPLATES[{dataset}].query.rag_agent",
        )
    mapping = constants.get("DATASET_MAPPING")
    if not isinstance(mapping, dict):
        raise PromptError(f"{name}: no DATASET_MAPPING to choose a template per source")
    return templates, {tuple(patterns): str(dataset) for patterns, dataset in mapping.items()}


def _beam(pinned: PinnedFiles) -> dict[str, Template]:
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
