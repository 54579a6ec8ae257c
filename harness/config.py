"""Typed config groups, registered with Hydra's ConfigStore.

The groups mirror the architecture: benchmark, preset, models, system, stage,
paths (and an optional git-ignored ``local``). Every YAML in ``conf/`` is
merged into these dataclasses, so an unknown or misspelt key fails when the
config is composed, not at minute 40 of a run; :func:`check` then holds the
rules between values that a type cannot say, before any stage starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig

from muster_exact.errors import MusterError


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


@dataclass
class PresetConfig:
    name: str = MISSING
    benchmark: str = MISSING
    units_read: int = MISSING
    record_budget: int = MISSING
    prose_budget: int = MISSING
    policy: str = MISSING
    models: str = MISSING
    mode: str = MISSING


@dataclass
class ModelsConfig:
    name: str = MISSING  # a profile of muster_exact.models: cpu-small, paper


@dataclass
class SystemConfig:
    name: str = MISSING  # muster, a baseline or an ablation (muster_exact.variants.SYSTEMS)


@dataclass
class StageConfig:
    name: str = MISSING  # contexts, merge, tables, answer, judge, rescore, audit
    shard: int = 0
    shards: int = 1
    progress: bool = True
    save_text: bool = False  # also write each context's text (large)
    limit: int | None = None  # audit: the first N answers of each published file (quick runs)


@dataclass
class LLMConfig:
    """An OpenAI-compatible endpoint and how to ask it (harness.llm.Endpoint)."""

    model: str = MISSING
    base_url: str | None = None  # None: api.openai.com; vLLM/Ollama/llama.cpp: http://HOST:PORT/v1
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable holding the key; '' for a keyless local server
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = 0
    timeout_s: float = 60.0
    max_retries: int = 6
    concurrency: int = 4
    prompts: str = "official"  # official (the benchmark's own, pinned) or muster (this repo's own words)


@dataclass
class ReaderConfig(LLMConfig):
    pass


@dataclass
class JudgeConfig(LLMConfig):
    runs: int = 1  # judge each answer this many times (seed + run), scored by majority and by mean
    official_quirks: bool = True  # BEAM: the official scorer's int() truncation and rank score, reported
    errata: bool = False  # LoCoMo: also judge against the corrected golds of the locomo-audit errata


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
    preset: PresetConfig = field(default_factory=PresetConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    system: SystemConfig = field(default_factory=SystemConfig)
    stage: StageConfig = field(default_factory=StageConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    local: dict[str, Any] = field(default_factory=dict)


def register() -> None:
    store = ConfigStore.instance()
    store.store(name="run_schema", node=RunConfig)
    for group, node in (
        ("benchmark", BenchmarkConfig),
        ("preset", PresetConfig),
        ("models", ModelsConfig),
        ("system", SystemConfig),
        ("stage", StageConfig),
        ("reader", ReaderConfig),
        ("judge", JudgeConfig),
        ("paths", PathsConfig),
    ):
        store.store(group=f"schema/{group}", name="base", node=node)


class ConfigError(MusterError):
    """Config values that are each well typed but do not make a run together."""


def check(cfg: DictConfig) -> None:
    """The rules between config values, checked before a stage reads or writes anything."""
    shard, shards = cfg.stage.shard, cfg.stage.shards
    if shards < 1:
        raise ConfigError(f"stage.shards must be at least 1, not {shards}")
    if not 0 <= shard < shards:
        raise ConfigError(f"stage.shard must be in [0, {shards}), not {shard}; shards count from 0")
    if cfg.stage.name in ("judge", "audit"):
        if cfg.judge.runs < 1:
            raise ConfigError(f"judge.runs must be at least 1, not {cfg.judge.runs}")
        if cfg.judge.runs > 1 and cfg.judge.seed is None:
            raise ConfigError("judge.runs > 1 needs a judge.seed: each run is the seed plus its number")
