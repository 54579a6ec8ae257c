"""The lexical analysers, and BM25 scores equal to rank-bm25's on pre-analysed tokens."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rank_bm25
import Stemmer

from muster_exact.channels.bm25 import BM25Channel
from muster_exact.core.errors import InputError
from muster_exact.text.lexical import CJK_CHARACTER, LUCENE_ENGLISH_STOP_WORDS, analyser, standard, words

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

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


# --- Text in scripts written without spaces (docs/decisions/0095-cjk-bm25-terms.md) -------------


def _standard_before(text: str) -> list[str]:
    """``standard`` as it was before CJK runs were split: the reference English text must still match."""
    stem = Stemmer.Stemmer("porter").stemWord
    folded = re.sub(r"['\u2019]s\b", "", unicodedata.normalize("NFKC", text).casefold())
    return [stem(w) for w in re.findall(r"\w+", folded) if w not in LUCENE_ENGLISH_STOP_WORDS]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _data_strings(path: Path) -> Iterator[str]:
    if path.suffix == ".jsonl":
        for line in path.read_text().splitlines():
            yield from _strings(json.loads(line)) if line.strip() else ()
    elif path.suffix == ".json":
        yield from _strings(json.loads(path.read_text()))
    else:
        yield path.read_text()


def test_a_cjk_run_gives_its_characters_and_each_pair() -> None:
    assert standard("東京都") == ["東", "東京", "京", "京都", "都"]
    assert standard("我的猫") == ["我", "我的", "的", "的猫", "猫"]
    # Hiragana, Katakana and Han are one run; the iteration mark 々 belongs to it.
    assert standard("人々は") == ["人", "人々", "々", "々は", "は"]
    # The exact mode's analyser is untouched: a whole run is one word.
    assert words("東京都に住む") == ["東京都に住む"]


def test_a_single_cjk_character_is_its_own_term() -> None:
    assert standard("猫") == ["猫"]
    assert standard("猫。犬") == ["猫", "犬"]  # no pair across the full stop


def test_cjk_next_to_latin_and_digits_ends_the_word_there() -> None:
    assert standard("iPhone15を買った") == ["iphone15", "を", "を買", "買", "買っ", "っ", "った", "た"]
    assert standard("2023年5月") == ["2023", "年", "5", "月"]
    # Latin words keep their stop list and stems beside CJK text.
    assert standard("The fishing trips in 京都") == ["fish", "trip", "京", "京都", "都"]


def test_fullwidth_and_halfwidth_forms_fold_to_the_usual_ones() -> None:
    assert standard("ＡＢＣ１２３の") == standard("ABC123の") == ["abc123", "の"]
    assert standard("ｶﾞｷﾞｰ") == standard("ガギー") == ["ガ", "ガギ", "ギ", "ギー", "ー"]
    assert standard("猫！？犬") == ["猫", "犬"]  # fullwidth ! and ? are punctuation


def test_the_long_vowel_mark_stays_inside_its_word() -> None:
    assert standard("コーヒー") == ["コ", "コー", "ー", "ーヒ", "ヒ", "ヒー", "ー"]
    assert standard("ｺｰﾋｰ") == standard("コーヒー")  # the halfwidth mark too


def test_punctuation_ends_a_cjk_run() -> None:
    # The ideographic comma and full stop, corner brackets and the katakana middle dot.
    assert standard("東京、大阪。") == standard("「東京」・大阪") == ["東", "東京", "京", "大", "大阪", "阪"]


def test_scripts_outside_the_rule_keep_their_word_runs() -> None:
    for text in ("학교에 갔다", "ภาษาไทย", "Straße café"):
        assert standard(text) == _standard_before(text), text


def test_english_benchmark_text_gets_the_terms_it_always_got(data: Path) -> None:
    texts = list(_data_strings(data / "locomo/locomo10.json"))
    assert len(texts) > 10_000
    for text in texts:
        assert standard(text) == _standard_before(text), text


def test_cjk_in_english_text_leaves_the_english_terms_as_they_were(data: Path) -> None:
    turns = [t for t in _data_strings(data / "locomo/locomo10.json") if len(t.split()) > 6][:2000]
    for turn in turns:
        words_of = turn.split(" ")
        half = len(words_of) // 2
        mixed = " ".join([*words_of[:half], "東京の猫、コーヒー。", *words_of[half:]])
        english = [t for t in standard(mixed) if not CJK_CHARACTER.search(t)]
        assert english == _standard_before(turn), mixed
        assert "東京" in standard(mixed) and "コー" in standard(mixed)


@pytest.mark.slow
def test_no_benchmark_text_holds_a_character_the_cjk_rule_reads(data: Path) -> None:
    """So every pinned context (exact's words; native's and the BM25 baseline's standard) stays."""
    files = sorted(p for p in data.rglob("*") if p.is_file())
    assert len(files) > 100
    for path in files:
        for text in _data_strings(path):
            folded = unicodedata.normalize("NFKC", text).casefold()
            assert CJK_CHARACTER.search(text) is None and CJK_CHARACTER.search(folded) is None, path
