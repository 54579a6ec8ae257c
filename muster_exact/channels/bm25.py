"""BM25 over unit texts: rank-bm25's Okapi with one fixed tokenizer (lowercase words)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from muster_exact.channels import Proposals, top_k
from muster_exact.models import require

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25Channel:
    name = "bm25"

    def __init__(self, texts: Sequence[str]) -> None:
        rank_bm25 = require("rank_bm25")
        # rank-bm25 divides by the mean length; an all-empty corpus gets one dummy token.
        corpus = [tokenize(t) or ["\x00"] for t in texts]
        self._index = rank_bm25.BM25Okapi(corpus)

    def propose(self, query: str, k: int) -> Proposals:
        terms = tokenize(query)
        if not terms:
            return Proposals(self.name, (), ())
        units, scores = top_k(self._index.get_scores(terms), k, positive_only=True)
        return Proposals(self.name, units, scores)
