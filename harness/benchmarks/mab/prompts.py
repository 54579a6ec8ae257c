"""MemoryAgentBench's own prompts, read from their pinned file at run time (never copied here).

Answer: ``BASE_TEMPLATES[<dataset>]`` of ``utils/templates.py`` (its system message and the
``rag_agent`` query), the dataset chosen by the file's own ``DATASET_MAPPING``. No LLM judge is
extracted (the sources that need one, LongMemEval and InfBench, have no data here). How a
template is taken out of its file: :mod:`harness.prompts.official`.
"""

from __future__ import annotations

from harness.pinned import PinnedFiles
from harness.prompts import PromptError, PromptSet, Template
from harness.prompts.official import format_style, module_constants


def official(pinned: PinnedFiles) -> PromptSet:
    templates, datasets = _templates(pinned)
    return PromptSet("official", templates, datasets)


def _templates(pinned: PinnedFiles) -> tuple[dict[str, Template], dict[tuple[str, ...], str]]:
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
