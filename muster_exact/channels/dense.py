"""Dense retrieval: cosine between the query vector and unit vectors (both normalised)."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from muster_exact.channels import Proposals, top_k

if TYPE_CHECKING:
    import numpy as np

    from muster_exact.models import Embedder


QUERY_CACHE = 4096


class DenseChannel:
    name = "dense"

    def __init__(self, vectors: np.ndarray, embedder: Embedder) -> None:
        self._vectors = vectors
        self._embedder = embedder
        # The same question is often asked again (systems compared on one store).
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def query_vector(self, query: str) -> np.ndarray:
        if query in self._query_vectors:
            self._query_vectors.move_to_end(query)
        else:
            self._query_vectors[query] = self._embedder.embed([query])[0]
            if len(self._query_vectors) > QUERY_CACHE:
                self._query_vectors.popitem(last=False)
        return self._query_vectors[query]

    def propose(self, query: str, k: int) -> Proposals:
        if len(self._vectors) == 0:
            return Proposals(self.name, (), ())
        query_vector = self.query_vector(query)
        units, scores = top_k(self._vectors @ query_vector, k)
        return Proposals(self.name, units, scores)
