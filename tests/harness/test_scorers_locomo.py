"""LoCoMo token F1 against hand-worked examples, one group per category rule.

Token lists in the comments are after normalisation and Porter stemming;
F1 = 2PR / (P + R) with P = common / predicted tokens, R = common / gold tokens.
"""

from __future__ import annotations

import pytest

from harness.benchmarks.locomo import scorer as locomo

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

# ---------------------------------------------------------------- normalisation (no stemming)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # lower-case, comma and '!' dropped, The / and / a dropped as whole words
        ("The Cat, and a Dog!", "cat dog"),
        # punctuation goes before the article rule: "the-end" becomes one word "theend"
        ("an apple; the-end", "apple theend"),
        # 'and' / 'a' inside a word stay: only whole words are dropped
        ("Band and brand, a banana", "band brand banana"),
        # only ASCII punctuation is dropped: the curly apostrophe stays
        ("Caroline’s dog", "caroline’s dog"),
        ("  spaced \t out \n text ", "spaced out text"),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert locomo.normalise(text) == expected


def test_tokens_are_porter_stemmed() -> None:
    assert locomo.stemmed_tokens("Running paintings, painted dogs") == ["run", "paint", "paint", "dog"]


# ---------------------------------------------------------------- categories 2, 3, 4: plain F1


def test_stemming_makes_inflections_match() -> None:
    # pred [she, paint, sunset], gold [paint, sunset]: common 2, P=2/3, R=2/2, F1=2*(2/3)*1/(2/3+1)=0.8
    assert locomo.score("She painted sunsets", "painting sunsets", "4") == pytest.approx(0.8)
    # the same pair in category 2 (temporal) uses the same plain F1
    assert locomo.score("She painted sunsets", "painting sunsets", 2) == pytest.approx(0.8)


def test_articles_and_and_are_not_counted() -> None:
    # pred "The dog and the cat" -> [dog, cat], gold "a cat" -> [cat]: common 1, P=1/2, R=1/1, F1=2/3
    assert locomo.score("The dog and the cat", "a cat", 4) == pytest.approx(2 / 3)


def test_commas_and_punctuation_are_ignored() -> None:
    # pred [pari, franc], gold [pari, franc]: common 2, P=R=1, F1=1
    assert locomo.score("Paris, France!", "paris france", 4) == pytest.approx(1.0)


def test_common_tokens_count_with_multiplicity() -> None:
    # pred [cat, cat, cat], gold [cat]: common min(3,1)=1, P=1/3, R=1, F1=2*(1/3)/(4/3)=0.5
    assert locomo.score("cat cat cat", "cat", 4) == pytest.approx(0.5)


def test_no_overlap_and_empty_prediction_score_zero() -> None:
    assert locomo.score("Berlin", "Paris", 4) == 0.0
    assert locomo.score("", "Paris", 2) == 0.0
    # a prediction made only of dropped words has no token left either
    assert locomo.score("the and a", "Paris", 4) == 0.0


def test_int_gold_is_str_converted() -> None:
    # gold 2022 -> "2022": pred [in, 2022], gold [2022]: common 1, P=1/2, R=1, F1=2/3
    assert locomo.score("in 2022", 2022, 2) == pytest.approx(2 / 3)
    assert locomo.score("2022", 2022, "2") == pytest.approx(1.0)


def test_category_3_gold_is_cut_at_first_semicolon() -> None:
    # gold "Likely yes; she mentioned it" -> "Likely yes" -> [like, ye]; pred "yes" -> [ye]
    # common 1, P=1/1, R=1/2, F1=2*1*0.5/1.5=2/3
    assert locomo.score("yes", "Likely yes; she mentioned it", 3) == pytest.approx(2 / 3)
    # category 4 keeps the whole gold: [like, ye, she, mention, it], P=1, R=1/5, F1=2*0.2/1.2=1/3
    assert locomo.score("yes", "Likely yes; she mentioned it", 4) == pytest.approx(1 / 3)


# ---------------------------------------------------------------- category 1: multi-hop


def test_multi_hop_averages_best_match_per_gold_part() -> None:
    # gold parts [Paris, Rome, Berlin]; prediction parts [Rome, Paris]
    # Paris: best 1 (vs "Paris"); Rome: best 1 (vs "Rome"); Berlin: 0 -> mean (1+1+0)/3 = 2/3
    assert locomo.score("Rome, Paris", "Paris, Rome, Berlin", 1) == pytest.approx(2 / 3)
    # without the split (category 4): pred [rome, pari], gold [pari, rome, berlin]
    # common 2, P=2/2, R=2/3, F1=2*(2/3)/(5/3)=0.8
    assert locomo.score("Rome, Paris", "Paris, Rome, Berlin", 4) == pytest.approx(0.8)


def test_multi_hop_partial_part_match() -> None:
    # gold parts ["red car", "green boat"]; prediction parts ["a red car", "blue boat"]
    # "red car": vs [red, car] -> 1
    # "green boat": vs [red, car] -> 0; vs [blue, boat]: common 1, P=1/2, R=1/2, F1=0.5 -> best 0.5
    # mean (1 + 0.5) / 2 = 0.75
    assert locomo.score("a red car, blue boat", "red car, green boat", 1) == pytest.approx(0.75)


def test_multi_hop_trailing_comma_adds_an_empty_gold_part() -> None:
    # gold "Paris," -> parts ["Paris", ""]: Paris 1, "" 0 -> mean 0.5 (as upstream)
    assert locomo.score("Paris", "Paris,", 1) == pytest.approx(0.5)


# ---------------------------------------------------------------- category 5: adversarial


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("No information available.", 1.0),
        ("The answer is not mentioned in the conversation", 1.0),
        ("NOT MENTIONED", 1.0),  # compared lower-cased
        ("(a) Not mentioned in the conversation", 1.0),
        ("She went to Paris", 0.0),
        ("It was not explicitly mentioned", 0.0),  # the phrase must be contiguous
        ("No information is available", 0.0),
        ("", 0.0),
    ],
)
def test_adversarial_phrases(output: str, expected: float) -> None:
    # the gold (None for most category-5 entries) is never read
    assert locomo.score(output, None, 5) == expected
    assert locomo.score(output, "self-care is important", "5") == expected


# ---------------------------------------------------------------- bad categories


@pytest.mark.parametrize("category", ["0", "6", 7, "multi-hop", ""])
def test_unknown_category_is_an_error(category: str | int) -> None:
    with pytest.raises(ValueError, match="category"):
        locomo.score("Paris", "Paris", category)
