"""The hybrid baseline and native's ablations (issue 56; decisions 0219, 0220), on real builds with
the packaged embedder."""

from __future__ import annotations

import pytest

from muster_exact import rules
from muster_exact.memory import build, variants
from tests.channels.test_graph_current_facts import FACTS as GRAPH_FACTS

CHAT = [
    {"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon last month for the new job."},
    {"speaker": "Melanie", "time": "2023-05-08", "text": "How do you like the city so far?"},
    {"speaker": "Caroline", "time": "2023-05-09", "text": "Love it. My daughter Ana started school there."},
    {"speaker": "Melanie", "time": "2023-06-01", "text": "I adopted a dog named Pixel from the shelter."},
    {"speaker": "Caroline", "time": "2023-06-02", "text": "Pixel is a lovely name; what breed is the dog?"},
    {"speaker": "Melanie", "time": "2023-06-02", "text": "A beagle. She chews every shoe in the flat."},
] * 5

# The Steve Sax log, with the capital of Peru updated: a slot with two versions.
FACTS = GRAPH_FACTS + "7. The capital of Peru is Cusco.\n"


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "vectors.sqlite"


def test_hybrid_is_bm25_and_dense_fused_by_reciprocal_rank_sixty_filled_to_the_budget(cache) -> None:
    memory = build(CHAT, models="cpu-small", cache=cache)
    query = "What breed is the dog Melanie adopted?"
    n = len(memory.cut.units)
    # RRF by hand (Cormack et al. 2009): each ranking adds 1 / (60 + rank); ties by unit number.
    score: dict[int, float] = {}
    for name in ("bm25", "dense"):
        for rank, unit in enumerate(memory.channel(name).propose(query, n).units, start=1):
            score[unit] = score.get(unit, 0.0) + 1.0 / (60 + rank)
    fused = sorted(score, key=lambda u: (-score[u], u))
    budget = 3 * max(memory.unit_tokens)
    expected, used = [], 0
    for unit in fused:
        if used + memory.unit_tokens[unit] <= budget:
            expected.append(unit)
            used += memory.unit_tokens[unit]
    context = variants.context(memory, "hybrid", query, budget=budget)
    assert [p.unit for p in context.provenance] == expected  # shown best first
    assert context.tokens <= budget + 50  # the units' tokens, plus block headers
    assert {p.reason for p in context.provenance} == {"budget:hybrid"}
    with pytest.raises(Exception, match="needs a token budget"):
        variants.context(memory, "hybrid", query)


@pytest.mark.parametrize(
    "name",
    [
        "native_no_floors",
        "native_words_analyser",
        "native_fused_floors",
        "native_graph_always",
        "native_all_facts_graph",
        "native_any_pool",
    ],
)
def test_a_native_rule_turned_back_is_native_under_that_rule(cache, name) -> None:
    native = build(CHAT, models="cpu-small", cache=cache)
    query = "Where did Caroline move for the new job?"
    variant = variants.VARIANTS.get(name)
    changed = dict(variant.changes)
    assert changed and all(getattr(rules.NATIVE, rule) != value for rule, value in changed.items())
    assert variant.rules == rules.NATIVE.replace(**changed)
    assert variants.context(native, name, query) == native.under(variant.rules).context(query)
    assert variants.ruled(native, name) is variants.ruled(native, name)  # ruled once per memory


def test_budget_units_read_the_exact_memorys_cut_without_a_new_build(cache) -> None:
    exact = build(CHAT, models="cpu-small", cache=cache, rules=rules.EXACT)
    ruled = variants.ruled(exact, "native_budget_units")
    assert ruled.cut is exact.cut and ruled.rules == rules.NATIVE.replace(unit_size="budget")
    query = "Where did Caroline move for the new job?"
    assert variants.context(exact, "native_budget_units", query) == ruled.context(query)


def test_native_without_the_graph_score_order_and_every_version(cache) -> None:
    log = build(FACTS, models="cpu-small", cache=cache)
    assert log.plan.branch == "numbered_log" and log.plan.supersession
    query = "What is the capital of Peru?"
    native = log.context(query, 3)
    without_graph = variants.context(log, "native_no_graph", query, 3)
    assert all("graph" not in p.channels for p in without_graph.provenance)
    assert all(p.reason != "floor:graph" for p in without_graph.provenance)
    # Candidate order: the same units as native, shown by the candidate order instead of stored order.
    by_score = variants.context(log, "native_score_order", query, 3)
    assert {p.unit for p in by_score.provenance} == {p.unit for p in native.provenance}
    # The newest-version rule off: the superseded capital stays beside the newest one.
    kept = variants.context(log, "native_all_versions_kept", query, 3)
    assert "Cusco" in native.text and "Cusco" in kept.text and "The capital of Peru is Lima." in kept.text
    assert "The capital of Peru is Lima." not in native.text


def test_every_native_ablation_is_in_the_registry_in_the_tables_order() -> None:
    names = variants.of_kind("native_ablation")
    assert names[:2] == ("native_no_floors", "native_no_graph") and len(names) == 10
    assert "hybrid" in variants.BUDGETED
    for name in names:
        variant = variants.VARIANTS.get(name)
        assert variant.changes or variant.removes or variant.by_score or not variant.newest_only
