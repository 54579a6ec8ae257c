"""Offline scoring rules of each benchmark: pure functions, no LLM, no network, no I/O.

* :mod:`.locomo`: LoCoMo token F1 with its per-category rules;
* :mod:`.locomo_refined`: LoCoMo-Refined token F1 and BLEU-1, best over golds;
* :mod:`.mab`: MemoryAgentBench's exact / substring match, ``Answer:``
  parsing, EventQA recall and recommendation recall@k, routed by source;
* :mod:`.beam`: BEAM's rubric means, ``tau_norm`` rank score and the
  two-level aggregation, with upstream's quirks behind ``official_quirks``.

Each module's docstring lists the facts it takes from the benchmark's own
code (repository, commit, path). Which benchmark uses which scorer is
the benchmark module's business (:mod:`harness.benchmarks`).
"""

from __future__ import annotations


def sha256s() -> dict[str, str]:
    """SHA-256 of each scorer module's source: the run record names the code that scored."""
    import hashlib
    from pathlib import Path

    here = Path(__file__).parent
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(here.glob("*.py"))}
