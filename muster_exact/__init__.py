"""MUSTER: long-term memory for LLM agents that keeps every word.

``import muster_exact`` is light (tiktoken at most, loaded on first use):
retrieval models, the harness and the servers are extras imported lazily.
"""

from __future__ import annotations

import logging

from muster_exact.declared import SourceOrder
from muster_exact.derive import Derived, analyse, derive, recut
from muster_exact.errors import (
    DataError,
    DeclaredError,
    InputError,
    ManifestError,
    MusterError,
    PlanError,
    ResourceMissing,
)
from muster_exact.explain import explain
from muster_exact.plan import Plan
from muster_exact.records import Source, from_records, from_text, read_file
from muster_exact.store import Store, StoreError

__version__ = "0.1.0"

__all__ = [
    "DataError",
    "DeclaredError",
    "Derived",
    "InputError",
    "ManifestError",
    "Memory",
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
    "derive",
    "explain",
    "from_records",
    "from_text",
    "read_file",
    "recut",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())


def __getattr__(name: str) -> object:
    # build() and Memory pull in numpy and the model libraries: loaded on first use only.
    if name in ("build", "Memory"):
        from muster_exact import memory

        return getattr(memory, name)
    raise AttributeError(f"module 'muster_exact' has no attribute {name!r}")
