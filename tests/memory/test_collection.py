"""Two stores read side by side: a Mem0-style export beside the LoCoMo conversation it was
written from (``muster_exact.memory.collection``).

The export is LoCoMo's own per-session observations of conv-26 (facts a model wrote about the
conversation, each with the turn it came from), one memory per line in write order, numbered as
a Mem0 export is read: ``1. Caroline attended an LGBTQ support group ...``. The conversation is
its 419 turns as records. Real data from ../shared/data, the packaged embedder.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest

import muster_exact
from muster_exact.core.errors import InputError
from muster_exact.memory import planned
from muster_exact.memory.collection import Collection, MemberBlock
from muster_exact.retrieve.select import apportioned
from muster_exact.text import tokens
from muster_exact.verify.corpora import locomo_sessions
from tests.conftest import data_root

pytestmark = pytest.mark.slow
MODELS = "cpu-small"
EXPORT_SIZE = 40  # memories: the observations of conv-26's first sessions, in write order


def conversation() -> dict[str, Any]:
    root = data_root()
    assert root is not None, "benchmark data not found"
    sample: dict[str, Any] = json.loads((root / "locomo/locomo10.json").read_text())[0]
    return sample


def observations(sample: dict[str, Any]) -> list[tuple[str, str]]:
    """(memory, the turn it came from), session by session, in the order LoCoMo wrote them."""
    sessions = sorted(sample["observation"], key=lambda key: int(key.split("_")[1]))
    return [
        (text, evidence)
        for key in sessions
        for facts in sample["observation"][key].values()
        for text, evidence in facts
    ][:EXPORT_SIZE]


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    return conversation()


@pytest.fixture(scope="module")
def members(sample: dict[str, Any]) -> dict[str, Any]:
    export = "\n".join(f"{i}. {memory}" for i, (memory, _) in enumerate(observations(sample), start=1))
    turns = [
        {"id": t["dia_id"], "speaker": t["speaker"], "time": date, "text": t["text"]}
        for _, date, session in locomo_sessions(sample["conversation"])
        for t in session
    ]
    return {"mem0": export, "conversation": turns}


@pytest.fixture(scope="module")
def collection(members: dict[str, Any]) -> Collection:
    built = muster_exact.build_collection(members, models=MODELS)
    assert isinstance(built, Collection)
    return built


def test_each_member_is_derived_by_its_own_rule(members: dict[str, Any]) -> None:
    plans = muster_exact.derive_collection(members)
    assert list(plans) == ["mem0", "conversation"]
    # Each member's plan is the one derive gives it alone...
    for name, data in members.items():
        assert plans[name] == muster_exact.derive(data)
    # ...so the two differ as their stores do: the export numbers its lines, the chat is records.
    mem0, chat = plans["mem0"], plans["conversation"]
    assert (mem0.branch, mem0.parent_rule, mem0.order, mem0.supersession) == (
        "numbered_log",
        "slot",
        "serial",
        True,
    )
    assert (chat.branch, chat.parent_rule, chat.order, chat.supersession) == (
        "record_store",
        "group",
        "stored",
        False,
    )
    assert mem0.floors == {"dense": 2, "bm25": 0, "graph": 8} != chat.floors
    assert mem0.stats.units == EXPORT_SIZE and chat.stats.records == len(members["conversation"])
    # The same memories written without serials are one block of plain lines: prose, again by
    # the rule, not by the member's name.
    plain = "\n".join(line.split(". ", 1)[1] for line in members["mem0"].split("\n"))
    assert muster_exact.derive_collection({"mem0": plain})["mem0"].branch == "prose"


def test_built_members_keep_the_plans_a_build_of_each_alone_gives(
    collection: Collection, members: dict[str, Any]
) -> None:
    assert list(collection.plans) == ["mem0", "conversation"]
    for name, data in members.items():
        plan = collection.plans[name]
        assert plan == planned(data, models=MODELS)[0]  # the cut at the embedder's window too
        assert plan.retrieval is not None and plan.retrieval.models == MODELS
    # Derive alone (no models) cuts the numbered log alike, the chat at the record budget.
    alone = {name: muster_exact.derive(data) for name, data in members.items()}
    assert dataclasses.replace(collection.plans["mem0"], retrieval=None) == alone["mem0"]
    assert (alone["conversation"].unit_budget, collection.plans["conversation"].unit_budget) == (512, 256)
    assert collection.explain().startswith("## mem0\n") and "\n\n## conversation\n" in collection.explain()


def test_one_context_names_its_member_on_every_block(collection: Collection, sample: dict[str, Any]) -> None:
    question = sample["qa"][0]["question"]
    ctx = collection.context(question)
    alone = {name: memory.context(question) for name, memory in collection.members.items()}
    # With no U given each member reads its own plan's U: its part is the context it gives alone.
    assert ctx.units_read == {"mem0": 10, "conversation": 10}
    assert {name: c.text for name, c in ctx.members.items()} == {n: c.text for n, c in alone.items()}
    # One text: a section per member in member order, headed by its name.
    assert ctx.text == f"## mem0\n{alone['mem0'].text}\n\n## conversation\n{alone['conversation'].text}"
    assert ctx.tokens == tokens.count(ctx.text)
    # Every block names its member, members' blocks in member order, each in its own order.
    assert all(isinstance(b, MemberBlock) for b in ctx.blocks)
    expected = [(name, b) for name in ("mem0", "conversation") for b in alone[name].blocks]
    assert [(b.member, (b.parent, b.units, b.records, b.text)) for b in ctx.blocks] == [
        (name, (b.parent, b.units, b.records, b.text)) for name, b in expected
    ]
    assert {b.member for b in ctx.blocks} == {"mem0", "conversation"}
    conversation_ids = {r for b in ctx.blocks if b.member == "conversation" for r in b.records}
    assert conversation_ids and all(r.startswith("D") for r in conversation_ids)  # LoCoMo's own ids
    assert ctx.messages()[1]["content"].startswith(f"Memory:\n{ctx.text}\n\nQuestion: {question}")
    assert json.loads(json.dumps(ctx.to_dict()))["blocks"][0]["member"] == "mem0"


def test_a_question_answered_in_the_export_reads_the_exports_block(
    collection: Collection, sample: dict[str, Any]
) -> None:
    """For each of LoCoMo's questions whose evidence turn is the source of a memory in the
    export, that memory is in one of the export's blocks, with the export read at 3 units."""
    written = {evidence: memory for memory, evidence in observations(sample)}
    asked = [
        (qa["question"], written[qa["evidence"][0]])
        for qa in sample["qa"][:8]
        if qa["evidence"] and qa["evidence"][0] in written
    ]
    assert len(asked) >= 3
    for question, memory in asked:
        ctx = collection.context(question, units={"mem0": 3})
        assert ctx.units_read == {"mem0": 3, "conversation": 10}
        shown = [b for b in ctx.blocks if b.member == "mem0"]
        assert len(shown) <= 3 and any(memory in b.text for b in shown), (question, memory, shown)
        assert ctx.text.startswith("## mem0\n")


