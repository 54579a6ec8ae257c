"""Lexical variants measured by the CPU retrieval study (issue 28) and not adopted.

Each is a BM25 channel with the library's channel shape (``name``, ``propose(query, k)``), built
on the library's own index (``muster_exact.channels.bm25``) and analyser, so the study swaps it
into a built memory and every step after it (fusion, floors, selection, assembly, the budgeted
baseline) is the library's. They live here, beside the study, because none became a rule:
``results/study/cpu_retrieval.md`` has what each did,
``docs/decisions/0125-lexical-variants-not-adopted.md`` why none was kept.

* :class:`RecordBM25`: BM25 over the records inside each unit (a one-record unit: the unit), with
  the records' own statistics, a unit scored by its best record: the MaxP rule of passage-level
  retrieval (Callan 1994; Dai and Callan 2019), which the dense channel already follows.
* :class:`RM3BM25`: RM3 pseudo-relevance feedback (Abdul-Jaleel et al. 2004, as Anserini's
  ``Rm3Reranker`` computes it) with Anserini's defaults, none fitted here: 10 feedback units,
  10 expansion terms, the original query weighted 0.5; feedback terms of two or more
  alphanumeric characters found in at most 10% of units; the expanded query scored as a
  weighted sum of each term's BM25 share.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from muster_exact.channels import top_k
from muster_exact.channels.bm25 import EMPTY, BM25Channel, BM25Index, Document, Vocabulary
from muster_exact.derive.pieces import record_spans
from muster_exact.memory import Memory
from muster_exact.text.lexical import analyser

FEEDBACK_DOCS, FEEDBACK_TERMS, ORIGINAL_WEIGHT = 10, 10, 0.5  # Anserini's RM3 defaults
MAX_DOCUMENT_SHARE = 0.1  # Anserini drops feedback terms found in more than 10% of documents


class _Lexical:
    """BM25 over documents grouped by unit; a unit's score is its best document's."""

    name = "bm25"

    def __init__(self, groups: Sequence[Sequence[str]], analyser_name: str) -> None:
        self._terms = analyser(analyser_name)
        self.vocabulary = Vocabulary()
        self.documents: list[Document] = []
        starts = []
        for texts in groups:
            starts.append(len(self.documents))
            self.documents += [self.vocabulary.document(self._terms(t) or [EMPTY]) for t in texts]
        self._start = np.array(starts, dtype=np.int64)
        self._one_per_unit = len(self.documents) == len(groups)
        self.index = BM25Index(self.documents, len(self.vocabulary))
        ids = [d.ids for d in self.documents]
        self.df = np.bincount(np.concatenate(ids), minlength=len(self.vocabulary)) if ids else np.zeros(0)

    def unit_scores(self, document_scores: np.ndarray) -> np.ndarray:
        if self._one_per_unit or not len(document_scores):
            return document_scores
        return np.maximum.reduceat(document_scores, self._start)  # type: ignore[no-any-return]

    def query_ids(self, query: str) -> list[int | None]:
        return [self.vocabulary.get(t) for t in self._terms(query)]

    def weighted(self, terms: dict[int, float]) -> np.ndarray:
        score = np.zeros(self.index.size)
        for term, weight in sorted(terms.items()):
            score += weight * self.index.scores([term])
        return score

    # The library channel's proposal rule (top k with a positive score), over these scores.
    propose = BM25Channel._propose

    def scores(self, query: str) -> np.ndarray | None:
        ids = self.query_ids(query)
        return self.unit_scores(self.index.scores(ids)) if ids else None


class RecordBM25(_Lexical):
    """BM25 per record inside each unit, lifted to the unit by its best record (MaxP)."""

    def __init__(self, memory: Memory, analyser_name: str) -> None:
        cut = memory.cut
        super().__init__(
            [record_spans(cut, u, t) for u, t in zip(cut.units, memory.unit_texts, strict=True)],
            analyser_name,
        )


class RM3BM25(_Lexical):
    """Unit BM25 with the query expanded by RM3 from its own top units."""

    def __init__(self, memory: Memory, analyser_name: str) -> None:
        super().__init__([[t] for t in memory.unit_texts], analyser_name)

    def scores(self, query: str) -> np.ndarray | None:
        ids = self.query_ids(query)
        if not ids:
            return None
        first = self.index.scores(ids)
        top, values = top_k(first, FEEDBACK_DOCS, positive_only=True)
        feedback: dict[int, float] = {}
        for document, score in zip(top, values, strict=True):
            weights = self._feedback_terms(self.documents[document])
            norm = sum(weights.values())
            if norm <= 0.001:
                continue
            for term, tf in weights.items():
                feedback[term] = feedback.get(term, 0.0) + tf / norm * score
        model = dict(sorted(feedback.items(), key=lambda x: (-x[1], x[0]))[:FEEDBACK_TERMS])
        total = sum(model.values())
        counts: dict[int, int] = {}
        for term in ids:
            if term is not None:
                counts[term] = counts.get(term, 0) + 1
        if not counts:
            return first
        expanded = {t: ORIGINAL_WEIGHT * c / sum(counts.values()) for t, c in counts.items()}
        for term, weight in model.items():
            expanded[term] = expanded.get(term, 0.0) + (1 - ORIGINAL_WEIGHT) * weight / total
        return self.unit_scores(self.weighted(expanded))

    def _feedback_terms(self, document: Document) -> dict[int, int]:
        """A feedback document's terms by count, as Anserini keeps them: its FEEDBACK_TERMS most
        frequent terms of two or more alphanumeric characters in at most 10% of documents."""
        known, n = self.vocabulary.codec().dump(document)[0], len(self.documents)
        kept = {
            int(i): int(tf)
            for i, tf, term in zip(document.ids.tolist(), document.tf.tolist(), known, strict=True)
            if len(term) >= 2 and term.isalnum() and self.df[i] / n <= MAX_DOCUMENT_SHARE
        }
        return dict(sorted(kept.items(), key=lambda x: (-x[1], x[0]))[:FEEDBACK_TERMS])


LEXICAL = {"records": RecordBM25, "rm3": RM3BM25}


def with_lexical(memory: Memory, variant: str) -> Memory:
    """``memory`` with its BM25 channel replaced by a variant (same analyser, same everything
    else): its contexts and its BM25 baseline then run on the variant."""
    return memory.with_channel(LEXICAL[variant](memory, memory.rules.lexical))
