"""``import muster``: the MUSTER library under the name its distribution (muster-memory) documents.

The public API is :mod:`muster_exact`'s, the same objects: ``muster.build``,
``muster.Store``, ``muster.retrieve.explain``, ``muster.derive``... Every submodule is
the same module object under both names (``muster.integrations is
muster_exact.integrations``): importing ``muster.<name>`` imports
``muster_exact.<name>`` and binds it (:class:`_Alias`), so a class has one
identity whichever name imported it. Like ``import muster_exact``, this
imports no retrieval model: ``build`` and ``Memory`` load on first use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING

import muster_exact

# `X as X`: re-exported, the same objects as muster_exact's (tests/package/test_muster_package.py).
from muster_exact import DataError as DataError
from muster_exact import DeclaredError as DeclaredError
from muster_exact import Derived as Derived
from muster_exact import InputError as InputError
from muster_exact import ManifestError as ManifestError
from muster_exact import ModelFallbackWarning as ModelFallbackWarning
from muster_exact import MusterError as MusterError
from muster_exact import Plan as Plan
from muster_exact import PlanError as PlanError
from muster_exact import ResourceMissing as ResourceMissing
from muster_exact import Source as Source
from muster_exact import SourceOrder as SourceOrder
from muster_exact import Store as Store
from muster_exact import StoreError as StoreError
from muster_exact import __version__ as __version__
from muster_exact import analyse as analyse
from muster_exact import derive as derive
from muster_exact import explain as explain
from muster_exact import from_records as from_records
from muster_exact import from_text as from_text
from muster_exact import read_file as read_file
from muster_exact import recut as recut

if TYPE_CHECKING:  # loaded on first use (__getattr__); typed here for a type checker
    from muster_exact.memory import Memory as Memory
    from muster_exact.memory import build as build
    from muster_exact.memory.collection import Collection as Collection
    from muster_exact.memory.collection import build_collection as build_collection
    from muster_exact.memory.collection import derive_collection as derive_collection

__all__ = list(muster_exact.__all__)
_TARGET = "muster_exact"


def _real(alias: str) -> str:
    """``muster_exact.x.y`` for ``muster.x.y``."""
    return f"{_TARGET}{alias[len(__name__) :]}"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``muster.<name>`` found as ``muster_exact.<name>``: the loader imports the real module and
    puts it in ``sys.modules`` under the alias, which the import system then returns (it reads
    ``sys.modules`` again after loading), so no second copy of any module is ever made."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(f"{__name__}.") or fullname == f"{__name__}.__main__":
            return None
        if importlib.util.find_spec(_real(fullname)) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a placeholder; exec_module swaps the real module in

    def exec_module(self, module: types.ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(_real(module.__name__))


# First: the path finder would otherwise load muster.integrations.openai_tools a second time from
# muster_exact.integrations' folder. muster/__main__.py (python -m muster) is muster's own.
if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Alias())


def __getattr__(name: str) -> object:
    # build(), Memory and the collection load on first use, as in muster_exact (its LAZY); a
    # submodule (muster.integrations) is imported on first access, as muster_exact's own object.
    if name in muster_exact.LAZY:
        return getattr(muster_exact, name)
    if not name.startswith("_") and importlib.util.find_spec(_real(f"{__name__}.{name}")) is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
