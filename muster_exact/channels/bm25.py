"""BM25 over unit texts: rank-bm25's Okapi (its defaults) over one lexical analyser's terms."""

from __future__ import annotations

from collections.abc import Sequence

from muster_exact.channels import Proposals, Recent, top_k
from muster_exact.lexical import analyser
from muster_exact.models import require


class BM25Channel:
    name = "bm25"

    def __init__(self, texts: Sequence[str], analyser_name: str = "words") -> None:
        rank_bm25 = require("rank_bm25")
        self.analyser = analyser_name
        self._terms = analyser(analyser_name)
        # rank-bm25 divides by the mean length; an all-empty corpus gets one dummy token.
        corpus = [self._terms(t) or ["\x00"] for t in texts]
        self._index = rank_bm25.BM25Okapi(corpus)
        self._proposed: Recent[Proposals] = Recent()

    def scores(self, query: str) -> object:
        """Every unit's BM25 score for ``query`` (an array), or None when the query has no terms."""
        terms = self._terms(query)
        return self._index.get_scores(terms) if terms else None

    def propose(self, query: str, k: int) -> Proposals:
        return self._proposed.get((query, k), lambda: self._propose(query, k))

    def _propose(self, query: str, k: int) -> Proposals:
        scores = self.scores(query)
        if scores is None:
            return Proposals(self.name, (), ())
        units, values = top_k(scores, k, positive_only=True)
        return Proposals(self.name, units, values)
