"""MemoryAgentBench metrics against hand-worked examples (no entity2id: tiny invented titles)."""

from __future__ import annotations

import pytest

from harness.benchmarks.mab import scorer as mab

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

TITLES = ["Heat", "Heathers", "Toy Story", "Toy Story 2", "Up", "Alien", "Aliens"]


# ---------------------------------------------------------------- normalisation and base metrics


def test_normalise_keeps_and_unlike_locomo() -> None:
    assert mab.normalise("The Answer, is: an Apple!") == "answer is apple"
    assert mab.normalise("Salt and a pepper") == "salt and pepper"


def test_exact_and_substring_match() -> None:
    assert mab.exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert mab.exact_match("Eiffel Tower in Paris", "Eiffel Tower") == 0.0
    assert mab.substring_exact_match("Eiffel Tower in Paris", "Eiffel Tower") == 1.0
    assert mab.substring_exact_match("Tower", "Eiffel Tower") == 0.0  # gold inside prediction, not reverse


def test_token_f1_and_yes_no_rule() -> None:
    # [quick, fox] vs [quick, brown, fox]: common 2, P=2/2, R=2/3, F1=2*(2/3)/(5/3)=0.8
    assert mab.token_f1("the quick fox", "quick brown fox") == pytest.approx(0.8)
    # gold 'yes' is all-or-nothing: "yes it is" shares a token but scores 0
    assert mab.token_f1("yes it is", "yes") == 0.0
    assert mab.token_f1("Yes.", "yes") == 1.0


def test_flatten_golds() -> None:
    assert mab.flatten_golds("x") == ["x"]
    assert mab.flatten_golds(["a", "b"]) == ["a", "b"]
    assert mab.flatten_golds([["a", "b"], ["c"]]) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        mab.flatten_golds([])


# ---------------------------------------------------------------- Answer: parsing


@pytest.mark.parametrize(
    ("output", "parsed"),
    [
        ("Reasoning first.\nAnswer: Paris\nDone.", "Paris"),
        ("answer: ANSWER: Rome", "Rome"),  # any case; a repeated prefix is removed once more
        ("The answer: Oslo is right\nmore", "Oslo is right"),  # first 'answer:' anywhere, to end of line
        ("Rome is the capital\nbecause ...", "Rome is the capital"),  # no prefix: the first line
        ("", ""),
    ],
)
def test_parse_answer(output: str, parsed: str) -> None:
    assert mab.parse_answer(output) == parsed


def test_default_route_takes_max_over_raw_and_parsed() -> None:
    # raw "i think so answer belgium": EM 0, substring 1, F1: P=1/5, R=1 -> 1/3
    # parsed "Belgium": EM 1, F1 1, substring 1 -> max of each is 1
    result = mab.scores("I think so.\nAnswer: Belgium", ["Belgium"], "factconsolidation_sh_6k")
    assert result == {"exact_match": 1.0, "f1": 1.0, "substring_exact_match": 1.0}
    # here the raw output wins substring match, the parsed "France" would not
    result = mab.scores("Belgium, not France.\nAnswer: France", ["Belgium"], "detective_qa")
    assert result["substring_exact_match"] == 1.0
    assert result["exact_match"] == 0.0


def test_max_over_flattened_golds() -> None:
    golds = [["10th and 11th centuries"], ["10th century"]]
    result = mab.scores("Answer: in the 10th century", golds, "ruler_qa1")
    assert result["substring_exact_match"] == 1.0  # the second gold is inside
    assert result["exact_match"] == 0.0


def test_icl_scores_parsed_text_only() -> None:
    # parsed "label: 18" -> normalised "label 18": EM 0 against "18", substring 1
    result = mab.scores("label: 18", ["18"], "icl_banking77_5900shot_balance")
    assert (result["exact_match"], result["substring_exact_match"]) == (0.0, 1.0)
    # the raw output contains "28" but the parsed answer "67" does not: ICL scores 0 ...
    output = "Not 28, I think.\nAnswer: 67"
    assert mab.scores(output, ["28"], "icl_trec_coarse_6600shot_balance")["substring_exact_match"] == 0.0
    # ... where the default route would take the raw output's hit
    assert mab.scores(output, ["28"], "factconsolidation_mh_6k")["substring_exact_match"] == 1.0


# ---------------------------------------------------------------- EventQA


def test_eventqa_recall_needs_every_gold_in_the_output() -> None:
    output = "Answer: Stuart revealed the engagement.\nAlso Kali left!"
    assert mab.eventqa_recall(output, ["Stuart revealed the engagement", "kali LEFT"]) == 1.0
    # one of two missing: binary 0, not 0.5
    assert mab.eventqa_recall(output, ["Stuart revealed the engagement", "Brent left"]) == 0.0
    # only lower-casing, no punctuation stripping: "kali left." is not in "... kali left!"
    assert mab.eventqa_recall(output, ["Kali left."]) == 0.0


def test_eventqa_lexical_metrics_use_parsed_text_only() -> None:
    result = mab.scores("Stuart left.\nAnswer: Kali left", ["Stuart left"], "eventqa_131072")
    assert result["eventqa_recall"] == 1.0  # raw output contains the gold
    assert result["substring_exact_match"] == 0.0  # parsed "Kali left" does not


# ---------------------------------------------------------------- RULER NIAH and InfBench choice


def test_ruler_niah_recall_is_a_share() -> None:
    # "123" found, "789" not: 1/2
    result = mab.scores("The numbers are 123 and 456", ["123", "789"], "ruler_niah_mk_3")
    assert result == {"ruler_recall": 0.5}


