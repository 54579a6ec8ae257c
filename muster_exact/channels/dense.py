"""Dense retrieval: cosine between the query vector and unit vectors (both normalised)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from muster_exact.channels import Proposals, top_k

if TYPE_CHECKING:
    import numpy as np

    from muster_exact.models import Embedder


class DenseChannel:
    name = "dense"

    def __init__(self, vectors: np.ndarray, embedder: Embedder) -> None:
        self._vectors = vectors
        self._embedder = embedder

    def propose(self, query: str, k: int) -> Proposals:
        if len(self._vectors) == 0:
            return Proposals(self.name, (), ())
        query_vector = self._embedder.embed([query])[0]
        units, scores = top_k(self._vectors @ query_vector, k)
        return Proposals(self.name, units, scores)
