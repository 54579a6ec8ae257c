"""BM25 over unit texts: Okapi BM25 as rank-bm25 0.2.2 computes it (its defaults), vectorised.

rank-bm25 scores every unit in Python for every query term. Here the index is
a posting list per term in numpy, so a query touches only the units that hold
its terms, and a unit's terms are analysed once per text (a :class:`Memo`
carries them to the next build of a growing store).

The figures are rank-bm25's, float for float (tests/channels/test_bm25.py holds
them equal on every benchmark store):

* idf = log(N - df + 0.5) - log(df + 0.5), each log by ``math.log``;
* a negative idf is floored at epsilon x the mean idf, the mean summed term
  by term in the order rank-bm25 sums it (terms by first appearance);
* a term's share is idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)),
  evaluated in the same order, and a query's terms add up in query order
  (a repeated query term counts again, as there).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muster_exact.cache.memo import Codec, Memo, counts, strings
from muster_exact.channels import Proposals, Recent, top_k
from muster_exact.channels.given import Given
from muster_exact.models import require
from muster_exact.text.lexical import STORED_AS, analyser

if TYPE_CHECKING:
    import numpy as np

K1, B, EPSILON = 1.5, 0.75, 0.25
# rank-bm25 divides by the mean length: an empty text is one token no query can hold.
EMPTY = "\x00"


@dataclass(frozen=True, slots=True)
class Document:
    """One text's terms: ids in order of first appearance, and how often each occurs."""

    ids: np.ndarray
    tf: np.ndarray
    length: int


