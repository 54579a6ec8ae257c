"""The nine frozen presets ``{mab, locomo, beam} x {u10, u20, u40}``.

Each is a YAML file under ``muster_exact/conf/preset/`` (shipped in the
package, :mod:`muster_exact.core.shipped`; the harness's Hydra config group of the
same name reads these files), pinned by SHA-256 in ``manifests/presets.json``. A preset fixes
U, the unit budgets, the graph policy, the model profile and exact mode,
and names the benchmark it was frozen for (its name's first part): a preset
whose mode is not exact, or whose benchmark is not one of :data:`BENCHMARKS`,
is refused when loaded. ``$MUSTER_PRESETS`` names another folder to read instead.

A preset names the models the paper ran (``paper``). They are what a run of it reads with when the
caller names none, where they can run; elsewhere (offline, no FlagEmbedding) the packaged CPU
profile, as ``auto`` chooses, with its one warning (:func:`models_of`). Models a caller names
(``models=``, ``--models``, ``$MUSTER_MODELS``) always win, and the run records what ran.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from muster_exact.core.errors import MusterError
from muster_exact.core.registry import Registry
from muster_exact.core.shipped import shipped
from muster_exact.models.hub import suggested
from muster_exact.models.profiles import Models

BENCHMARKS = ("mab", "locomo", "beam")
MODE = "exact"  # the one mode a preset runs in: its contexts are the ones pinned in manifests/contexts


class PresetError(MusterError):
    """A preset is unknown, missing or malformed."""


@dataclass(frozen=True)
class Preset:
    name: str
    benchmark: str
    units_read: int
    record_budget: int
    prose_budget: int
    policy: str
    models: str
    mode: str

    def describe(self) -> str:
        return (
            f"U={self.units_read}, units <= {self.record_budget} tokens (records) / "
            f"{self.prose_budget} (prose), policy {self.policy}, models {self.models}, {self.mode} mode"
        )


def preset_dir() -> Path:
    configured = os.environ.get("MUSTER_PRESETS")
    directory = Path(configured) if configured else shipped("conf", "preset")
    if not directory.is_dir():
        why = "(set by $MUSTER_PRESETS)" if configured else "(the package's own; reinstall muster-memory)"
        raise PresetError(f"preset directory {directory} not found {why}")
    return directory


def _files() -> dict[str, Path]:
    found = {path.stem: path for path in preset_dir().glob("*.yaml") if path.is_file()}
    return {name: found[name] for name in sorted(found)}


# Read afresh on each use: $MUSTER_PRESETS may point elsewhere between calls (tests do).
REGISTRY: Registry[Path] = Registry("preset", _files, error=PresetError, cutoff=0.4)


def names() -> list[str]:
    return REGISTRY.names()


def path_of(name: str) -> Path:
    return REGISTRY.get(name)


def sha256(name: str) -> str:
    return hashlib.sha256(path_of(name).read_bytes()).hexdigest()


def load(name: str) -> Preset:
    import yaml  # type: ignore[import-untyped]

    path = path_of(name)
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PresetError(f"cannot read preset {path}: {exc}") from None
    known = {f.name for f in fields(Preset)}
    if not isinstance(data, dict) or set(data) != known:
        raise PresetError(f"preset {path} must set exactly: {', '.join(sorted(known))}")
    preset = Preset(**data)
    if preset.name != name:
        raise PresetError(f"preset {path} names itself {preset.name!r}")
    if preset.mode != MODE:
        raise PresetError(f"preset {path} sets mode {preset.mode!r}; presets run in {MODE} mode only")
    if preset.benchmark not in BENCHMARKS or not name.startswith(f"{preset.benchmark}."):
        raise PresetError(
            f"preset {path} is for benchmark {preset.benchmark!r}; a preset is named after its "
            f"benchmark ({' or '.join(f'{b}.*' for b in BENCHMARKS)})"
        )
    return preset


def models_of(name: str) -> Models:
    """The models preset ``name`` reads with when the caller names none (see the module's doc)."""
    return suggested(load(name).models, f"preset {name}")
