"""LoCoMo-Refined token F1 and BLEU-1 against hand-worked examples.

Tokens: ``\\w+|[^\\w\\s]`` lower-cased, no stemming. BLEU-1 = clipped unigram
precision x brevity penalty exp(1 - r/c) when the candidate is shorter.
"""

from __future__ import annotations

import math

import pytest

from harness.benchmarks.locomo_refined import scorer as refined

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_tokens_keep_punctuation_as_separate_tokens() -> None:
    assert refined.tokens("Hello, World!") == ["hello", ",", "world", "!"]
    assert refined.tokens("It's 2 P.M.") == ["it", "'", "s", "2", "p", ".", "m", "."]
    # no stemming, no article dropping
    assert refined.tokens("The paintings") == ["the", "paintings"]


def test_f1_counts_punctuation_tokens() -> None:
    # pred [the, cat, sat, .], gold [the, cat, sat, on, the, mat]
    # common 3 (the, cat, sat), P=3/4, R=3/6, F1=2*0.75*0.5/1.25=0.6
    assert refined.token_f1("The cat sat.", "the cat sat on the mat") == pytest.approx(0.6)


def test_bleu1_brevity_penalty_when_candidate_is_shorter() -> None:
    # c=4 tokens, r=6; clipped precision 3/4; BP = exp(1 - 6/4) = exp(-0.5)
    assert refined.bleu1("The cat sat.", "the cat sat on the mat") == pytest.approx(0.75 * math.exp(-0.5))


def test_bleu1_no_penalty_when_candidate_is_longer() -> None:
    # pred 7 tokens, ref [the, cat]: clipped matches the(1) + cat(1) = 2 -> 2/7, BP = 1
    assert refined.bleu1("the cat sat on the mat today", "the cat") == pytest.approx(2 / 7)


def test_bleu1_clips_repeated_tokens() -> None:
    # pred [the, the, the], ref [the, cat]: 'the' counted at most once -> 1/3, c=3 >= r=2 so BP = 1
    assert refined.bleu1("the the the", "the cat") == pytest.approx(1 / 3)


def test_empty_sides_score_zero() -> None:
    assert refined.token_f1("", "cat") == 0.0
    assert refined.bleu1("", "cat") == 0.0
    assert refined.token_f1("cat", "") == 0.0
    assert refined.bleu1("cat", "!!") == 0.0  # no common token


def test_best_over_golds_each_metric_on_its_own() -> None:
    prediction = "red green blue cyan pink"  # c = 5
    short_gold = "red green blue"  # common 3: P=3/5, R=1 -> F1=1.2/1.6=0.75; BLEU=3/5 (c >= r)
    long_gold = "red green blue cyan pink gold gray teal"
    # long gold: common 5, P=1, R=5/8 -> F1=1.25/1.625=10/13; BLEU = 1 * exp(1 - 8/5) = exp(-0.6) = 0.5488
    result = refined.scores(prediction, [short_gold, long_gold])
    assert result["f1"] == pytest.approx(10 / 13)  # from the long gold
    assert result["bleu1"] == pytest.approx(0.6)  # from the short gold


def test_gold_list_forms() -> None:
    assert refined.scores("2022", [2022]) == {"f1": 1.0, "bleu1": 1.0}  # str()-ed
    assert refined.scores("Paris", "Paris") == {"f1": 1.0, "bleu1": 1.0}  # a bare string
    # blank golds are dropped; with none left the prediction scores against ""
    assert refined.gold_candidates(["", "  ", " Rome "]) == ["Rome"]
    assert refined.scores("Paris", ["", " "]) == {"f1": 0.0, "bleu1": 0.0}
