"""Chinese and Japanese records found by BM25 in native mode (the packaged embedder, cpu-small).

Their text has no spaces between words, so the exact mode's ``\\w+`` runs make a whole phrase one
term and a query in those scripts proposes nothing; native mode's analyser reads their characters
and pairs of characters (muster_exact.text.lexical, docs/decisions/0095-cjk-bm25-terms.md).
"""

from __future__ import annotations

import pytest

from muster_exact import rules
from muster_exact.memory import Memory, build, unit_texts

ENGLISH = [
    "I moved to Lisbon last month for the new job at the design studio.",
    "How do you like the city so far? Is the weather as warm as people say?",
    "My daughter Ana started school there in September and already has friends.",
    "I adopted a dog named Pixel from the shelter; he loves long walks by the river.",
    "We went hiking in the mountains last weekend and saw a family of deer.",
    "The new bakery on the corner sells the best sourdough bread I have ever tasted.",
    "I finally finished reading that novel about the lighthouse keeper and his sister.",
    "My brother is getting married in June, so the whole family is flying to Toronto.",
]
CHINESE = "我的女儿安娜九月在里斯本开始上小学了，她已经交了很多朋友。"
JAPANESE = "先週の土曜日、京都の嵐山で友達と紅葉を見ました。とても綺麗でした。"
MIXED = "Melanieは東京のShibuyaで働いています。"
# Records in the same scripts in another unit: a query must find its own record, not any CJK text.
OTHERS = ["周末我们去山里徒步，看到了一群小鹿。", "新しいパン屋のサワードウはとても美味しいです。"]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    records = [{"speaker": "Caroline", "text": CHINESE}]
    for round_ in range(6):
        records += [{"speaker": ("Caroline", "Melanie")[i % 2], "text": t} for i, t in enumerate(ENGLISH)]
        if round_ == 2:
            records += [{"speaker": "Melanie", "text": t} for t in OTHERS]
    records += [{"speaker": "Melanie", "text": JAPANESE}, {"speaker": "Caroline", "text": MIXED}]
    return build(records, models="cpu-small", cache=tmp_path_factory.mktemp("cjk") / "vectors.sqlite")


def _unit_of(memory: Memory, record: str) -> int:
    holding = [i for i, text in enumerate(unit_texts(memory.cut)) if record in text]
    assert len(holding) == 1, holding
    return holding[0]


def _bm25(memory: Memory, query: str) -> tuple[int, ...]:
    proposals, _ = memory.proposals(query, memory.plan.units_read)
    (bm25,) = [p for p in proposals if p.channel == "bm25"]
    return bm25.units


@pytest.mark.parametrize(
    ("query", "record"),
    [
        ("安娜在哪里上学？", CHINESE),  # "Where does Ana go to school?": not a phrase of the record
        ("嵐山で何を見ましたか？", JAPANESE),  # "What did you see in Arashiyama?"
        ("Where does Melanie work, Shibuya?", MIXED),  # a Latin word written against kana
    ],
)
def test_a_query_in_chinese_or_japanese_finds_its_record_through_bm25(
    memory: Memory, query: str, record: str
) -> None:
    assert memory.rules == rules.NATIVE and memory.rules.lexical == "standard"
    assert all(_unit_of(memory, other) != _unit_of(memory, record) for other in OTHERS)
    units = _bm25(memory, query)
    assert units[:1] == (_unit_of(memory, record),), units


def test_the_exact_modes_word_runs_propose_nothing_for_them(memory: Memory) -> None:
    words = memory.with_rules(lexical="words")
    assert _bm25(words, "安娜在哪里上学？") == _bm25(words, "嵐山で何を見ましたか？") == ()
