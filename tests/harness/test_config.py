"""Every preset x benchmark config composes with Hydra's compose API, typed."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from harness.config import register
from muster_exact import presets
from tests.conftest import REPO

BENCHMARKS = ("locomo", "locomo_refined", "mab", "beam")


@pytest.fixture(scope="module", autouse=True)
def hydra_config():
    register()
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        yield


@pytest.mark.parametrize("preset", presets.names())
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_preset_and_benchmark_composes(preset: str, benchmark: str) -> None:
    cfg = compose("config", overrides=[f"benchmark={benchmark}", f"preset={preset}", "models=cpu-small"])
    assert cfg.benchmark.name == benchmark
    assert cfg.preset.name == preset and cfg.preset.units_read == presets.load(preset).units_read
    assert OmegaConf.get_type(cfg.preset).__name__ == "PresetConfig"
    assert cfg.stage.name == "contexts" and cfg.system.name == "muster"


@pytest.mark.parametrize(
    "override",
    ["stage.shardz=2", "benchmark.scale=[1M]", "preset.units_read=ten", "models.embedder=x"],
)
def test_unknown_keys_and_wrong_types_fail_at_load(override: str) -> None:
    with pytest.raises(ConfigCompositionException):
        compose("config", overrides=[override])


def test_hydra_groups_match_the_library() -> None:
    from harness.systems import SYSTEMS

    assert sorted(p.stem for p in (REPO / "conf/system").glob("*.yaml")) == sorted(SYSTEMS)
    assert sorted(p.stem for p in (REPO / "conf/preset").glob("*.yaml")) == presets.names()
