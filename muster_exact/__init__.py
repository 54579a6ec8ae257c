"""MUSTER: long-term memory for LLM agents that keeps every word.

``import muster_exact`` is light (tiktoken at most, loaded on first use):
retrieval models, the harness and the servers are extras imported lazily.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from muster_exact.core.errors import (
    DataError,
    DeclaredError,
    InputError,
    ManifestError,
    ModelFallbackWarning,
    MusterError,
    PlanError,
    ResourceMissing,
)
from muster_exact.core.version import __version__ as __version__
from muster_exact.derive import Derived, analyse, derive, recut
from muster_exact.derive.declared import SourceOrder
from muster_exact.derive.plan import Plan
from muster_exact.retrieve.explain import explain
from muster_exact.store import Store, StoreError
from muster_exact.text.records import Source, from_records, from_text, read_file

if TYPE_CHECKING:  # loaded on first use (__getattr__); typed here for a type checker
    from muster_exact.memory import Memory, build
    from muster_exact.memory.collection import Collection, build_collection, derive_collection


__all__ = [
    "Collection",
    "DataError",
    "DeclaredError",
    "Derived",
    "InputError",
    "ManifestError",
    "Memory",
    "ModelFallbackWarning",
    "MusterError",
    "Plan",
    "PlanError",
    "ResourceMissing",
    "Source",
    "SourceOrder",
    "Store",
    "StoreError",
    "analyse",
    "build",
    "build_collection",
    "derive",
    "derive_collection",
    "explain",
    "from_records",
    "from_text",
    "read_file",
    "recut",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())


# What loads on first use, and from which module: build() and Memory pull in numpy and the model
# libraries, and the collection builds on them (muster/ reads this too, so both names agree).
LAZY = {
    "build": "memory",
    "Memory": "memory",
    "build_collection": "memory.collection",
    "derive_collection": "memory.collection",
    "Collection": "memory.collection",
}


def __getattr__(name: str) -> object:
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(f"muster_exact.{LAZY[name]}"), name)
    raise AttributeError(f"module 'muster_exact' has no attribute {name!r}")
