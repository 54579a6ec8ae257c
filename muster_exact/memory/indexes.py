"""The channels a memory holds, built from a cut: each one its rules name, from one
:class:`~muster_exact.channels.given.Given` (BM25 over unit texts, the parent graph over unit
entities, the piece vectors through the vector cache), and grown or re-ruled the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from muster_exact.cache.vectors import VectorCache, default_path
from muster_exact.channels import CHANNELS
from muster_exact.channels.embedding import embedding_pieces
from muster_exact.channels.given import BuiltChannel, Given
from muster_exact.derive.cut import Cut

__all__ = ["built", "embedding_pieces", "unit_texts"]


def _cache(cache: VectorCache | Path | str | bool | None) -> VectorCache:
    if isinstance(cache, VectorCache):
        return cache
    if cache is False:
        return VectorCache(None)
    # A file of vectors only: damaged, this process goes on without it (a cache is a help).
    if cache is None or cache is True:
        return VectorCache(default_path(), disposable=True)
    return VectorCache(Path(cache), disposable=True)


def built(given: Given, names: Sequence[str]) -> dict[str, BuiltChannel]:
    """Each named channel built from ``given``, in the registry's order (each stage's seconds in
    ``given.timings``)."""
    wanted = set(names)
    return {name: _channel_class(name).build(given) for name in CHANNELS.names() if name in wanted}


def _channel_class(name: str) -> type[BuiltChannel]:
    entry = CHANNELS.get(name)
    if not hasattr(entry, "build"):
        raise TypeError(
            f"channel {name!r} ({entry!r}) has no build(given): see muster_exact/channels/given.py"
        )
    return entry


def unit_texts(cut: Cut) -> list[str]:
    """The text each unit is embedded, indexed and reranked by (the caches' keys hash these)."""
    return [cut.retrieval_text(u) for u in cut.units]