def test_choice_eng_substring_means_the_option_text() -> None:
    golds = ["B", "the butler"]
    found = mab.scores("It was the Butler.", golds, "infbench_choice_eng")
    assert found["substring_exact_match"] == 1.0
    assert found["exact_match"] == 1.0  # forced once the option text is found
    missing = mab.scores("I pick A", golds, "infbench_choice_eng")
    assert (missing["substring_exact_match"], missing["exact_match"]) == (0.0, 0.0)


# ---------------------------------------------------------------- recommendation recall@k


def test_title_from_entity() -> None:
    assert mab.title_from_entity("<http://dbpedia.org/resource/Heat_(1995_film)>") == "Heat"
    assert mab.title_from_entity("<http://dbpedia.org/resource/Spider-Man_2>") == "Spider Man 2"
    assert mab.titles_by_id({"<http://dbpedia.org/resource/Up_(2009_film)>": 7}) == {7: "Up"}


def test_levenshtein() -> None:
    # kitten -> sitten (s) -> sittin (i) -> sitting (+g)
    assert mab.levenshtein("kitten", "sitting") == 3
    assert mab.levenshtein("", "abc") == 3
    assert mab.levenshtein("kitten", "sitting", limit=2) == 2  # stops once 2 cannot be beaten


def test_nearest_title_and_ties() -> None:
    # "heaters" -> "heathers" is one insertion; "heat" is three away
    assert mab.nearest_title("Heaters", TITLES) == "Heathers"
    assert mab.nearest_title("toy story", TITLES) == "Toy Story"  # case ignored
    # "Bat" is 1 from both "Cat" and "Hat": the alphabetically first wins
    assert mab.nearest_title("Bat", ["Hat", "Cat"]) == "Cat"


def test_recommendation_items_parsing() -> None:
    output = "Since you liked Alien, try:\n1. Toy Story (1995)\n2. Aliens\n3. Heaters\n4) Up!"
    assert mab.recommendation_items(output) == ["Toy Story", "Aliens", "Heaters", "Up!"]
    # no "1.": commas become line breaks
    assert mab.recommendation_items("Toy Story, Alien") == ["Toy Story", "Alien"]


def test_recommendation_recall_at_k() -> None:
    output = "Since you liked Alien, try:\n1. Toy Story (1995)\n2. Aliens\n3. Heaters\n4) Up!"
    # snapped: [Toy Story, Aliens, Heathers, Up]
    result = mab.scores(output, ["Aliens", "Up"], "recsys_redial_full", titles=TITLES)
    # @1: [Toy Story] holds neither -> 0/2; @5 and @10 hold both -> 2/2
    assert result == {"recsys_recall@1": 0.0, "recsys_recall@5": 1.0, "recsys_recall@10": 1.0}
    result = mab.recommendation_recalls(output, ["Heat", "Toy Story"], TITLES)
    # @1: Toy Story -> 1/2; Heat never recommended ("Heaters" snapped to Heathers) -> 1/2 at every k
    assert result == {"recsys_recall@1": 0.5, "recsys_recall@5": 0.5, "recsys_recall@10": 0.5}


def test_blank_lines_take_a_slot_as_upstream() -> None:
    # items ["Up", "", "Alien"]: the blank one snaps to the shortest title "Up", so Alien is third
    result = mab.recommendation_recalls("1. Up\n\n2. Alien", ["Alien"], TITLES, cutoffs=(2, 3))
    assert result == {"recsys_recall@2": 0.0, "recsys_recall@3": 1.0}


def test_recsys_needs_titles() -> None:
    with pytest.raises(ValueError, match="titles"):
        mab.scores("1. Up", ["Up"], "recsys_redial_full")


# ---------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("source", "metrics"),
    [
        ("factconsolidation_sh_6k", mab.LEXICAL_METRICS),
        ("ruler_qa2_421K", mab.LEXICAL_METRICS),
        ("detective_qa", mab.LEXICAL_METRICS),
        ("longmemeval_s*", mab.LEXICAL_METRICS),
        ("infbench_sum_eng_shots2", mab.LEXICAL_METRICS),
        ("icl_clinic150_7050shot_balance", mab.LEXICAL_METRICS),
        ("eventqa_full", (*mab.LEXICAL_METRICS, "eventqa_recall")),
        ("ruler_niah_mq", ("ruler_recall",)),
        ("recsys_redial_full", ("recsys_recall@1", "recsys_recall@5", "recsys_recall@10")),
    ],
)
def test_metrics_for_source(source: str, metrics: tuple[str, ...]) -> None:
    assert mab.metrics_for(source) == metrics


def test_routes_follow_upstream_order() -> None:
    assert mab.route("icl_eventqa") == "icl"  # 'icl' is checked first
    assert mab.route("factconsolidation_mh_262k") == "default"
    assert mab.route("infbench_choice_eng") == "choice"


@pytest.mark.parametrize(
    ("source", "metric"),
    [
        ("factconsolidation_mh_262k", "substring_exact_match"),
        ("ruler_qa1_197K", "substring_exact_match"),
        ("eventqa_131072", "substring_exact_match"),
        ("detective_qa", "exact_match"),
        ("icl_banking77_5900shot_balance", "exact_match"),
        ("ruler_niah_mq", "ruler_recall"),
        ("recsys_redial_full", "recsys_recall@5"),
        ("longmemeval_s*", None),
        ("infbench_sum_eng_shots2", None),
    ],
)
def test_headline_metric_per_source(source: str, metric: str | None) -> None:
    assert mab.headline_metric(source) == metric
    if metric is not None:  # the headline is one of the metrics the source is scored with
        assert metric in mab.metrics_for(source)
