"""Benchmarks, one folder each (see :mod:`harness.benchmark`), registered lazily by name.

``harness/benchmarks/<name>/`` holds the benchmark's adapter (``adapter.py``: its stores, prompts
and judging rules), its offline scorer (``scorer.py``: pure functions, no LLM, no network, no
I/O; each docstring lists the facts it takes from the benchmark's own code: repository, commit,
path), and where it has them its audit (LoCoMo's judge audit, ``locomo/audit.py``) and its
published-output reader (MemoryAgentBench's, ``mab/published.py``). ``overlap.py`` is the token
overlap the lexical scorers share.

Every benchmark yields stores in one internal shape
(:class:`muster_exact.verify.corpora.BenchmarkStore`: records with ids, and
questions with id, text, gold, category and evidence ids), in a fixed order.
Adding a benchmark is one folder here, one registration below and one
``conf/benchmark/<name>.yaml``; the stages, the tables and
``scripts/reproduce.py`` read everything else from the benchmark object.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from harness.benchmark import Benchmark
from harness.config import BenchmarkConfig, ConfigError
from muster_exact.core.registry import Registry
from muster_exact.verify.corpora import BenchmarkStore

REGISTRY: Registry[Benchmark] = Registry(
    "benchmark",
    {
        "locomo": "harness.benchmarks.locomo.adapter:LOCOMO_BENCHMARK",
        "locomo_refined": "harness.benchmarks.locomo_refined.adapter:LOCOMO_REFINED",
        "mab": "harness.benchmarks.mab.adapter:MAB",
        "beam": "harness.benchmarks.beam.adapter:BEAM_BENCHMARK",
        "longmemeval": "harness.benchmarks.longmemeval.adapter:LONGMEMEVAL",
    },
)


def scorer_sha256s() -> dict[str, str]:
    """SHA-256 of each scorer module's source (``<name>/scorer.py``, ``overlap.py``): the run record
    names the code that scored."""
    import hashlib

    here = Path(__file__).parent
    files = [*sorted(here.glob("*/scorer.py")), here / "overlap.py"]
    return {str(path.relative_to(here)): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def load(name: str) -> Benchmark:
    """The benchmark registered as ``name`` (an unknown name names the closest ones)."""
    return REGISTRY.get(name)


def selected(stores: Iterator[BenchmarkStore], config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
    """Apply the config's optional store subset and per-store question limit; a named store the
    benchmark does not have is a ConfigError naming the ones it has (never an empty run)."""
    wanted = set(config.stores)
    names: list[str] = []
    for store in stores:
        names.append(store.name)
        if wanted and store.name not in wanted:
            continue
        if config.questions_per_store is not None:
            store = BenchmarkStore(
                store.benchmark, store.name, store.source, store.questions[: config.questions_per_store]
            )
        yield store
    unknown = sorted(wanted - set(names))
    if unknown:
        raise ConfigError(
            f"benchmark.stores: {config.name} has no store {', '.join(map(repr, unknown))}; "
            f"its stores are {', '.join(names)}"
        )
