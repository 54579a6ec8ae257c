"""The rules between config values that are each well typed (:mod:`harness.config` holds the
schema alone): the groups' choices, shards, limits, and the preset held to its frozen file and
to the chosen benchmark. Checked before a stage reads or writes anything."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from omegaconf import DictConfig

from harness import benchmarks, registries
from harness.config import ConfigError
from muster_exact import models
from muster_exact.memory import presets


def check(cfg: DictConfig) -> None:
    """The rules between config values, checked before a stage reads or writes anything."""
    for group in registries.GROUPS:
        if group == "models" and models.looks_like_path(cfg.models.name):
            models.from_directory(Path(cfg.models.name))  # models.name=DIR: local files, checked now
            continue
        # A group file the registry lacks is refused here; so is models=auto, which is not one:
        # a run names its models outright, so that its record says what ran.
        registries.check(group, cfg[group].name)
    shard, shards = cfg.stage.shard, cfg.stage.shards
    if shards < 1:
        raise ConfigError(f"stage.shards must be at least 1, not {shards}")
    if not 0 <= shard < shards:
        raise ConfigError(f"stage.shard must be in [0, {shards}), not {shard}; shards count from 0")
    limit = cfg.benchmark.questions_per_store
    if limit is not None and limit < 1:
        raise ConfigError(f"benchmark.questions_per_store must be at least 1 (or null for all), not {limit}")
    if cfg.stage.name in ("judge", "audit"):
        if cfg.judge.runs < 1:
            raise ConfigError(f"judge.runs must be at least 1, not {cfg.judge.runs}")
        if cfg.judge.runs > 1 and cfg.judge.seed is None:
            raise ConfigError("judge.runs > 1 needs a judge.seed: each run is the seed plus its number")
    check_preset(cfg)


def preset_family(cfg: DictConfig) -> str:
    """The presets the chosen benchmark runs, ``<family>.u*``: its module says (locomo_refined runs
    LoCoMo's)."""
    family: str = benchmarks.load(cfg.benchmark.name).preset_family
    return family


def check_preset(cfg: DictConfig) -> None:
    """The preset as composed is its frozen file (the build reads the file, so an override would be
    silently ignored), and it was frozen for the chosen benchmark."""
    frozen = presets.load(cfg.preset.name)  # refuses a preset whose mode is not exact
    changed = [
        f"preset.{key}={cfg.preset[key]} (its file: {value})"
        for key, value in dataclasses.asdict(frozen).items()
        if cfg.preset[key] != value
    ]
    if changed:
        raise ConfigError(
            f"preset {frozen.name} is frozen (manifests/presets.json pins its file), but the config "
            f"changes it: {', '.join(changed)}; choose another preset instead"
        )
    family = preset_family(cfg)
    if frozen.benchmark != family:
        raise ConfigError(
            f"preset {frozen.name} is frozen for benchmark {frozen.benchmark}, not {cfg.benchmark.name}; "
            f"benchmark {cfg.benchmark.name} runs the {family}.* presets: "
            f"{', '.join(name for name in presets.names() if name.startswith(f'{family}.'))}"
        )
