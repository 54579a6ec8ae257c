"""Dense retrieval: cosine between the query vector and piece vectors, pooled per unit.

A unit the embedder reads whole is one piece; a longer one is several
(``muster_exact.derive.pieces``). A unit's score is the max of its pieces' cosines
(``max``), or their mean (``mean``, measured as the alternative).

Under the ``dense_feedback="rocchio"`` rule the query vector is moved towards the best piece of
each of its top ``FEEDBACK_DEPTH`` units before the units are scored again (Rocchio 1971, as
pseudo-relevance feedback: alpha 1, beta 0.75, no negatives, the SMART values that Manning,
Raghavan and Schütze's textbook gives; depth 10, the usual feedback depth).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from muster_exact.channels import Proposals, Recent, top_k
from muster_exact.channels.embedding import embedding_pieces, piece_vectors
from muster_exact.channels.given import Given
from muster_exact.derive.pieces import Pieces
from muster_exact.models import load_embedder
from muster_exact.models.lanes import one_blas_thread

if TYPE_CHECKING:
    import numpy as np

    from muster_exact.models import Embedder

Pooling = Literal["max", "mean"]
POOLINGS: tuple[Pooling, ...] = ("max", "mean")
# Piece vectors scored per float64 block: a copy that stays in the CPU's cache. Measured on 30,000
# pieces: 4 ms a query in blocks of 256 rows, 19 ms in one block (float32 alone: 0.9 ms).
SCORE_ROWS = 256
FEEDBACK_DEPTH, ALPHA, BETA = 10, 1.0, 0.75
FEEDBACKS = ("none", "rocchio")

# Query vectors by (embedder, query), shared by every dense channel of the process: the same
# question asked of another build of the same store (another preset, the native rules) or of
# another store is embedded once. The vector is the one a lone embed([query]) gives, so a
# context never depends on what was asked before.
_QUERY_VECTORS: Recent[np.ndarray] = Recent(size=8192)


class DenseChannel:
    name = "dense"

    def __init__(
        self,
        vectors: np.ndarray,
        embedder: Embedder,
        piece_start: Sequence[int] | None = None,
        pooling: str = "max",
        feedback: str = "none",
    ) -> None:
        import numpy as np

        self._vectors = vectors
        self._embedder = embedder
        self.pooling = pooling
        self.feedback = feedback
        n_pieces = len(vectors)
        # piece_start[u] is unit u's first row; None: one row per unit.
        self._start = np.asarray(piece_start if piece_start is not None else range(n_pieces), dtype=np.int64)
        self._one_per_unit = len(self._start) == n_pieces
        counts = np.diff(np.append(self._start, n_pieces))
        self._counts = np.maximum(counts, 1)
        self._proposed: Recent[Proposals] = Recent()
        self.pieces = Pieces((), (), ())  # what was embedded, set by build and grown
        self.embedded = 0  # pieces the model embedded for this build (not memo, not cache)

    @classmethod
    def build(cls, given: Given) -> DenseChannel:
        """Each unit's pieces, embedded (the model loaded once per process)."""
        with given.timed("pieces"):
            pieces = embedding_pieces(given.cut, given.models, given.rules.pieces, given.memo)
        with given.timed("load_models"):
            embedder = load_embedder(given.models.embedder)
        with given.timed("embed"):
            vectors, embedded = piece_vectors(
                pieces.texts, embedder.model_id, embedder.embed, given.cache, given.memo
            )
        channel = cls(vectors, embedder, pieces.start, given.rules.pooling, given.rules.dense_feedback)
        channel.pieces, channel.embedded = pieces, embedded
        return channel

    def grown(self, given: Given, keep: int) -> DenseChannel:
        """The first ``keep`` units' pieces and vectors kept; the new units' pieces embedded."""
        import numpy as np

        with given.timed("pieces"):
            new_units = given.cut.units[keep:]
            tail = embedding_pieces(
                dataclasses.replace(given.cut, units=new_units), given.models, given.rules.pieces, given.memo
            )
            kept = self._first_piece(keep)
            pieces = Pieces(
                (*self.pieces.texts[:kept], *tail.texts),
                (*self.pieces.unit[:kept], *tail.unit),
                (*self.pieces.start[:keep], *(kept + s for s in tail.start)),
            )
        with given.timed("embed"):
            new_vectors, embedded = piece_vectors(
                tail.texts, self._embedder.model_id, self._embedder.embed, given.cache, given.memo
            )
            vectors = (
                np.vstack([self._vectors[:kept], new_vectors]) if len(new_vectors) else self._vectors[:kept]
            )
        channel = DenseChannel(
            vectors, self._embedder, pieces.start, given.rules.pooling, given.rules.dense_feedback
        )
        channel.pieces, channel.embedded = pieces, embedded
        return channel

    def ruled(self, given: Given) -> DenseChannel:
        rules = given.rules
        if (rules.pooling, rules.dense_feedback) == (self.pooling, self.feedback):
            return self
        return self.pooled(rules.pooling, rules.dense_feedback)

    def texts_from(self, unit: int) -> Sequence[str]:
        return self.pieces.texts[self._first_piece(unit) :]

    def _first_piece(self, unit: int) -> int:
        """Unit ``unit``'s first piece (all pieces past the last unit)."""
        return self.pieces.start[unit] if unit < len(self.pieces.start) else len(self.pieces.texts)

    def pooled(self, pooling: str, feedback: str | None = None) -> DenseChannel:
        """The same vectors (and query cache) under another pooling (and feedback rule)."""
        other = copy.copy(self)
        other.pooling = pooling
        other.feedback = self.feedback if feedback is None else feedback
        other._proposed = Recent()  # the query vectors stay shared; pooled scores do not
        return other

    def query_vector(self, query: str) -> np.ndarray:
        return _QUERY_VECTORS.get((self._embedder.model_id, query), lambda: self._embedder.embed([query])[0])

    def scores(self, query: str) -> np.ndarray:
        """Every unit's pooled score for ``query``: computed in float64, rounded to float32.

        Why: a float32 dot product's last bit follows the BLAS kernel (the SIMD width, where a
        row falls in the blocking), so two copies of one text could score an ulp apart on one CPU
        and tie on another. The float64 sums agree to ~1e-16, far below the float32 rounding, so
        the rounded scores agree, and equal scores go to the earlier unit (``top_k``)."""
        import numpy as np

        query_vector = self.query_vector(query).astype(np.float64)
        pooled, piece_scores = self._pooled(query_vector)
        if self.feedback == "rocchio" and len(self._vectors):
            pooled, _ = self._pooled(self._moved(query_vector, pooled, piece_scores))
        rounded: np.ndarray = pooled.astype(np.float32)
        return rounded

    def _pooled(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each unit's pooled float64 score for ``query_vector``, and each piece's."""
        import numpy as np

        piece_scores = np.empty(len(self._vectors), dtype=np.float64)
        with one_blas_thread():  # small products: a thread per core would only wait (lanes)
            for start in range(0, len(self._vectors), SCORE_ROWS):
                block = self._vectors[start : start + SCORE_ROWS].astype(np.float64)
                piece_scores[start : start + SCORE_ROWS] = block @ query_vector
        if self._one_per_unit:
            pooled = piece_scores
        elif self.pooling == "mean":
            pooled = np.add.reduceat(piece_scores, self._start) / self._counts
        else:
            pooled = np.maximum.reduceat(piece_scores, self._start)
        return pooled, piece_scores

    def _moved(self, query_vector: np.ndarray, pooled: np.ndarray, piece_scores: np.ndarray) -> np.ndarray:
        """Rocchio's query: alpha times the query plus beta times the centroid of the best piece
        of each of the top ``FEEDBACK_DEPTH`` units, unit length again (so scores stay cosines)."""
        import numpy as np

        units, _ = top_k(pooled.astype(np.float32), FEEDBACK_DEPTH)
        best = []
        for unit in units:
            first = int(self._start[unit])
            best.append(first + int(np.argmax(piece_scores[first : first + int(self._counts[unit])])))
        centroid = self._vectors[best].astype(np.float64).mean(axis=0)
        moved = ALPHA * query_vector + BETA * centroid
        norm = float(np.linalg.norm(moved))
        return moved / norm if norm else query_vector

    def propose(self, query: str, k: int) -> Proposals:
        return self._proposed.get((query, k), lambda: self._propose(query, k))

    def _propose(self, query: str, k: int) -> Proposals:
        if len(self._vectors) == 0:
            return Proposals(self.name, (), ())
        units, scores = top_k(self.scores(query), k)
        return Proposals(self.name, units, scores)
