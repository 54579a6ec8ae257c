"""The lexical analysers, and BM25 scores equal to rank-bm25's on pre-analysed tokens."""

from __future__ import annotations

import numpy as np
import pytest
import rank_bm25

from muster_exact.channels.bm25 import BM25Channel
from muster_exact.errors import InputError
from muster_exact.lexical import LUCENE_ENGLISH_STOP_WORDS, analyser, standard, words

DOCS = [
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Melanie's kids are running around; she paints sunsets.",
    "The ﬁshing trip was fun, and they caught fish!",
    "An adoption agency interview is next week for Caroline.",
    "",
]


def test_words_is_the_papers_lowercase_word_runs() -> None:
    assert words("Melanie's KIDS, 7 May!") == ["melanie", "s", "kids", "7", "may"]


def test_standard_folds_stems_and_drops_stop_words() -> None:
    # NFKC turns the "ﬁ" ligature into "fi"; "fishing" and "fish" share the Porter stem.
    assert standard("The ﬁshing trip") == ["fish", "trip"]
    assert standard("Melanie's kids are running") == ["melani", "kid", "run"]
    # Case folding (ß -> ss) before matching, and Lucene's 33 stop words only.
    assert standard("STRASSE straße") == ["strass", "strass"]
    assert len(LUCENE_ENGLISH_STOP_WORDS) == 33
    assert standard("this is not what they will be") == ["what"]


def test_unknown_analyser_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="unknown lexical analyser 'porter'"):
        analyser("porter")


@pytest.mark.parametrize("name", ["words", "standard"])
def test_bm25_scores_equal_rank_bm25_on_analysed_tokens(name: str) -> None:
    terms = analyser(name)
    channel = BM25Channel(DOCS, name)
    reference = rank_bm25.BM25Okapi([terms(d) or ["\x00"] for d in DOCS])
    for query in ("When did Caroline go to the support group?", "fishing with kids", "paint a sunset"):
        expected = reference.get_scores(terms(query))
        got = channel.scores(query)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        proposed = channel.propose(query, 3)
        # Proposals are the best positive scores, ties by position.
        order = sorted((i for i in range(len(DOCS)) if expected[i] > 0), key=lambda i: (-expected[i], i))
        assert list(proposed.units) == order[:3]


def test_stemming_finds_what_word_runs_miss() -> None:
    query = "Who paints sunsets?"
    assert BM25Channel(DOCS, "standard").propose("Who painted a sunset?", 2).units[:1] == (1,)
    assert BM25Channel(DOCS, "words").propose("Who painted a sunset?", 2).units == ()
    assert BM25Channel(DOCS, "words").propose(query, 2).units[:1] == (1,)


def test_a_query_of_only_stop_words_proposes_nothing() -> None:
    assert BM25Channel(DOCS, "standard").propose("Is it that, or this?", 5).units == ()
