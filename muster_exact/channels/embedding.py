"""What the dense channel embeds, and its vectors: the pieces of each unit by the embedder's own
window (:mod:`muster_exact.derive.pieces`), each embedded once per model and text (the memo, else
the vector cache, else the model)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from muster_exact.cache.memo import COUNT, Codec, Memo, counts
from muster_exact.cache.vectors import VectorCache, embed_cached
from muster_exact.core.progress import step
from muster_exact.derive.cut import Cut
from muster_exact.derive.pieces import Pieces, WindowLike, pieces_of
from muster_exact.models import Models, load_window

if TYPE_CHECKING:
    import numpy as np

SPANS: Codec[list[tuple[int, int]]] = Codec(
    lambda s: [list(x) for x in s], lambda v: [(a, b) for a, b in (counts(pair) for pair in v)]
)


def embedding_pieces(cut: Cut, models: Models, pieces_rule: str, memo: Memo | None = None) -> Pieces:
    """What the embedder is shown of each unit (muster_exact.derive.pieces), by the model's own window."""
    window: WindowLike | None = load_window(models.embedder) if pieces_rule == "records" else None
    if window is not None and memo is not None:
        window = MemoWindow(window, memo)
    return pieces_of(cut, window, pieces_rule)  # type: ignore[arg-type]


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


def piece_vectors(
    texts: tuple[str, ...], model_id: str, embed: Any, cache: VectorCache, memo: Memo
) -> tuple[np.ndarray, int]:
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
    """The embedder's one call, with a line as it starts and as it ends where progress is shown;
    in between, an embedder that counts its passes (the numpy and torch float64 ones) says its
    estimate and then draws a bar or writes lines (:func:`muster_exact.core.progress.embedding`)."""

    def call(texts: list[str]) -> Any:
        with step(f"embed ({model_id})", len(texts), "pieces"):
            return embed(texts)

    return call
