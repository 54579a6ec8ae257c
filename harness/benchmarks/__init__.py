"""Benchmarks, one module each (see :mod:`harness.benchmark`), registered lazily by name.

Every benchmark yields stores in one internal shape
(:class:`muster_exact.verify.corpora.BenchmarkStore`: records with ids, and
questions with id, text, gold, category and evidence ids), in a fixed order.
Adding a benchmark is one module here, one registration below and one
``conf/benchmark/<name>.yaml``; the stages, the tables and
``scripts/reproduce.py`` read everything else from the benchmark object.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.benchmark import Benchmark
from harness.config import BenchmarkConfig, ConfigError
from muster_exact.core.registry import Registry
from muster_exact.verify.corpora import BenchmarkStore

REGISTRY: Registry[Benchmark] = Registry(
    "benchmark",
    {
        "locomo": "harness.benchmarks.locomo:LOCOMO_BENCHMARK",
        "locomo_refined": "harness.benchmarks.locomo_refined:LOCOMO_REFINED",
        "mab": "harness.benchmarks.mab:MAB",
        "beam": "harness.benchmarks.beam:BEAM_BENCHMARK",
        "longmemeval": "harness.benchmarks.longmemeval:LONGMEMEVAL",
    },
)


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
