"""The registry behind each Hydra config group that names things (``benchmark=``, ``system=``...).

A group's options are its registry's names. A name with settings of its own
has a file, ``conf/<group>/<name>.yaml`` (a benchmark's splits, a preset);
every other name is generated here as the option ``name: <name>``
(:func:`store_options`), so no file only repeats a name and a new system or
stage is one registry entry. ``tests/harness/test_groups.py`` holds the files
to the registries. Entries are lazy: reading it imports no stage and no
benchmark adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from muster_exact.core.registry import Registry
from muster_exact.core.shipped import shipped

CONF = Path(__file__).resolve().parent.parent / "conf"
# Where config groups live: the harness's own, then the library's (the preset group, which
# conf/config.yaml puts on Hydra's search path as pkg://muster_exact.conf).
GROUP_ROOTS = (CONF, shipped("conf"))

GROUPS: Registry[Registry[Any]] = Registry(
    "config group",
    {
        "benchmark": "harness.benchmarks:REGISTRY",
        "preset": "muster_exact.memory.presets:REGISTRY",
        "models": "muster_exact.models:PROFILES",
        "system": "harness.systems:REGISTRY",
        "stage": "harness.app:STAGES",
    },
)


def names(group: str) -> list[str]:
    """The names the registry of ``group`` holds, in its order."""
    return list(GROUPS.get(group))


def check(group: str, name: str) -> str:
    """``name`` when the registry of ``group`` holds it, else that registry's one typed error."""
    return GROUPS.get(group).check(name)


def group_dir(group: str) -> Path | None:
    """The folder of config group ``group``, None when no root holds one."""
    return next((root / group for root in GROUP_ROOTS if (root / group).is_dir()), None)


def files(group: str) -> list[str]:
    """The names of ``group``'s option files, sorted."""
    folder = group_dir(group)
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder else []


def generated(group: str) -> list[str]:
    """The registered names of ``group`` that have no file: options that only name a choice."""
    written = set(files(group))
    return [name for name in names(group) if name not in written]


def store_options() -> None:
    """Each generated option in Hydra's ConfigStore, as the file ``name: <name>`` would be."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for group in GROUPS.names():
        for name in generated(group):
            store.store(group=group, name=name, node={"name": name})
