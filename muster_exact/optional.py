"""Optional dependencies: imported on first use, or one typed error naming the install to run.

The model libraries (``muster-memory[models]``, ``[onnx]``) and the agent frameworks of
:mod:`muster_exact.integrations` are each imported through :func:`require`, so a missing one
reads the same wherever it is missing.
"""

from __future__ import annotations

import importlib
from typing import Any

from muster_exact.errors import MusterError


class MissingExtra(MusterError):
    """An optional dependency is not installed."""


def require(module: str, install: str) -> Any:
    """Import ``module``, or raise :class:`MissingExtra` saying to run ``install``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{module} is not installed ({exc}); run {install}") from None
