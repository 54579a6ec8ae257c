"""The systems the harness runs: MUSTER (exact and native), baselines and ablations, by name.

Their retrieval logic lives in the library (``muster_exact.memory.variants`` and
``muster_exact.rules``); the harness only names them, says which rules each
runs, and gives budgeted baselines their token budget.

* ``muster``: exact mode, the paper's method (``rules.EXACT``);
* ``muster_native``: the same preset under native mode's rules (``rules.NATIVE``);
* baselines (``full_context``, ``bm25``, ``dense``, ``hybrid``) run on the
  native indexes (the strong analyser, pooled pieces: the strongest honest
  baseline) at the larger of the two MUSTER contexts' tokens for the same
  question, so neither MUSTER row is compared with a baseline given less room;
* ablations take one step out of exact MUSTER, at its U;
* native ablations (``native_no_floors``, ...) turn one of native mode's parts
  back, at its U;
* peers (``mempalace``, ``truememory``: one per adapter under ``scripts/peers/``) are memory
  systems outside the project, run through one protocol (:mod:`harness.systems.external`), each
  filled to native's context tokens for the question; ``make peers`` runs them, not
  ``make reproduce``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.systems import external
from muster_exact import rules
from muster_exact.channels import Recent
from muster_exact.core.registry import Registry
from muster_exact.memory import Memory, variants
from muster_exact.retrieve.assemble import Context

NATIVE = "muster_native"


@dataclass(frozen=True)
class System:
    """One system the harness runs: which memory it reads (the exact rules' or the native
    rules'), what it is (MUSTER, a baseline, an ablation), and the manifests its contexts are
    pinned in (MUSTER's two rows: ``exact`` and ``native``)."""

    name: str
    rules: rules.Rules
    kind: str  # "muster", "baseline", "ablation", "native_ablation" or "peer"
    pinned: str | None = None

    @property
    def reads(self) -> str:
        """The memory of :class:`Memories` it starts from: the one cut as its rules cut
        (``native``: units up to the embedder's window; ``exact``: up to the record budget), so a
        native ablation's memory shares that memory's cut and vectors."""
        return "native" if self.rules.unit_size == rules.NATIVE.unit_size else "exact"


def _systems() -> dict[str, System]:
    method, *others = variants.SYSTEMS  # MUSTER's two rows first, then the library's variants
    rows = [System(method, rules.EXACT, "muster", "exact"), System(NATIVE, rules.NATIVE, "muster", "native")]
    for name in others:
        variant = variants.VARIANTS.get(name)
        by_kind = {"baseline": rules.NATIVE, "ablation": rules.EXACT}
        rows.append(System(name, by_kind.get(variant.kind, variant.rules), variant.kind))
    rows += [System(name, rules.NATIVE, "peer") for name in external.names()]
    return {row.name: row for row in rows}


# Each system by name, once; every list of systems below is read from it.
REGISTRY: Registry[System] = Registry("system", _systems())
SYSTEMS = tuple(REGISTRY.names())
MUSTER_ROWS = tuple(n for n in SYSTEMS if REGISTRY.get(n).kind == "muster")  # compared with the best baseline
ABLATIONS = tuple(n for n in SYSTEMS if REGISTRY.get(n).kind in ("ablation", "native_ablation"))
PEERS = tuple(n for n in SYSTEMS if REGISTRY.get(n).kind == "peer")
# What `make reproduce` runs: every system but the peers (`make peers` runs those).
REPRODUCED = tuple(n for n in SYSTEMS if n not in PEERS)
NATIVE_ABLATIONS = tuple(n for n in SYSTEMS if REGISTRY.get(n).kind == "native_ablation")
# The systems the page plots against U: all but native's ablations (ten more lines would hide the
# rest; they are in every table, by name).
PLOTTED_SYSTEMS = tuple(n for n in SYSTEMS if n not in NATIVE_ABLATIONS)
PINNED = {n: REGISTRY.get(n).pinned for n in SYSTEMS if REGISTRY.get(n).pinned}  # system -> manifest rules


def check(name: str) -> str:
    return REGISTRY.check(name)


def rules_of(system: str) -> rules.Rules:
    """The retrieval rules a system's memory runs."""
    return REGISTRY.get(system).rules


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


def context(
    memories: Memories, system: str, query: str, peer: tuple[external.Ranked, str] | None = None
) -> tuple[Context | external.PeerContext, int | None]:
    """The system's context and, for budgeted baselines and peers, the token budget it had.
    A peer's context needs its answer for the store and the question's id in it (``peer``)."""
    row = REGISTRY.get(system)
    if row.kind == "peer":
        if peer is None:
            raise external.PeerError(f"the peer {system!r} needs its ranking of the store")
        budget = memories.native.context(query).tokens  # native's budget: the peers' comparison
        return external.fill(*peer, budget), budget
    memory = memories.native if row.reads == "native" else memories.exact
    if row.kind == "baseline":
        budget = memories.budget(query)
        return variants.context(memory, system, query, budget=budget), budget
    if row.kind == "muster":
        return memory.context(query), None
    return variants.context(memory, system, query), None
