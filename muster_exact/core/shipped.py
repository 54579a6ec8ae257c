"""The files the library reads that ship inside the package, beside its code.

``conf/preset/*.yaml`` (the frozen presets; the harness's Hydra search path
holds ``pkg://muster_exact.conf``, so Hydra reads these same files) and
``manifests/`` (``cuts.json`` and ``contexts/``, what ``muster verify``
compares against). They are found with :mod:`importlib.resources`, so a
clone, an editable install and an installed wheel each read the one copy.
What only the harness reads stays at the repository root (``conf/``,
``manifests/data.json``...): the harness runs from a clone.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from muster_exact.core.errors import ResourceMissing

PACKAGE = "muster_exact"


def shipped(*parts: str) -> Path:
    """The shipped file or folder ``parts`` under the package, e.g. ``shipped("manifests")``."""
    root = resources.files(PACKAGE)
    if not isinstance(root, Path):  # imported from an archive (zipimport): no folder to list
        raise ResourceMissing(f"{PACKAGE} is imported from {root}, not a folder; install the wheel unpacked")
    return root.joinpath(*parts)
