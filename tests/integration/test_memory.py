"""build() and Memory.context() with the real packaged embedder (cpu-small)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from muster_exact import InputError, tokens
from muster_exact.memory import build
from muster_exact.presets import PresetError
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
    assert first.embedded == len(first.cut.units) and second.embedded == 0
    query = "What is the dog called?"
    assert first.context(query).text == second.context(query).text


def test_native_and_exact_give_the_same_context(data, cache) -> None:
    from muster_exact.corpora import locomo_stores

    store = next(locomo_stores(data / "locomo/locomo10.json"))
    questions = [q["question"] for q in json.loads((data / "locomo/locomo10.json").read_text())[0]["qa"][:8]]
    native = build(store.source, models="cpu-small", mode="native", cache=cache)
    exact = build(store.source, models="cpu-small", mode="exact", cache=cache)
    assert native.plan.mode == "native" and exact.plan.mode == "exact"
    for q in questions:
        assert native.context(q).text == exact.context(q).text


def test_one_record_and_u_beyond_the_units(cache) -> None:
    memory = build(["The only note: the key is under the mat."], models="cpu-small", cache=cache)
    context = memory.context("Where is the key?", units=50)
    assert context.text == "The only note: the key is under the mat."
    many = build(CHAT, models="cpu-small", cache=cache)
    assert set(many.context("dog", units=500).unit_ids) == {u.id for u in many.cut.units}


@pytest.mark.parametrize(
    ("query", "units", "message"),
    [
        ("", None, "empty query"),
        ("  \n", None, "empty query"),
        ("x" * 100_000, None, "limited to"),
        ("ok?", 0, "positive whole number"),
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
    assert "order by rrf (reciprocal-rank fusion" in ok.stdout and "--- context ---" in ok.stdout
    as_json = run_muster("query", str(path), "Where does Caroline live?", "--json", env=env)
    assert json.loads(as_json.stdout)["plan"]["retrieval"]["rerank"] == "rrf"
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
        "import sys; sys.modules['rank_bm25'] = None\n"
        "from muster_exact.memory import build\n"
        "from muster_exact.models import MissingExtra\n"
        "try:\n    build(['a note'], models='cpu-small', cache=False)\n"
        "except MissingExtra as e:\n    print(e); sys.exit(3)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 3 and "pip install 'muster-memory[models]'" in result.stdout
