"""A benchmark store's built memories, shared by the stages that retrieve (contexts, answer).

One build per store (the vectors), the native rules applied to it without
embedding again; builds are kept for the jobs of one multirun process,
since systems share stores.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from pathlib import Path

from omegaconf import DictConfig

from harness.systems import Memories
from muster_exact.core import progress
from muster_exact.memory import build
from muster_exact.rules import EXACT, NATIVE
from muster_exact.verify.corpora import BenchmarkStore

_MEMORIES: OrderedDict[tuple[str, ...], tuple[Memories, float]] = OrderedDict()
_MEMORY_SLOTS = 64


def memory_for(
    store: BenchmarkStore, cfg: DictConfig, cache_path: Path | None
) -> tuple[Memories, float, bool]:
    """The store's memory under exact and native rules, the seconds its build took, and whether
    it was reused from an earlier job of this process."""
    digest = hashlib.sha256(store.source.text.encode()).hexdigest()
    slot = (store.name, digest, cfg.preset.name, cfg.models.name)
    if slot in _MEMORIES:
        _MEMORIES.move_to_end(slot)
        memories, seconds = _MEMORIES[slot]
        return memories, seconds, True
    started = time.perf_counter()
    shown = bool(cfg.stage.progress)  # a long build says what it does (issue 53: minutes of silence)
    with progress.shown(shown):
        exact = build(
            store.source,
            preset=cfg.preset.name,
            models=cfg.models.name,
            cache=cache_path,
            rules=EXACT,
            progress=shown,
        )
        memories = Memories(exact, exact.under(NATIVE))
    seconds = time.perf_counter() - started
    _MEMORIES[slot] = (memories, seconds)
    while len(_MEMORIES) > _MEMORY_SLOTS:
        _MEMORIES.popitem(last=False)
    return memories, seconds, False
