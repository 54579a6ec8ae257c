"""build() and Memory.context() with the real packaged embedder (cpu-small)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from muster_exact import InputError, rules
from muster_exact.channels import CHANNELS
from muster_exact.core.optional import Extra
from muster_exact.derive.plan import Plan
from muster_exact.memory import build, rules_of, variants
from muster_exact.memory.presets import PresetError
from muster_exact.retrieve.explain import explain
from muster_exact.retrieve.select import scaled_floors
from muster_exact.text import tokens
from tests.conftest import run_muster

CHAT = [
    {"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon last month for the new job."},
    {"speaker": "Melanie", "time": "2023-05-08", "text": "How do you like the city so far?"},
    {"speaker": "Caroline", "time": "2023-05-09", "text": "Love it. My daughter Ana started school there."},
    {"speaker": "Melanie", "time": "2023-06-01", "text": "I adopted a dog named Pixel from the shelter."},
] * 6


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "vectors.sqlite"


def test_context_is_verbatim_grouped_and_counted(cache) -> None:
    memory = build(CHAT, models="cpu-small", cache=cache)
    assert memory.plan.retrieval is not None and memory.plan.retrieval.rerank == "rrf"
    assert memory.plan.retrieval.floor_order == "own"  # native mode, no cross-encoder
    context = memory.context("Where does Caroline live now?", units=3)
    assert context.tokens == tokens.count(context.text)
    for block in context.blocks:
        assert block.text in memory.cut.source.text  # every word verbatim
    assert "Lisbon" in context.text
    messages = context.messages()
    assert messages[-1]["content"].endswith("Question: Where does Caroline live now?")
    assert {p.unit for p in context.provenance} == set(context.unit_ids)
    assert all(p.channels for p in context.provenance)


def test_second_build_embeds_nothing(cache) -> None:
    first = build(CHAT, models="cpu-small", cache=cache)
    second = build(CHAT, models="cpu-small", cache=cache)
    assert first.embedded == len(set(first.pieces.texts)) and second.embedded == 0
    query = "What is the dog called?"
    assert first.context(query).text == second.context(query).text


def test_native_and_exact_give_the_same_context_under_the_same_rules(data, session_vectors) -> None:
    from muster_exact.verify.corpora import locomo_stores

    store = next(locomo_stores(data / "locomo/locomo10.json"))
    questions = [q["question"] for q in json.loads((data / "locomo/locomo10.json").read_text())[0]["qa"][:8]]
    # The modes differ in detection (native serial styles) and in their default rules; under the
    # same rules a store both detect alike gives byte-identical contexts.
    native = build(store.source, models="cpu-small", mode="native", cache=session_vectors, rules=rules.EXACT)
    exact = build(store.source, models="cpu-small", mode="exact", cache=session_vectors)
    assert native.plan.mode == "native" and exact.plan.mode == "exact"
    for q in questions:
        assert native.context(q).text == exact.context(q).text


def test_one_record_and_u_beyond_the_units(cache) -> None:
    memory = build(["The only note: the key is under the mat."], models="cpu-small", cache=cache)
    context = memory.context("Where is the key?", units=50)
    assert context.text == "The only note: the key is under the mat."
    many = build(CHAT, models="cpu-small", cache=cache)
    assert len(many.cut.units) < 200  # U at its cap (MAX_UNITS) is beyond the units: every one is read
    assert set(many.context("dog", units=200).unit_ids) == {u.id for u in many.cut.units}


@pytest.mark.parametrize(
    ("query", "units", "message"),
    [
        ("", None, "empty query"),
        ("  \n", None, "empty query"),
        ("x" * 100_000, None, "limited to"),
        ("ok?", 0, "whole number from 1 to 200"),
    ],
)
def test_bad_queries(cache, query, units, message) -> None:
    memory = build(CHAT, models="cpu-small", cache=cache)
    with pytest.raises(InputError, match=message):
        memory.context(query, units=units)


def test_zero_units_and_unknown_preset(cache) -> None:
    with pytest.raises(InputError, match="empty input"):
        build("   \n\n ", models="cpu-small", cache=cache)
    with pytest.raises(PresetError, match=r"did you mean .*locomo\.u10"):
        build(CHAT, preset="locomo.u1O", cache=cache)


def test_cli_query_and_errors(tmp_path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in CHAT))
    env = {"MUSTER_MODELS": "cpu-small", "MUSTER_HOME": str(tmp_path / "home")}
    ok = run_muster("query", str(path), "Where does Caroline live?", "--units", "2", "--explain", env=env)
    assert ok.returncode == 0, ok.stderr
    assert "order by rrf (reciprocal-rank fusion: no cross-encoder weights)" in ok.stdout
    assert "floors reserved (in own order), graph floor slots" in ok.stdout
    assert "--- context ---" in ok.stdout
    as_json = run_muster("query", str(path), "Where does Caroline live?", "--json", env=env)
    assert json.loads(as_json.stdout)["plan"]["retrieval"]["lexical"] == "standard"
    exact = run_muster(
        "query", str(path), "Where?", "--preset", "locomo.u10", "--models", "cpu-small", "--explain", env=env
    )
    assert "floors reserved (in fused order), graph floor always" in exact.stdout
    for args, message in [
        (("query", str(path), ""), "empty query"),
        (("query", str(path), "q", "--preset", "bem.u10"), "did you mean"),
        (("query", str(path), "q" * 100_000), "limited to"),
        (("query", str(tmp_path / "none.txt"), "q"), "no such file"),
    ]:
        result = run_muster(*args, env=env)
        assert result.returncode == 2, result.stderr
        assert (
            result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr
        )


def test_missing_extra_names_the_install() -> None:
    code = (
        "import sys; sys.modules['Stemmer'] = None\n"
        "from muster_exact.memory import build\n"
        "from muster_exact.models import MissingExtra\n"
        "try:\n    build(['a note'], models='cpu-small', cache=False)\n"
        "except MissingExtra as e:\n    print(e); sys.exit(3)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 3 and str(Extra("cpu")) in result.stdout, result.stdout


def test_each_mode_runs_its_rules_and_the_plan_says_which(cache) -> None:
    native = build(CHAT, models="cpu-small", cache=cache)
    exact = build(CHAT, preset="locomo.u10", models="cpu-small", cache=cache)
    assert native.rules == rules.NATIVE and exact.rules == rules.EXACT
    r = native.plan.retrieval
    assert (r.pieces, r.lexical, r.floor_order, r.graph_floor) == ("records", "standard", "own", "slots")
    r = exact.plan.retrieval
    assert (r.pieces, r.lexical, r.rerank, r.graph_floor) == ("records", "words", "rrf", "always")
    assert "BM25 analyser standard" in explain(native.plan) and "reciprocal-rank" in explain(native.plan)
    # The same plan gives the same context, whatever the mode that made it.
    as_exact = build(CHAT, models="cpu-small", cache=cache, rules=rules.EXACT)
    assert (
        as_exact.context("Where does Caroline live?").text
        == build(CHAT, models="cpu-small", mode="exact", cache=cache)
        .context("Where does Caroline live?")
        .text
    )


def test_with_rules_shares_the_vectors_and_refuses_a_new_build_rule(cache) -> None:
    memory = build(CHAT, models="cpu-small", cache=cache, rules=rules.EXACT)
    other = memory.with_rules(**rules.NATIVE.query_rules())
    at_budget = rules.NATIVE.replace(unit_size="budget")  # native's query rules, exact's cut
    assert other.rules == at_budget and memory.rules == rules.EXACT
    assert other.pieces is memory.pieces and other.embedded == memory.embedded
    fresh = build(CHAT, models="cpu-small", cache=cache, rules=at_budget)
    for q in ("Where does Caroline live?", "What pet did Melanie adopt?"):
        assert other.context(q).text == fresh.context(q).text
    with pytest.raises(InputError, match="the pieces rule shapes the cut or the vectors"):
        memory.with_rules(pieces="unit")
    with pytest.raises(InputError, match="the unit_size rule shapes the cut or the vectors"):
        memory.with_rules(unit_size="window")
    assert memory.with_rules(fusion="minmax").plan.retrieval.rerank == "minmax"
    with pytest.raises(InputError, match="unknown fusion rule 'borda'"):
        memory.with_rules(fusion="borda")
    with pytest.raises(InputError, match="unknown retrieval rules: pooling_size"):
        memory.with_rules(pooling_size="3")


def test_a_plan_from_before_the_rules_reads_as_what_it_ran(cache) -> None:
    plan = build(CHAT, models="cpu-small", cache=cache).plan
    data = json.loads(plan.to_json())
    for name in rules.CHOICES:
        del data["retrieval"][name]
    old = Plan.from_dict(data)
    assert rules_of(old) == rules.Rules(pieces="unit")  # whole units, words, RRF, graph floor always


def test_graph_floor_rules(cache) -> None:
    lines = [f"The capital of Country{i % 7} is City{i}." for i in range(1, 60)]
    lines += [f"The mayor of Town{i} is Ann Lee." for i in range(12)]  # one name in 12 slots
    log = "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1))
    facts = build(log, models="cpu-small", cache=cache)
    chat = build(CHAT * 4, models="cpu-small", cache=cache, units=4)
    assert facts.plan.parent_rule == "slot" and chat.plan.parent_rule == "group"
    # Native `slots`: the graph keeps its floor where parents are slots, not on group parents.
    assert facts.floors("What is the capital of Country3?", 10) == {"dense": 2, "bm25": 0, "graph": 8}
    assert chat.floors("Where does Caroline live?", 10) == {"dense": 4, "bm25": 3, "graph": 0}
    assert chat.with_rules(graph_floor="always", graph_votes="always").floors(
        "Where does Caroline live?", 10
    ) == {
        "dense": 4,
        "bm25": 3,
        "graph": 3,
    }
    assert facts.with_rules(graph_floor="off").floors("capital of Country3?", 10) == {
        "dense": 2,
        "bm25": 0,
        "graph": 0,
    }
    assert facts.with_rules(floors="none").floors("capital of Country3?", 10) == {
        "dense": 0,
        "bm25": 0,
        "graph": 0,
    }
    # `selective`: reserved when the query's rarest known entity lies in at most floor-many parents.
    selective = facts.with_rules(graph_floor="selective")
    assert selective.floors("What is the capital of Country3?", 10) == {
        "dense": 2,
        "bm25": 0,
        "graph": 8,
    }  # one slot
    assert selective.floors("Which towns does Ann Lee run?", 10) == {
        "dense": 2,
        "bm25": 0,
        "graph": 0,
    }  # 12 parents > 8
    assert selective.floors("Is Ann Lee the mayor of Town4?", 10) == {
        "dense": 2,
        "bm25": 0,
        "graph": 8,
    }  # Town4: one parent
    assert selective.floors("what about it?", 10) == {"dense": 2, "bm25": 0, "graph": 0}  # no known entity


def test_the_graph_votes_only_where_parents_are_slots_under_native_rules(cache) -> None:
    lines = [f"The capital of Country{i % 7} is City{i}." for i in range(1, 60)]
    facts = build(
        "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1)), models="cpu-small", cache=cache
    )
    chat = build(CHAT * 4, models="cpu-small", cache=cache, units=4)
    query = "Where does Caroline live?"
    assert chat.rules.graph_votes == "slots" and chat.plan.retrieval.graph_votes == "slots"
    assert not chat.votes("graph") and chat.votes("dense") and chat.votes("bm25")
    # Group parents: the graph proposes nothing, so its floor goes to the fill (even "always").
    proposals, _ = chat.proposals(query, 4)
    assert [(p.channel, p.units) for p in proposals if p.channel == "graph"] == [("graph", ())]
    assert chat.with_rules(graph_floor="always").floors(query, 10)["graph"] == 0
    assert chat.with_rules(graph_votes="always").votes("graph")
    # The context is the library's steps over the dense and BM25 proposals alone.
    done = chat.retrieve(query, 4)
    assert {s for p in done.context.provenance for s in p.channels} <= {"dense", "bm25"}
    # Slot parents (a numbered log): the graph votes and keeps its floor, as before.
    assert facts.votes("graph") and facts.floors("What is the capital of Country3?", 10)["graph"] == 8
    assert "graph votes slots" in explain(chat.plan)
    assert rules.EXACT.graph_votes == "always"


def test_graph_facts_rule_reshapes_the_graph_without_a_new_build(cache) -> None:
    lines = [f"{i}. The capital of Country{i} is City{i}." for i in range(40)]
    lines += [
        "40. Steve Sax is associated with the sport of baseball.",
        "41. Steve Sax is associated with the sport of cricket.",
        "42. cricket was created in the country of England.",
    ]
    facts = build("\n".join(lines), models="cpu-small", cache=cache)
    query = "Which country is the birthplace of the sport associated with Steve Sax?"
    assert facts.plan.parent_rule == "slot"
    assert facts.rules.graph_facts == "current" and facts.plan.retrieval.graph_facts == "current"
    assert "graph facts current" in explain(facts.plan)
    every = facts.with_rules(graph_facts="all")  # a query-time rule: the same cut and vectors
    assert every.embedded == facts.embedded and every.cut is facts.cut
    texts = facts.unit_texts
    now = [texts[u] for u in facts.channel("graph").propose(query, 20).units]
    before = [texts[u] for u in every.channel("graph").propose(query, 20).units]
    assert now[:2] == [
        "Steve Sax is associated with the sport of cricket.",
        "cricket was created in the country of England.",
    ]
    assert "cricket was created in the country of England." not in before
    # Back again: the same graph as the build's.
    assert every.with_rules(graph_facts="current").channel("graph").propose(query, 20).units == tuple(
        texts.index(t) for t in now
    )
    assert rules.EXACT.graph_facts == "all"


def test_channels_by_name_and_the_ablations_composed_of_public_steps(cache) -> None:
    memory = build(CHAT, models="cpu-small", cache=cache, units=4)
    assert list(memory.channels()) == CHANNELS.names() == ["dense", "bm25", "graph"]
    with pytest.raises(InputError, match="unknown retrieval channel 'grpah'; did you mean graph"):
        memory.channel("grpah")
    query = "Where does Caroline live now?"
    done = memory.retrieve(query)
    n = memory.plan.units_to_read(4)  # U = 4 in units of the record budget
    assert done.units_read == n and n > 4  # native: units cut at the embedder's window
    assert done.context == memory.context(query) and done.floors == memory.floors(query, n)
    _, details = memory.explain_query(query)
    assert [(c["channel"], c["floor"]) for c in details["channels"]] == list(done.floors.items())
    # no_graph: the graph's proposals dropped and its floor freed, by name, through the same steps
    proposals = [p for p in done.proposals if p.channel != "graph"]
    ranking = memory.rank(query, proposals)
    floors = {**scaled_floors(memory.plan.floors, n), "graph": 0}
    chosen = memory.select(proposals, ranking, floors, n, own_order=False)
    expected = memory.assemble(query, chosen, ranking, proposals, units_read=n)
    ablated = variants.context(memory, "no_graph", query)
    assert ablated == expected and all("graph" not in p.channels for p in ablated.provenance)
    assert all(p.reason != "floor:graph" for p in ablated.provenance)
    no_floors = variants.context(memory, "no_floors", query)
    assert {p.reason for p in no_floors.provenance} == {"fill"}


NOTES = [
    {
        "speaker": "Ana" if i % 2 else "Tom",
        "text": f"On day {i} the team shipped build {i} of the Lisbon "
        f"service; the cache moved to disk {i % 7} and review {i} found {i % 5} bugs in module m{i}.",
    }
    for i in range(160)
]


def test_native_units_are_the_embedders_window_read_in_proportion(cache) -> None:
    """Native mode cuts record-store units no longer than the embedder's window (256 for the
    packaged MiniLM) and a read of U takes U x 512 / 256 of them; exact mode keeps the paper's
    512-token units and U; a numbered log is cut the same either way."""
    exact = build(NOTES, models="cpu-small", cache=cache, rules=rules.EXACT)
    native = build(NOTES, models="cpu-small", cache=cache)
    assert exact.plan.branch == native.plan.branch == "record_store"
    assert (exact.plan.unit_budget, native.plan.unit_budget) == (512, 256)
    assert max(exact.unit_tokens) > 256 >= max(native.unit_tokens)
    assert exact.rules.unit_size == "budget" and native.rules.unit_size == "window"
    query = "Which build did the team ship on day 42?"
    wide, narrow = exact.retrieve(query, 3), native.retrieve(query, 3)
    assert (wide.units_read, narrow.units_read) == (3, 6)
    assert len(narrow.context.unit_ids) == 6 and narrow.context.plan.units_read == 6
    assert 3 * 256 < narrow.context.tokens <= 3 * 512  # about the tokens U = 3 stands for
    assert "(20 units of at most 256 tokens)" in explain(native.plan)
    assert "(20 units" not in explain(exact.plan)
    rebuilt = exact.under(rules.NATIVE)
    assert rebuilt.plan.unit_budget == 256 and rebuilt.context(query, 3).text == narrow.context.text
    # Rules that cut as the memory's own: shared, nothing built again.
    assert exact.under(rules.EXACT.replace(fusion="minmax")).pieces is exact.pieces
    log = "\n".join(f"{i}. Ana's desk is in room {i % 9} as of step {i}." for i in range(1, 200))
    numbered = build(log, models="cpu-small", cache=cache, rules=rules.EXACT)
    assert numbered.plan.branch == "numbered_log"
    assert numbered.under(rules.NATIVE).pieces is numbered.pieces
