"""Benchmark adapters, one module each, registered lazily by name.

Every adapter yields stores in one internal shape
(:class:`muster_exact.corpora.Store`: records with ids, and questions with
id, text, gold, category and evidence ids), in a fixed order.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from typing import Protocol

from harness.config import BenchmarkConfig
from harness.data import DataRoot
from muster_exact.corpora import Store
from muster_exact.errors import InputError

REGISTRY = {
    "locomo": "harness.benchmarks.locomo:LoCoMo",
    "locomo_refined": "harness.benchmarks.locomo_refined:LoCoMoRefined",
    "mab": "harness.benchmarks.mab:MemoryAgentBench",
    "beam": "harness.benchmarks.beam:BEAM",
}


class Benchmark(Protocol):
    name: str

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[Store]: ...


def load(name: str) -> Benchmark:
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"choose one of {', '.join(REGISTRY)}"
        raise InputError(f"unknown benchmark {name!r}; {hint}")
    module, attr = REGISTRY[name].split(":")
    benchmark: Benchmark = getattr(importlib.import_module(module), attr)()
    return benchmark


def selected(stores: Iterator[Store], config: BenchmarkConfig) -> Iterator[Store]:
    """Apply the config's optional store subset and per-store question limit."""
    wanted = set(config.stores)
    for store in stores:
        if wanted and store.name not in wanted:
            continue
        if config.questions_per_store is not None:
            store = Store(
                store.benchmark, store.name, store.source, store.questions[: config.questions_per_store]
            )
        yield store