class Vocabulary:
    """Term -> id, growing. Ids are never reused, so documents analysed for an earlier build stay
    valid; nothing computed depends on which ids a term got (see :class:`BM25Index`)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._terms: list[str] = []

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, term: str) -> int | None:
        return self._ids.get(term)

    def document(self, terms: Sequence[str]) -> Document:
        counts: dict[str, int] = {}
        for term in terms:  # a dict keeps first-appearance order, as rank-bm25's does
            counts[term] = counts.get(term, 0) + 1
        return self._counted(list(counts), list(counts.values()), len(terms))

    def _counted(self, terms: list[str], counts: list[int], length: int) -> Document:
        np = require("numpy")
        ids, known = self._ids, self._terms
        for term in terms:
            if term not in ids:
                ids[term] = len(known)
                known.append(term)
        return Document(
            np.array([ids[t] for t in terms], dtype=np.int64), np.array(counts, dtype=np.int64), length
        )

    def _stored(self, value: Any) -> Document:
        """A document read back from the store file, checked (a damaged row is recomputed)."""
        terms, tf, (length,) = strings(value[0]), counts(value[1]), counts([value[2]])
        if len(terms) != len(tf) or len(set(terms)) != len(terms) or 0 in tf or sum(tf) != length:
            raise ValueError("terms, counts and length do not agree")
        return self._counted(terms, tf, length)

    def codec(self) -> Codec[Document]:
        """A document as the store file keeps it: its terms by name (ids are this process's)."""
        return Codec(
            lambda d: [[self._terms[i] for i in d.ids.tolist()], d.tf.tolist(), d.length],
            self._stored,
        )


# A grown index keeps its base postings and re-sorts only the documents after them (the delta);
# the delta is merged into a new base once its postings reach this share of the base's, so a
# read after an add sorts at most about an eighth of what a fresh index sorts (an LSM-style
# merge policy; the statistics are recounted from both parts either way).
MERGE_SHARE = 1 / 8


class _Postings:
    """Some consecutive documents' (term, tf) pairs sorted by term: per term, its documents in
    stored order (``rows`` are the documents' numbers in the whole index)."""

    def __init__(self, documents: Sequence[Document], first_row: int, vocabulary_size: int) -> None:
        np = require("numpy")
        self.size = len(documents)
        self.lengths = np.array([d.length for d in documents], dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        terms = np.concatenate([none, *(d.ids for d in documents)])
        tf = np.concatenate([none, *(d.tf for d in documents)])
        numbers = np.arange(first_row, first_row + self.size, dtype=np.int64)
        rows = np.repeat(numbers, [len(d.ids) for d in documents])
        self.df = np.bincount(terms, minlength=vocabulary_size)
        # One stable sort by term gives the posting lists and, per term, where it first appears
        # (what ``np.unique(return_index=True)`` gives, without sorting twice).
        order = np.argsort(terms, kind="stable")
        by_term = terms[order]
        runs = np.flatnonzero(np.concatenate(([len(terms) > 0], by_term[1:] != by_term[:-1])))
        present, first = by_term[runs], order[runs]
        self.by_first_appearance = present[np.argsort(first, kind="stable")]
        self.rows, self.tf = rows[order], tf[order]
        self.start = np.concatenate(([0], np.cumsum(self.df)))

    def __len__(self) -> int:
        return len(self.rows)

    def holding(self, term: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The rows and counts of the documents holding ``term`` (None: none here)."""
        if term >= len(self.df):
            return None
        begin, end = self.start[term], self.start[term + 1]
        return (self.rows[begin:end], self.tf[begin:end]) if begin != end else None


class BM25Index:
    """Posting lists over documents, with rank-bm25's idf and length normalisation.

    Held as a base and a delta (:data:`MERGE_SHARE`): :meth:`extended` re-sorts only the
    documents after the base. Every figure is the one an index built at once over the same
    documents gives, float for float: a document's postings lie in one part, the statistics are
    recounted over both, and the mean idf is summed in the same first-appearance order (the
    base's terms, then the delta's new ones)."""

    def __init__(
        self, documents: Sequence[Document], vocabulary_size: int, base: _Postings | None = None
    ) -> None:
        np = require("numpy")
        documents = list(documents)
        self.documents = documents
        self.size = n = len(documents)
        self._vocabulary_size = vocabulary_size
        self._base = base if base is not None else _Postings(documents, 0, vocabulary_size)
        self._delta = _Postings(documents[self._base.size :], self._base.size, vocabulary_size)
        if n == 0:
            self._idf = np.zeros(vocabulary_size)
            self._norm = np.zeros(0)
            return
        df = np.zeros(vocabulary_size, dtype=np.int64)
        for part in (self._base, self._delta):
            df[: len(part.df)] += part.df
        present = np.flatnonzero(df)
        # log(k + 0.5) for every count k a term can have: each by math.log, as rank-bm25.
        log_half = np.array([math.log(k + 0.5) for k in range(n + 1)])
        idf = np.zeros(vocabulary_size)
        idf[present] = log_half[n - df[present]] - log_half[df[present]]
        # The mean idf summed one term after another in order of first appearance (accumulate
        # adds left to right): the same float as rank-bm25's running sum.
        in_base = np.zeros(vocabulary_size, dtype=bool)
        in_base[: len(self._base.df)] = self._base.df > 0
        delta_terms = self._delta.by_first_appearance
        in_order = np.concatenate((self._base.by_first_appearance, delta_terms[~in_base[delta_terms]]))
        average = float(np.add.accumulate(idf[in_order])[-1]) / len(present)
        negative = present[idf[present] < 0]
        idf[negative] = EPSILON * average
        self._idf = idf
        lengths = np.concatenate((self._base.lengths, self._delta.lengths))
        avgdl = int(lengths.sum()) / n
        self._norm = K1 * (1 - B + B * lengths / avgdl)

    def extended(self, keep: int, new: Sequence[Document], vocabulary_size: int) -> BM25Index:
        """This index with its documents after the first ``keep`` replaced by ``new``. The base is
        kept when every base document is kept and the delta stays within its share; else the
        kept documents become the new base (a growing store cuts its last units again, so the
        base is the prefix no growth has touched) and the new ones the delta."""
        documents = [*self.documents[:keep], *new]
        delta_postings = sum(len(d.ids) for d in documents[self._base.size :])
        if keep >= self._base.size and delta_postings <= MERGE_SHARE * max(len(self._base), 1):
            return BM25Index(documents, vocabulary_size, self._base)
        return BM25Index(documents, vocabulary_size, _Postings(documents[:keep], 0, vocabulary_size))

    def scores(self, term_ids: Sequence[int | None]) -> np.ndarray:
        """Every document's score for a query's terms (None: a term no document holds)."""
        np = require("numpy")
        score = np.zeros(self.size)
        for term in term_ids:
            if term is None or term >= len(self._idf):
                continue
            for part in (self._base, self._delta):
                held = part.holding(term)
                if held is not None:
                    rows, tf = held
                    score[rows] += self._idf[term] * (tf * (K1 + 1) / (tf + self._norm[rows]))
        return score  # type: ignore[no-any-return]


class BM25Channel:
    name = "bm25"

    def __init__(self, texts: Sequence[str], analyser_name: str = "words", memo: Memo | None = None) -> None:
        self.analyser = analyser_name
        self._terms = analyser(analyser_name)
        memo = memo if memo is not None else Memo()
        self._vocabulary = memo.shared(f"bm25-vocabulary:{analyser_name}", Vocabulary)
        self._kind = f"bm25:{STORED_AS[analyser_name]}"
        documents = memo.many(self._kind, texts, self._analysed, self._vocabulary.codec())
        self._index = BM25Index(documents, len(self._vocabulary))
        self._proposed: Recent[Proposals] = Recent()
        self._texts = texts  # what a change of analyser indexes again

    @classmethod
    def build(cls, given: Given) -> BM25Channel:
        with given.timed("bm25"):
            return cls(given.texts, given.rules.lexical, given.memo)

    def grown(self, given: Given, keep: int) -> BM25Channel:
        with given.timed("bm25"):
            other = self.extended(keep, given.texts[keep:], given.memo)
        other._texts = given.texts
        return other

    def ruled(self, given: Given) -> BM25Channel:
        """The same texts under ``given.rules.lexical`` (analysed again when it differs)."""
        return self if given.rules.lexical == self.analyser else BM25Channel(self._texts, given.rules.lexical)

    def texts_from(self, unit: int) -> Sequence[str]:
        return ()  # it keys the units' own texts

    def extended(self, keep: int, texts: Sequence[str], memo: Memo) -> BM25Channel:
        """This index with its documents after the first ``keep`` replaced by ``texts``: the
        index a fresh channel over all the texts gives (the statistics are recounted from the
        documents; only ``texts`` are analysed)."""
        other = copy.copy(self)
        new = memo.many(self._kind, texts, self._analysed, self._vocabulary.codec())
        other._index = self._index.extended(keep, new, len(self._vocabulary))
        other._proposed = Recent()
        return other

    def _analysed(self, texts: Sequence[str]) -> list[Document]:
        return [self._vocabulary.document(self._terms(t) or [EMPTY]) for t in texts]

    def scores(self, query: str) -> object:
        """Every unit's BM25 score for ``query`` (an array), or None when the query has no terms."""
        terms = self._terms(query)
        return self._index.scores([self._vocabulary.get(t) for t in terms]) if terms else None

    def propose(self, query: str, k: int) -> Proposals:
        return self._proposed.get((query, k), lambda: self._propose(query, k))

    def _propose(self, query: str, k: int) -> Proposals:
        scores = self.scores(query)
        if scores is None:
            return Proposals(self.name, (), ())
        units, values = top_k(scores, k, positive_only=True)
        return Proposals(self.name, units, values)
