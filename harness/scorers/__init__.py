"""Offline scoring rules of each benchmark: pure functions, no LLM, no network, no I/O.

* :mod:`.locomo`: LoCoMo token F1 with its per-category rules;
* :mod:`.locomo_refined`: LoCoMo-Refined token F1 and BLEU-1, best over golds;
* :mod:`.mab`: MemoryAgentBench's exact / substring match, ``Answer:``
  parsing, EventQA recall and recommendation recall@k, routed by source;
* :mod:`.beam`: BEAM's rubric means, ``tau_norm`` rank score and the
  two-level aggregation, with upstream's quirks behind ``official_quirks``.

Each module's docstring lists the facts it takes from the benchmark's own
code (repository, commit, path). :func:`lexical` finds a benchmark's
per-answer lexical scorer by name, importing its module only then.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

# Lazy: "module:function", imported on first use.
LEXICAL_SCORERS = {
    "locomo": "harness.scorers.locomo:score",
    "locomo_refined": "harness.scorers.locomo_refined:scores",
    "mab": "harness.scorers.mab:scores",
}


def lexical(benchmark: str) -> Callable[..., Any]:
    """The per-answer lexical scorer of ``benchmark`` (BEAM has none: it is judge-scored)."""
    target = LEXICAL_SCORERS.get(benchmark)
    if target is None:
        close = difflib.get_close_matches(benchmark, LEXICAL_SCORERS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no lexical scorer for {benchmark!r}{hint} (known: {', '.join(LEXICAL_SCORERS)})")
    module_name, function_name = target.split(":")
    scorer: Callable[..., Any] = getattr(importlib.import_module(module_name), function_name)
    return scorer


def sha256s() -> dict[str, str]:
    """SHA-256 of each scorer module's source: the run record names the code that scored."""
    import hashlib
    from pathlib import Path

    here = Path(__file__).parent
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(here.glob("*.py"))}
