"""The systems the harness runs: MUSTER (exact and native), baselines and ablations, by name.

Their retrieval logic lives in the library (``muster_exact.memory.variants`` and
``muster_exact.rules``); the harness only names them, says which rules each
runs, and gives budgeted baselines their token budget.

* ``muster``: exact mode, the paper's method (``rules.EXACT``);
* ``muster_native``: the same preset under native mode's rules (``rules.NATIVE``);
* baselines (``full_context``, ``bm25``, ``dense``) run on the native
  indexes (the strong analyser, pooled pieces: the strongest honest
  baseline) at the larger of the two MUSTER contexts' tokens for the same
  question, so neither MUSTER row is compared with a baseline given less room;
* ablations take one step out of exact MUSTER, at its U.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from muster_exact import rules
from muster_exact.channels import Recent
from muster_exact.core.registry import Registry
from muster_exact.memory import Memory, variants
from muster_exact.retrieve.assemble import Context

NATIVE = "muster_native"


# Each system by name, with the retrieval rules its memory runs; MUSTER's two rows first.
REGISTRY: Registry[rules.Rules] = Registry(
    "system",
    {
        variants.SYSTEMS[0]: rules.EXACT,
        NATIVE: rules.NATIVE,
        **{name: rules.NATIVE if name in variants.BUDGETED else rules.EXACT for name in variants.SYSTEMS[1:]},
    },
)
SYSTEMS = tuple(REGISTRY.names())
MUSTER_ROWS = SYSTEMS[:2]  # exact and native MUSTER: the rows compared with the best baseline


def check(name: str) -> str:
    return REGISTRY.check(name)


def rules_of(system: str) -> rules.Rules:
    """The retrieval rules a system's memory runs."""
    return REGISTRY.get(system)


@dataclass
class Memories:
    """One store's memory under the exact and the native rules (one build, the same vectors)."""

    exact: Memory
    native: Memory
    _budgets: Recent[int] = field(default_factory=Recent)

    def budget(self, query: str) -> int:
        """The baselines' token budget for ``query``: the larger MUSTER context (computed once)."""
        return self._budgets.get(
            query, lambda: max(self.exact.context(query).tokens, self.native.context(query).tokens)
        )


def context(memories: Memories, system: str, query: str) -> tuple[Context, int | None]:
    """The system's context and, for budgeted baselines, the token budget it had."""
    if system in variants.BUDGETED:
        budget = memories.budget(query)
        return variants.context(memories.native, system, query, budget=budget), budget
    if system == NATIVE:
        return memories.native.context(query), None
    return variants.context(memories.exact, system, query), None
