"""The channels' indexes from a cut: BM25 over unit texts, the parent graph over unit entities, and the
piece vectors (embedded once per model and text, through the vector cache)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from muster_exact.cache.memo import COUNT, Codec, Memo, counts, strings
from muster_exact.cache.vectors import VectorCache, default_path, embed_cached
from muster_exact.channels.bm25 import BM25Channel
from muster_exact.channels.graph import GraphChannel
from muster_exact.core.progress import step
from muster_exact.derive.cut import Cut, Unit
from muster_exact.derive.pieces import Pieces, WindowLike, pieces_of
from muster_exact.derive.plan import Plan
from muster_exact.models import (
    Models,
    load_window,
)
from muster_exact.rules import Rules
from muster_exact.text import entities

ENTITIES: Codec[frozenset[str]] = Codec(sorted, lambda v: frozenset(strings(v)))


SPANS: Codec[list[tuple[int, int]]] = Codec(
    lambda s: [list(x) for x in s], lambda v: [(a, b) for a, b in (counts(pair) for pair in v)]
)


def _cache(cache: VectorCache | Path | str | bool | None) -> VectorCache:
    if isinstance(cache, VectorCache):
        return cache
    if cache is False:
        return VectorCache(None)
    if cache is None or cache is True:
        return VectorCache(default_path())
    return VectorCache(Path(cache))


def indexes(
    plan: Plan,
    cut: Cut,
    models: Models,
    rules: Rules,
    memo: Memo,
    timings: dict[str, float],
    texts: list[str] | None = None,
) -> tuple[BM25Channel, GraphChannel, Pieces]:
    """The BM25 index, the entity graph over parents and the pieces to embed: every stage of a
    build after the cut but the embedder (each stage's seconds added to ``timings``). ``texts``:
    the units' texts, when the caller has them already."""
    texts = texts if texts is not None else unit_texts(cut)
    started = time.perf_counter()
    bm25 = BM25Channel(texts, rules.lexical, memo)
    timings["bm25"] = time.perf_counter() - started

    started = time.perf_counter()
    unit_entities = _unit_entities(cut.units, texts, memo)
    policy = plan.retrieval.policy if plan.retrieval else "flrs"
    graph = GraphChannel(
        unit_entities,
        [u.parent for u in cut.units],
        cut.parents,
        policy,  # type: ignore[arg-type]
    ).assemble()  # a fresh build assembles every index (a grown memory: on the graph's first use)
    timings["graph"] = time.perf_counter() - started

    started = time.perf_counter()
    pieces = embedding_pieces(cut, models, rules, memo)
    timings["pieces"] = time.perf_counter() - started
    return bm25, graph, pieces


def _unit_entities(units: Sequence[Unit], texts: Sequence[str], memo: Memo) -> list[frozenset[str]]:
    """Each unit's entities (from its retrieval text), and on a numbered log its slot."""
    found = memo.many("entities", texts, lambda new: [frozenset(entities.extract(t)) for t in new], ENTITIES)
    return [ents | {unit.slot} if unit.slot else ents for unit, ents in zip(units, found, strict=True)]


def embedding_pieces(cut: Cut, models: Models, rules: Rules, memo: Memo | None = None) -> Pieces:
    """What the embedder is shown of each unit (muster_exact.derive.pieces), by the model's own window."""
    window: WindowLike | None = load_window(models.embedder) if rules.pieces == "records" else None
    if window is not None and memo is not None:
        window = MemoWindow(window, memo)
    return pieces_of(cut, window, rules.pieces)  # type: ignore[arg-type]


class MemoWindow:
    """An embedder's window whose word-piece counts are kept in a memo."""

    def __init__(self, window: Any, memo: Memo) -> None:
        self.size = window.size
        self._window = window
        self._kind = f"window:{window.model_id}"
        self._memo = memo

    def pieces(self, texts: list[str]) -> list[int]:
        return self._memo.many(self._kind, texts, self._window.pieces, COUNT)

    def windows(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        return self._memo.many(f"windows:{self._window.model_id}", texts, self._window.windows, SPANS)


def _vectors(
    texts: tuple[str, ...], model_id: str, embed: Any, cache: VectorCache, memo: Memo
) -> tuple[Any, int]:
    """Piece vectors (rows in order) and how many were embedded: from the memo, else the vector
    cache, else the model."""
    import numpy as np

    embedded = 0
    kind = f"vectors:{model_id}"

    def compute(missing: list[str]) -> list[Any]:
        nonlocal embedded
        matrix, embedded = embed_cached(missing, model_id, _announced(embed, model_id), cache)
        memo.found_elsewhere(kind, len(missing) - embedded)
        return list(matrix)

    rows = memo.many(kind, texts, compute, whole=True)  # one call: the embedder's batches
    if not rows:
        return np.zeros((0, 0), dtype=np.float32), 0
    return np.vstack(rows), embedded


def _announced(embed: Any, model_id: str) -> Any:
    """The embedder's one call, with a line as it starts and as it ends where progress is shown
    (on a terminal the embedder draws its own bar too)."""

    def call(texts: list[str]) -> Any:
        with step(f"embed ({model_id})", len(texts), "pieces"):
            return embed(texts)

    return call


def unit_texts(cut: Cut) -> list[str]:
    """The text each unit is embedded, indexed and reranked by (the caches' keys hash these)."""
    return [cut.retrieval_text(u) for u in cut.units]
