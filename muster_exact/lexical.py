"""Lexical analysers: how text becomes BM25 terms. One place, for the channel and the baseline.

* ``words``: lower-case ``\\w+`` runs, nothing else. The paper's fixed
  tokenizer (SPEC 4), kept for exact mode so its presets replay as written.
* ``standard``: the analyser Lucene's ``EnglishAnalyzer`` family and
  Pyserini apply by default, rebuilt from its parts: Unicode NFKC, case
  folding, the English possessive ``'s`` dropped, ``\\w+`` runs, Lucene's English stop set (the 33 words of
  ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``), then the Porter stemmer
  (PyStemmer's ``porter``, the original 1980 algorithm, as Lucene's
  ``PorterStemFilter``). Native mode and the BM25 baseline use it: a
  baseline is the strongest honest BM25, not a weakened one.

Both analysers give the same terms to documents and queries; the scoring
formula stays rank-bm25's Okapi BM25 with its defaults.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Literal

from muster_exact.errors import InputError

Analyser = Literal["words", "standard"]
ANALYSERS: tuple[Analyser, ...] = ("words", "standard")

_WORD = re.compile(r"\w+")
_POSSESSIVE = re.compile(r"['\u2019]s\b")

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (also Pyserini's default stop set).
LUCENE_ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such "
    "that the their then there these they this to was will with".split()
)


def words(text: str) -> list[str]:
    """The paper's tokenizer: lower-case word runs."""
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=1)
def _porter() -> Callable[[str], str]:
    from muster_exact.models import require

    stemmer = require("Stemmer").Stemmer("porter")
    # Vocabularies are small next to token streams: stem each distinct word once.
    return functools.lru_cache(maxsize=1 << 18)(stemmer.stemWord)


def standard(text: str) -> list[str]:
    """NFKC, case folding, no possessive 's, word runs, Lucene's English stop words dropped, Porter stems."""
    stem = _porter()
    folded = _POSSESSIVE.sub("", unicodedata.normalize("NFKC", text).casefold())
    return [stem(w) for w in _WORD.findall(folded) if w not in LUCENE_ENGLISH_STOP_WORDS]


def analyser(name: str) -> Callable[[str], list[str]]:
    if name == "words":
        return words
    if name == "standard":
        return standard
    raise InputError(f"unknown lexical analyser {name!r}; use one of {', '.join(ANALYSERS)}")
