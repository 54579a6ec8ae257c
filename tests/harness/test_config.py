"""Every preset x benchmark config composes with Hydra's compose API, typed; the config check
holds a preset to its frozen file and to the benchmark it was frozen for."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from harness.checks import check
from harness.config import ConfigError, register
from harness.llm import Endpoint, endpoint_from
from muster_exact.core.errors import MusterError
from muster_exact.memory import presets
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


def test_a_preset_runs_only_with_the_benchmark_it_was_frozen_for() -> None:
    check(compose("config", overrides=["benchmark=locomo_refined", "preset=locomo.u20"]))
    with pytest.raises(
        ConfigError, match=r"preset locomo\.u10 is frozen for benchmark locomo, not beam; .*beam\.u10"
    ):
        check(compose("config", overrides=["benchmark=beam", "preset=locomo.u10"]))
    with pytest.raises(ConfigError, match=r"frozen for benchmark mab, not locomo_refined; .*locomo\.u10"):
        check(compose("config", overrides=["benchmark=locomo_refined", "preset=mab.u10"]))


@pytest.mark.parametrize("override", ["preset.units_read=5", "preset.mode=native", "preset.benchmark=beam"])
def test_a_frozen_preset_is_not_overridden(override: str) -> None:
    cfg = compose("config", overrides=[override])
    with pytest.raises(ConfigError, match=rf"preset locomo\.u10 is frozen .*{override.replace('.', '[.]')}"):
        check(cfg)


def test_the_endpoint_is_the_reader_and_judge_schema() -> None:
    cfg = compose("config", overrides=["reader=local", "judge=local", "judge.runs=3"])
    assert OmegaConf.get_type(cfg.reader).__name__ == "ReaderConfig" and cfg.reader.prompts == "official"
    assert OmegaConf.get_type(cfg.judge).__name__ == "JudgeConfig" and cfg.judge.runs == 3
    endpoint = endpoint_from(cfg.judge)
    assert endpoint == Endpoint("local-model", "http://127.0.0.1:8000/v1", None, max_tokens=512)
    assert endpoint.describe()["api_key_env"] is None and set(endpoint.describe()) == set(vars(endpoint))
    with pytest.raises(ConfigCompositionException):
        compose("config", overrides=["reader.max_tokens=many"])


def test_the_derived_schemas_survive_the_launchers_pickling() -> None:
    cfg = compose("config")
    again = pickle.loads(pickle.dumps(cfg))
    assert again == cfg and OmegaConf.get_type(again.preset).__name__ == "PresetConfig"


def test_models_name_may_be_a_local_model_directory_but_not_auto(tmp_path: Path) -> None:
    """``models.name=DIR`` runs local files; ``auto`` is refused: a run's record names its models."""
    from muster_exact.models import profile, resolve

    directory = resolve(profile("cpu-small").embedder)
    check(compose("config", overrides=["models=cpu-small", f"models.name={directory}"]))
    with pytest.raises(MusterError, match="no model directory"):
        check(compose("config", overrides=["models=cpu-small", f"models.name={tmp_path / 'none'}"]))
    with pytest.raises(MusterError, match="unknown model profile 'auto'"):
        check(compose("config", overrides=["models=cpu-small", "models.name=auto"]))


def test_a_question_limit_below_one_is_refused() -> None:
    check(compose("config", overrides=["benchmark.questions_per_store=1"]))
    with pytest.raises(ConfigError, match=r"benchmark\.questions_per_store must be at least 1 .*not 0"):
        check(compose("config", overrides=["benchmark.questions_per_store=0"]))


def test_a_store_subset_keeps_the_named_stores_and_refuses_an_unknown_one() -> None:
    from harness.benchmarks import selected
    from harness.config import BenchmarkConfig
    from muster_exact.verify.corpora import BenchmarkStore, Question

    def stores():
        for name in ("a", "b", "c"):
            questions = [Question(f"{name}{i}", f"q{i}", ("g",), "1") for i in range(3)]
            yield BenchmarkStore("x", name, None, questions)  # type: ignore[arg-type]

    subset = list(selected(stores(), BenchmarkConfig(name="x", stores=["c", "a"], questions_per_store=2)))
    assert [s.name for s in subset] == ["a", "c"] and [len(s.questions) for s in subset] == [2, 2]
    with pytest.raises(ConfigError, match=r"x has no store 'z'; its stores are a, b, c"):
        list(selected(stores(), BenchmarkConfig(name="x", stores=["a", "z"])))
