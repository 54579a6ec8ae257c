"""Typed config groups, registered with Hydra's ConfigStore.

The groups mirror the architecture: benchmark, preset, models, system, stage,
paths (and an optional git-ignored ``local``). Every YAML in ``conf/`` is
merged into these dataclasses, so an unknown or misspelt key fails when the
config is composed, not at minute 40 of a run; :func:`harness.checks.check` then holds the
rules between values that a type cannot say, before any stage starts.

A group whose fields a library dataclass already defines (a preset:
:class:`muster_exact.memory.presets.Preset`; a reader or judge endpoint:
:class:`harness.llm.Endpoint`) takes its schema from that dataclass
(:func:`schema`), so a field is written once.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from harness import registries
from harness.llm import Endpoint
from muster_exact.core.errors import MusterError
from muster_exact.memory import presets


def schema(name: str, source: type, *extra: tuple[str, Any, Any]) -> type[Any]:
    """A Hydra structured config (mutable, as Hydra merges into it) with the fields of the frozen
    dataclass ``source``, their defaults (MISSING where it has none), then ``extra`` fields
    given as (name, type, default)."""
    hints = typing.get_type_hints(source)
    own = []
    for item in dataclasses.fields(source):
        if item.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{source.__name__}.{item.name}: a default factory has no config form")
        default = MISSING if item.default is dataclasses.MISSING else item.default
        own.append((item.name, hints[item.name], field(default=default)))
    node = dataclasses.make_dataclass(name, [*own, *((n, t, field(default=d)) for n, t, d in extra)])
    node.__module__ = __name__  # importable by name: the joblib and submitit launchers pickle configs
    return node


@dataclass
class BenchmarkConfig:
    name: str = MISSING
    # MemoryAgentBench: which splits (Conflict_Resolution ships here; others load by revision).
    splits: list[str] = field(default_factory=list)
    # BEAM: which scales (100K, 500K, 1M, 10M).
    scales: list[str] = field(default_factory=list)
    # Optional subsets, for quick runs: store names, and the first N questions of each store.
    stores: list[str] = field(default_factory=list)
    questions_per_store: int | None = None


# A frozen preset file, as Hydra composes it; harness.checks.check holds it to the file.
PresetConfig = schema("PresetConfig", presets.Preset)


@dataclass
class ModelsConfig:
    name: str = MISSING  # a profile of muster_exact.models.PROFILES: cpu-small, paper...


@dataclass
class SystemConfig:
    name: str = MISSING  # muster, a baseline or an ablation (harness.systems.REGISTRY)


@dataclass
class StageConfig:
    name: str = MISSING  # contexts, merge, tables, answer, judge... (harness.app.STAGES)
    shard: int = 0
    shards: int = 1
    progress: bool = True
    save_text: bool = False  # also write each context's text (large)
    limit: int | None = None  # audit: the first N answers of each published file (quick runs)


# A reader or judge: the harness.llm.Endpoint fields, and which prompts it is asked with:
# official (the benchmark's own, pinned) or muster (this repo's own words).
PROMPTS = ("prompts", str, "official")
ReaderConfig = schema("ReaderConfig", Endpoint, PROMPTS)
JudgeConfig = schema(
    "JudgeConfig",
    Endpoint,
    PROMPTS,
    ("runs", int, 1),  # judge each answer this many times (seed + run), scored by majority and by mean
    ("official_quirks", bool, True),  # BEAM: the official scorer's int() truncation and rank score, reported
    ("errata", bool, False),  # LoCoMo: also judge against the corrected golds of the locomo-audit errata
)


@dataclass
class PathsConfig:
    data_root: str = "${oc.env:MUSTER_DATA,../shared/data}"
    results: str = "results/runs"
    tables: str = "results"
    manifests: str = "manifests"
    # Replies of readers and judges, keyed by request SHA-256: reruns and resumes cost nothing.
    llm_cache: str = "${oc.env:MUSTER_HOME,.cache/muster}/llm/responses.sqlite"
    # Pinned third-party scorer files: a local mirror (<repo>/<commit>/<path>), then the fetch
    # cache, then scorers_url (null: never fetch).
    scorers_mirror: str | None = "${oc.env:MUSTER_SCORERS,null}"
    scorers_url: str | None = "https://raw.githubusercontent.com"


@dataclass
class RunConfig:
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    preset: Any = field(default_factory=PresetConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    system: SystemConfig = field(default_factory=SystemConfig)
    stage: StageConfig = field(default_factory=StageConfig)
    reader: Any = field(default_factory=ReaderConfig)
    judge: Any = field(default_factory=JudgeConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    local: dict[str, Any] = field(default_factory=dict)


def register() -> None:
    """The run's schema, and the options that only name a choice (:mod:`harness.registries`)."""
    ConfigStore.instance().store(name="run_schema", node=RunConfig)
    registries.store_options()


class ConfigError(MusterError):
    """Config values that are each well typed but do not make a run together."""
