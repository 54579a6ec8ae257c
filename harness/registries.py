"""The registry behind each Hydra config group that names things (``benchmark=``, ``system=``...).

A group's options are its files, ``conf/<group>/*.yaml``; what the harness
runs is the group's registry. This table says which registry a group is, so
a test can hold the two to the same names (``tests/harness/test_groups.py``).
Entries are lazy: reading it imports no stage and no benchmark adapter.
"""

from __future__ import annotations

from collections.abc import Iterable

from muster_exact.registry import Registry

GROUPS: Registry[Iterable[str]] = Registry(
    "config group",
    {
        "benchmark": "harness.benchmarks:REGISTRY",
        "preset": "muster_exact.presets:REGISTRY",
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
    found = GROUPS.get(group)
    if isinstance(found, Registry):
        return found.check(name)
    return Registry(group, dict.fromkeys(found, group)).check(name)  # a plain mapping of names
