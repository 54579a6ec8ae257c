"""LoCoMo-Refined's prompts: LoCoMo's answer prompts. Its strict judge's repository could not be
pinned on these machines, so the set has no judge and asking for it is an error."""

from __future__ import annotations

from harness.benchmarks.locomo import prompts as locomo
from harness.pinned import PinnedFiles
from harness.prompts import PromptSet


def official(pinned: PinnedFiles) -> PromptSet:
    templates = locomo.templates(pinned)
    del templates["judge"]  # LoCoMo's lenient judge is not LoCoMo-Refined's strict one
    return PromptSet("official", templates)
