"""The systems the harness runs: MUSTER, baselines and ablations, by name.

Their retrieval logic lives in the library (``muster_exact.variants``); the
harness only names them and gives budgeted baselines MUSTER's token count.
"""

from __future__ import annotations

import difflib

from muster_exact import variants
from muster_exact.assemble import Context
from muster_exact.errors import InputError
from muster_exact.memory import Memory

SYSTEMS = variants.SYSTEMS


def check(name: str) -> str:
    if name not in SYSTEMS:
        close = difflib.get_close_matches(name, SYSTEMS, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"choose one of {', '.join(SYSTEMS)}"
        raise InputError(f"unknown system {name!r}; {hint}")
    return name


def context(memory: Memory, system: str, query: str) -> tuple[Context, int | None]:
    """The system's context and, for budgeted baselines, the token budget it had."""
    if system in variants.BUDGETED:
        budget = memory.context(query).tokens
        return variants.context(memory, system, query, budget=budget), budget
    return variants.context(memory, system, query), None
