"""The registry behind each Hydra config group that names things (``benchmark=``, ``system=``...).

A group's options are its files, ``conf/<group>/*.yaml``; what the harness
runs is the group's registry. This table says which registry a group is, so
a test can hold the two to the same names (``tests/harness/test_groups.py``).
Entries are lazy: reading it imports no stage and no benchmark adapter.
"""

from __future__ import annotations

from typing import Any

from muster_exact.core.registry import Registry

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