def test_a_read_budget_is_shared_in_proportion_to_the_members_own(
    collection: Collection, sample: dict[str, Any]
) -> None:
    assert collection.shares() == {"mem0": 10, "conversation": 10}
    assert collection.shares(20) == {"mem0": 10, "conversation": 10}
    assert collection.shares(7) == {"mem0": 4, "conversation": 3}  # a tie: the first member rounds up
    assert collection.shares({"conversation": 4}) == {"mem0": 10, "conversation": 4}
    assert apportioned([10, 40], 10) == [2, 8] and apportioned([10, 10, 40], 2) == [1, 0, 1]
    # A share of nothing: that member is not read and has no section.
    assert collection.shares(1) == {"mem0": 1, "conversation": 0}
    question = sample["qa"][0]["question"]
    one = collection.context(question, 1)
    assert list(one.members) == ["mem0"] and {b.member for b in one.blocks} == {"mem0"}
    assert one.text == f"## mem0\n{collection.members['mem0'].context(question, 1).text}"
    for bad in (0, -3, True, 2.5, {"mem1": 3}, {"mem0": 0}):
        with pytest.raises(InputError):
            collection.shares(bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="not a member; the members are mem0, conversation"):
        collection.context(question, {"memo": 3})


@pytest.mark.parametrize(
    "members",
    [{}, [("a", "text")], {"": "text"}, {"  ": "text"}, {"a\nb": "text"}, {3: "text"}, {"x" * 513: "t"}],
)
def test_a_collection_needs_named_members(members: Any) -> None:
    with pytest.raises(InputError):
        muster_exact.derive_collection(members)
    with pytest.raises(InputError):
        muster_exact.build_collection(members, models=MODELS)


def test_a_member_of_a_collection_is_a_built_memory() -> None:
    with pytest.raises(InputError, match="not a built Memory"):
        Collection({"notes": "1. The CEO of Acme is Ann Lee."})


def test_derive_collection_loads_no_heavy_module() -> None:
    stores = {"log": "1. The CEO of Acme is Ann Lee.\n2. The CEO of Acme is Bo Li.", "chat": [{"text": "hi"}]}
    code = (
        "import sys, muster_exact\n"
        f"muster_exact.derive_collection({stores!r})\n"
        "print(','.join(m for m in ('torch', 'sentence_transformers', 'numpy') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
