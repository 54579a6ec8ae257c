"""Lexical analysers: how text becomes BM25 terms. One place, for the channel and the baseline.

* ``words``: lower-case ``\\w+`` runs, nothing else. The paper's fixed
  tokenizer (SPEC 4), kept for exact mode so its presets replay as written.
* ``standard``: the analyser Lucene's ``EnglishAnalyzer`` family and
  Pyserini apply by default, rebuilt from its parts: Unicode NFKC, case
  folding, the English possessive ``'s`` dropped, ``\\w+`` runs, Lucene's English stop set (the 33 words of
  ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``), then the Porter stemmer
  (PyStemmer's ``porter``, the original 1980 algorithm, as Lucene's
  ``PorterStemFilter``). Native mode and the BM25 baseline use it: a
  baseline is the strongest honest BM25, not a weakened one. Scripts
  written without spaces (Han, Hiragana, Katakana: Chinese and Japanese)
  make a ``\\w+`` run of a whole phrase, which no query repeats, so a run
  of their characters gives each character and each pair of neighbours
  (``"東京都"``: 東, 東京, 京, 京都, 都), the bigrams with unigrams of
  Lucene's ``CJKBigramFilter``; a text without such characters gets the
  terms it always got (docs/decisions/0095-cjk-bm25-terms.md).

Both analysers give the same terms to documents and queries; the scoring
formula stays rank-bm25's Okapi BM25 with its defaults.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Literal

from muster_exact.core.errors import InputError

Analyser = Literal["words", "standard"]
ANALYSERS: tuple[Analyser, ...] = ("words", "standard")

_WORD = re.compile(r"\w+")
# Han, Hiragana and Katakana, with the marks written among them, after NFKC (which has already
# made halfwidth kana fullwidth). Not Hangul (Korean puts spaces between words), nor Thai, Lao,
# Khmer or Myanmar (their words need a dictionary, and their vowel signs are not word characters).
_CJK = (
    "\u3005-\u3007\u3021-\u3029\u3038-\u303b"  # 々 〆 〇, the Hangzhou numerals, 〻
    "\u3041-\u3096\u309d-\u309f"  # Hiragana and its iteration marks
    "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"  # Katakana, ー (long vowel mark), iteration marks, Ainu kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han: extension A, unified, compatibility
    "\U0001b000-\U0001b16f\U00020000-\U0003ffff"  # historic and small kana; Han extensions B-H
)
CJK_CHARACTER = re.compile(f"[{_CJK}]")
# A CJK run (group 1), or a run of the other word characters (group 2): what ``\w+`` finds, cut
# where the script changes ("iphone15を" is "iphone15" and "を").
_CJK_OR_WORD = re.compile(rf"([{_CJK}]+)|([^\W{_CJK}]+)")
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
    from muster_exact.core.optional import require_extra

    stemmer = require_extra("Stemmer").Stemmer("porter")
    # Vocabularies are small next to token streams: stem each distinct word once.
    return functools.lru_cache(maxsize=1 << 18)(stemmer.stemWord)


def standard(text: str) -> list[str]:
    """NFKC, case folding, no possessive 's, word runs, Lucene's English stop words dropped, Porter
    stems; a run of CJK characters as its characters and their pairs."""
    stem = _porter()
    folded = _POSSESSIVE.sub("", unicodedata.normalize("NFKC", text).casefold())
    if folded.isascii() or CJK_CHARACTER.search(folded) is None:  # isascii: a flag, no scan
        return [stem(w) for w in _WORD.findall(folded) if w not in LUCENE_ENGLISH_STOP_WORDS]
    terms: list[str] = []
    for cjk, word in _CJK_OR_WORD.findall(folded):
        if cjk:
            terms.extend(_cjk_grams(cjk))
        elif word not in LUCENE_ENGLISH_STOP_WORDS:
            terms.append(stem(word))
    return terms


def _cjk_grams(run: str) -> list[str]:
    """Each character of a CJK run and, after each but the first, the pair it ends, in order."""
    grams = [run[0]]
    for i in range(1, len(run)):
        grams += (run[i - 1 : i + 1], run[i])
    return grams


# The name a store file keeps an analyser's terms under (muster_exact.cache.memo). It changes whenever
# the analyser's terms do, so a file analysed before reads back none the analyser no longer gives
# (an older version of the library still reads its own). standard.2: CJK runs as characters and pairs.
STORED_AS: dict[str, str] = {"words": "words", "standard": "standard.2"}


def analyser(name: str) -> Callable[[str], list[str]]:
    if name == "words":
        return words
    if name == "standard":
        return standard
    raise InputError(f"unknown lexical analyser {name!r}; use one of {', '.join(ANALYSERS)}")
