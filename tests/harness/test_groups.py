"""The Hydra groups and the registries cannot drift.

Each group that names things (``benchmark=``, ``system=``...) offers exactly
its registry's names: a file where a name has settings of its own, a
generated option for every other name, and no file that only repeats its name;
every registered name and every group file composes with Hydra and passes the
harness's config check.
"""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from harness import registries
from harness.app import check_choices
from harness.checks import check, preset_family
from harness.config import ConfigError, register
from harness.registries import GROUP_ROOTS, files, group_dir
from muster_exact.memory import presets
from tests.conftest import REPO

CONF = REPO / "conf"
NAMED = registries.GROUPS.names()
SETTINGS = ("reader", "judge", "paths")  # groups of settings, not of named things: no registry
OPTIONAL = ("local",)  # git-ignored machine overrides, present on some machines only


def choices() -> list[tuple[str, str]]:
    """Every (group, name) Hydra may be asked for: the registered names and the group files."""
    found = {(group, name) for group in NAMED for name in registries.names(group)}
    found |= {(group, name) for group in (*NAMED, *SETTINGS) for name in files(group)}
    return sorted(found)


@pytest.fixture(scope="module", autouse=True)
def hydra_config():
    register()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        yield


def test_every_group_folder_is_registered_or_a_settings_group() -> None:
    folders = [p for root in GROUP_ROOTS for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"]
    groups = [p.name for p in folders if p.name not in OPTIONAL]
    assert len(groups) == len(set(groups)), "a group in two roots"
    assert set(groups) <= {*NAMED, *SETTINGS}


def test_the_preset_group_is_the_library_s_own_folder() -> None:
    """Hydra reads the presets the library reads (pkg://muster_exact.conf), not a copy."""
    assert group_dir("preset") == presets.preset_dir()
    assert not (CONF / "preset").exists()


@pytest.mark.parametrize("group", [*NAMED, *SETTINGS])
def test_a_misspelt_choice_is_answered_before_hydra_composes(group: str) -> None:
    name = (registries.names(group) if group in NAMED else files(group))[0]
    with pytest.raises(ConfigError) as raised:
        check_choices([f"{group}={name}x"])
    assert name in str(raised.value).partition("did you mean ")[2].rstrip("?").split(", ")


@pytest.mark.parametrize("group", NAMED)
def test_a_group_file_is_a_registered_name_with_settings_of_its_own(group: str) -> None:
    assert set(files(group)) <= set(registries.names(group)), "a file no registry names"
    folder = group_dir(group)
    for name in files(group):
        text = (folder / f"{name}.yaml").read_text()  # type: ignore[operator]
        settings = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
        assert settings != [f"name: {name}"], (
            f"{folder}/{name}.yaml only names itself: the registry generates it"
        )


def test_options_that_only_name_a_choice_are_generated() -> None:
    assert set(registries.generated("system")) == set(registries.names("system"))
    assert "locomo" in registries.generated("benchmark") and "mab" not in registries.generated("benchmark")


def composed(*overrides: str) -> DictConfig:
    return compose("config", overrides=list(overrides))


def a_whole_run(group: str, name: str) -> DictConfig:
    """``group=name`` with what makes it a run on its own: a benchmark with one of the presets
    frozen for it, a preset with the benchmark it was frozen for."""
    cfg = composed(f"{group}={name}")
    if group == "benchmark":
        family = preset_family(cfg)
        preset = next(p for p in presets.names() if presets.load(p).benchmark == family)
        cfg = composed(f"{group}={name}", f"preset={preset}")
    if group == "preset":
        cfg = composed(f"{group}={name}", f"benchmark={presets.load(name).benchmark}")
    return cfg


@pytest.mark.parametrize(("group", "name"), choices())
def test_every_choice_composes_and_passes_the_config_check(group: str, name: str) -> None:
    cfg = a_whole_run(group, name)
    if group in NAMED:
        assert cfg[group].name == name
    check(cfg)
