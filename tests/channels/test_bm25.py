"""The vectorised BM25 gives rank-bm25's scores, float for float, and so its rankings.

rank-bm25 is the reference the paper's method names; the channel no longer
calls it (it scored every unit in Python per query term). Checked on random
corpora (terms in more than half the documents, so negative idfs and their
floor; empty documents; repeated query terms) and on the unit texts of
every benchmark store in ../shared/data with its own questions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import rank_bm25
from hypothesis import given, settings
from hypothesis import strategies as st

from muster_exact import analyse
from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import AnalysisCache, text_key
from muster_exact.channels import pool_size, top_k
from muster_exact.channels.bm25 import EMPTY, BM25Channel
from muster_exact.memory import unit_texts
from muster_exact.text.lexical import ANALYSERS, analyser
from muster_exact.verify.corpora import find_stores

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

WORDS = st.sampled_from("alpha beta gamma delta the a caroline melanie 2023 may".split())
DOCUMENT = st.lists(WORDS, max_size=12).map(" ".join)


def _reference(texts: list[str], name: str) -> tuple[rank_bm25.BM25Okapi, object]:
    terms = analyser(name)
    return rank_bm25.BM25Okapi([terms(t) or [EMPTY] for t in texts]), terms


@settings(max_examples=300, deadline=None)
@given(st.lists(DOCUMENT, min_size=1, max_size=15), st.lists(DOCUMENT, min_size=1, max_size=4))
def test_scores_equal_rank_bm25_exactly_on_random_corpora(texts: list[str], queries: list[str]) -> None:
    channel = BM25Channel(texts, "words")
    reference, terms = _reference(texts, "words")
    for query in queries:
        query_terms = terms(query)  # type: ignore[operator]
        if not query_terms:
            assert channel.scores(query) is None
            continue
        expected = reference.get_scores(query_terms)
        assert np.array_equal(channel.scores(query), expected), (texts, query)


def test_a_memo_carried_between_builds_changes_no_score() -> None:
    """Documents analysed for an earlier build (their term ids from a grown vocabulary) score as a
    fresh index scores them."""
    memo = Memo()
    first = ["Caroline went to the support group.", "Melanie paints sunsets.", "the the the"]
    BM25Channel(first, "standard", memo)
    grown = [first[1], "A new record about Caroline and sunsets.", first[2], first[0]]
    carried, fresh = BM25Channel(grown, "standard", memo), BM25Channel(grown, "standard")
    assert memo.computed["bm25:standard.2"] == 4  # three texts, then only the new one
    for query in ("Caroline sunsets", "the group", "paints paints"):
        assert np.array_equal(carried.scores(query), fresh.scores(query))  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(DOCUMENT, min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 3), st.lists(DOCUMENT, min_size=0, max_size=4)), max_size=8),
    st.lists(DOCUMENT, min_size=1, max_size=3),
)
def test_a_grown_index_scores_as_a_fresh_one_before_and_after_its_delta_is_merged(
    first: list[str], growth: list[tuple[int, list[str]]], queries: list[str]
) -> None:
    """A store's growth: the last few units cut again and new ones added, read after read; the
    grown index (base kept, delta re-sorted, merged when it outgrows its share) scores every
    query as an index built at once over the same texts, bit for bit, rank-bm25's too."""
    memo = Memo()
    channel, texts = BM25Channel(first, "words", memo), list(first)
    merged = kept = 0
    for cut_again, new in growth:
        keep = max(0, len(texts) - cut_again)
        base_before = channel._index._base
        channel, texts = channel.extended(keep, new, memo), [*texts[:keep], *new]
        kept += channel._index._base is base_before
        merged += channel._index._base is not base_before
        if not texts:
            continue  # rank-bm25 cannot index nothing (a store's memory always has a unit)
        reference, terms = _reference(texts, "words")
        fresh = BM25Channel(texts, "words")
        for query in queries:
            if not terms(query):  # type: ignore[operator]
                continue
            assert np.array_equal(channel.scores(query), fresh.scores(query)), (texts, query)  # type: ignore[arg-type]
            assert np.array_equal(channel.scores(query), reference.get_scores(terms(query)))  # type: ignore[operator, arg-type]


def test_growth_keeps_the_base_and_merges_a_grown_delta() -> None:
    texts = [f"record {i} about caroline and the group number {i}" for i in range(200)]
    channel = BM25Channel(texts, "words")
    # The first growth cuts the last unit again: the 199 untouched units become the base.
    first = channel.extended(199, ["the last unit, longer now", "a new record about melanie"], Memo())
    base = first._index._base
    assert base.size == 199 and first._index._delta.size == 2
    # The next reads cut the tail again and add to it: the base stays, the delta is re-sorted.
    second = first.extended(200, ["a new record about melanie and caroline", "one more"], Memo())
    assert second._index._base is base and second._index._delta.size == 3
    # A delta past its share of the base's postings is merged: the kept documents, a new base.
    more = [f"more about melanie {i} and sunsets" for i in range(60)]
    merged = second.extended(201, more, Memo())
    assert merged._index._base is not base and merged._index._base.size == 201
    # A growth that cuts into the base makes a new base too.
    assert second.extended(150, texts[150:], Memo())._index._base.size == 150
    everything = [*texts[:199], "the last unit, longer now", "a new record about melanie and caroline", *more]
    for query in ("caroline group", "melanie sunsets", "longer"):
        fresh = BM25Channel(everything, "words")
        assert np.array_equal(merged.scores(query), fresh.scores(query))  # type: ignore[arg-type]


@pytest.mark.slow
def test_scores_and_rankings_equal_rank_bm25_on_every_benchmark_store(data: Path) -> None:
    stores = 0
    for store in find_stores(data):
        texts = unit_texts(analyse(store.source).cut)
        questions = [q.text for q in store.questions[:10]] or ["What happened in May 2023?"]
        for name in ANALYSERS:
            channel = BM25Channel(texts, name)
            reference, terms = _reference(texts, name)
            for question in questions:
                query_terms = terms(question)  # type: ignore[operator]
                if not query_terms:
                    continue
                expected, got = reference.get_scores(query_terms), channel.scores(question)
                assert np.array_equal(got, expected), (store.name, name, question)
                k = pool_size(40)
                assert top_k(got, k, positive_only=True) == top_k(expected, k, positive_only=True)
        stores += 1
    assert stores == 57  # 47, and the ten BEAM-500K development chats


def test_terms_a_store_file_kept_before_the_cjk_rule_are_not_read_back() -> None:
    """A file written before ``standard`` split CJK runs holds one term per run under
    ``bm25:standard``; the analyser's terms are kept under a new name now, so they are analysed again."""
    text = "我的女儿安娜在里斯本上小学。"
    cache = AnalysisCache()
    cache.put("bm25:standard", [(text_key(text), json.dumps([["我的女儿安娜在里斯本上小学"], [1], 1]))])
    memo = Memo(cache)
    others = ["An English note about Lisbon.", "Melanie paints sunsets.", "A dog named Pixel."]
    channel = BM25Channel([text, *others], "standard", memo)
    assert memo.loaded["bm25:standard.2"] == 0 and memo.computed["bm25:standard.2"] == 4
    assert channel.propose("安娜在哪里上学？", 2).units == (0,)
