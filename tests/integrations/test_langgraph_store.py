"""``MusterBaseStore``: LangGraph's long-term memory store over a real MUSTER store file, used by a
compiled graph (nodes given the store by LangGraph) and called directly
(docs/decisions/0211-langgraph-store.md)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from muster_exact.serve.backend import Backend
from tests.integrations.conftest import copied

pytest.importorskip("langgraph")
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp

from muster_exact.integrations.langgraph_store import MusterBaseStore

pytestmark = pytest.mark.slow


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    opened = Backend(tmp_path / "graph.muster", models="cpu-small")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def sixty(sixty_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterBaseStore]:
    """The session's 60 records (written by ``Store.add``, in the default namespace), read only."""
    opened = Backend(copied(sixty_store, tmp_path_factory.mktemp("lg-sixty")), models="cpu-small")
    yield MusterBaseStore(opened)
    opened.close()


def _on_disk(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def test_a_graph_node_puts_and_the_next_searches_through_the_injected_store(backend: Backend) -> None:
    from langgraph.graph import END, START, StateGraph

    class Turn(TypedDict, total=False):
        user: str
        key: str
        fact: str
        question: str
        found: list[str]

    def remember(state: Turn, *, store: BaseStore) -> Turn:
        if state.get("fact"):
            store.put(("memories", state["user"]), state["key"], {"text": state["fact"], "speaker": "user"})
        return {}

    def recall(state: Turn, *, store: BaseStore) -> Turn:
        items = store.search(("memories", state["user"]), query=state["question"], limit=1)
        return {"found": [item.value["text"] for item in items]}

    graph = StateGraph(Turn)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    store = MusterBaseStore(backend)
    app = graph.compile(store=store)

    ask = "What is my locker number?"
    app.invoke({"user": "ana", "key": "locker", "fact": "My locker number is 417.", "question": ask})
    app.invoke({"user": "ana", "key": "mug", "fact": "The red mug is in the dishwasher.", "question": ask})
    app.invoke({"user": "ben", "key": "locker", "fact": "My locker is number 12.", "question": ask})
    assert app.invoke({"user": "ana", "question": ask})["found"] == ["My locker number is 417."]
    assert app.invoke({"user": "ben", "question": ask})["found"] == ["My locker is number 12."]
    assert app.invoke({"user": "cy", "question": ask})["found"] == []  # a namespace never written
    # Each LangGraph namespace is a MUSTER namespace of its own, the key the record's id.
    rows = backend.records(namespace="memories.ana")["records"]
    assert [(r["record"]["id"], r["record"]["speaker"]) for r in rows] == [
        ("locker", "user"),
        ("mug", "user"),
    ]
    assert rows[0]["record"]["text"] == "My locker number is 417."


def test_put_get_update_and_delete_erase_as_muster_does(backend: Backend) -> None:
    store = MusterBaseStore(backend)
    path = Path(backend.store().path)
    value = {"text": "Ana's passport number is X9137402.", "topic": "travel", "tags": ["id"]}
    store.put(("users", "ana"), "passport", value)
    first = store.get(("users", "ana"), "passport")
    assert first is not None and first.value == value and first.key == "passport"
    assert first.namespace == ("users", "ana") and first.created_at == first.updated_at
    assert store.get(("users", "ana"), "nothing") is None and store.get(("users", "ben"), "passport") is None

    store.put(("users", "ana"), "passport", {"text": "Ana's new passport number is K2208815."})
    again = store.get(("users", "ana"), "passport")
    assert again is not None and again.value == {"text": "Ana's new passport number is K2208815."}
    assert again.created_at == first.created_at and again.updated_at > first.updated_at
    assert backend.records(namespace="users.ana")["total"] == 1  # updated in place, not added
    assert b"X9137402" not in _on_disk(path)  # the old text erased, as an update erases it

    store.delete(("users", "ana"), "passport")
    assert store.get(("users", "ana"), "passport") is None
    assert b"K2208815" not in _on_disk(path)
    store.delete(("users", "ana"), "passport")  # a key that is not there: nothing, as LangGraph expects
    store.put(("users", "ana"), "mug", {"text": "The red mug is in the dishwasher."})
    store.batch([PutOp(("users", "ana"), "mug", None)])  # a put of None is a delete
    assert store.get(("users", "ana"), "mug") is None


def test_a_value_without_text_is_read_as_json_and_its_speaker_and_time_are_the_records(
    backend: Backend,
) -> None:
    store = MusterBaseStore(backend)
    store.put(("prefs",), "coffee", {"drink": "flat white", "sugar": 0, "role": "Ana", "date": "2024-05-01"})
    record = backend.records(namespace="prefs")["records"][0]["record"]
    assert record["text"] == '{"date": "2024-05-01", "drink": "flat white", "role": "Ana", "sugar": 0}'
    assert (record["speaker"], record["time"]) == ("Ana", "2024-05-01")
    assert backend.recall("What coffee does Ana drink?", namespace="prefs")["context"].count("flat white")
    found = store.search(("prefs",), query="coffee")[0]
    assert found.value["drink"] == "flat white" and isinstance(found.score, float)


def test_search_with_a_query_is_musters_read_of_records_written_another_way(
    sixty: MusterBaseStore,
) -> None:
    question = "Where does Hugo keep the spare key?"
    items = sixty.search(("default",), query=question, limit=3)
    best = sixty.backend.search(question, 1)["passages"][0]  # MUSTER's best unit
    assert [i.key for i in items] == best["records"][:3] and items[0].key == "hugo-key"
    assert items[0].value["speaker"] == "Hugo" and "blue flower pot" in items[0].value["text"]
    assert items[0].created_at.year == 1970  # not written by this store: no timestamps kept
    assert [i.key for i in sixty.search(("default",), query=question, limit=2, offset=1)] == [
        i.key for i in items[1:3]
    ]
    # A filter on the value narrows what the read returns; the budget grows until enough pass.
    ines = sixty.search(("default",), query=question, filter={"speaker": "Ines"}, limit=5)
    assert len(ines) == 5 and {i.value["speaker"] for i in ines} == {"Ines"}


def test_search_without_a_query_lists_in_stored_order_with_filters(sixty: MusterBaseStore) -> None:
    listed = sixty.search(("default",), limit=7, offset=3)
    assert [i.key for i in listed] == [r["id"] for r in list(sixty.backend.store().records())[3:10]]
    assert all(i.score is None for i in listed)
    people = sixty.search((), filter={"speaker": {"$ne": "Ana"}}, limit=100)
    assert len(people) == 55 and "ana-key" not in {i.key for i in people}


def test_filters_and_a_prefix_over_several_namespaces(backend: Backend) -> None:
    store = MusterBaseStore(backend)
    for user, n in (("ana", 3), ("ben", 5)):
        store.put(("notes", user), "score", {"text": f"{user} scored {n} points at darts.", "points": n})
        store.put(("notes", user), "pet", {"text": f"{user} has a cat called Miso {n}.", "points": 0})
    store.put(("other",), "darts", {"text": "The darts club meets on Fridays.", "points": 9})
    assert [i.key for i in store.search(("notes",), filter={"points": {"$gte": 3, "$lt": 5}})] == ["score"]
    assert {i.namespace for i in store.search(("notes",), filter={"points": {"$gt": 0}})} == {
        ("notes", "ana"),
        ("notes", "ben"),
    }
    found = store.search(("notes",), query="How many points at darts?", limit=4)
    # Each namespace read apart; their items taken in turn, the best of each first.
    assert [i.namespace[1] for i in found] == ["ana", "ben", "ana", "ben"]
    assert [i.key for i in found[:2]] == ["score", "score"]
    assert {i.namespace for i in store.search((), query="darts", limit=10)} == {
        ("notes", "ana"),
        ("notes", "ben"),
        ("other",),
    }
    with pytest.raises(ValueError, match=r"filter operator '\$in' is not one of"):
        store.search(("notes",), filter={"points": {"$in": [3]}})


def test_index_false_keeps_an_item_out_of_query_results_only(backend: Backend) -> None:
    store = MusterBaseStore(backend)
    store.put(("a",), "seen", {"text": "The spare key is under the blue pot."})
    store.put(("a",), "hidden", {"text": "The spare key is in the glovebox."}, index=False)
    assert [i.key for i in store.search(("a",), query="Where is the spare key?")] == ["seen"]
    assert store.get(("a",), "hidden") is not None and len(store.search(("a",))) == 2


def test_list_namespaces(backend: Backend) -> None:
    store = MusterBaseStore(backend)
    for namespace in [
        ("users", "ana", "prefs"),
        ("users", "ben", "prefs"),
        ("users", "ben", "v1"),
        ("docs",),
    ]:
        store.put(namespace, "k", {"text": "something worth keeping"})
    backend.remember("a record in the default namespace")
    everything = store.list_namespaces()
    assert everything == [
        ("default",),
        ("docs",),
        ("users", "ana", "prefs"),
        ("users", "ben", "prefs"),
        ("users", "ben", "v1"),
    ]
    assert store.list_namespaces(prefix=("users", "ben")) == [
        ("users", "ben", "prefs"),
        ("users", "ben", "v1"),
    ]
    assert store.list_namespaces(suffix=("prefs",)) == [("users", "ana", "prefs"), ("users", "ben", "prefs")]
    assert store.list_namespaces(prefix=("users", "*", "v1")) == [("users", "ben", "v1")]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [("users", "ana"), ("users", "ben")]
    assert store.list_namespaces(limit=2, offset=1) == [("docs",), ("users", "ana", "prefs")]
    store.delete(("docs",), "k")
    assert ("docs",) not in store.list_namespaces()  # a namespace without records is not listed


def test_async_calls_and_refusals(backend: Backend) -> None:
    from muster_exact.core.errors import InputError

    store = MusterBaseStore(backend)

    async def calls() -> tuple[Any, Any, Any]:
        await store.aput(("a",), "mug", {"text": "The red mug is in the dishwasher."})
        got = await store.aget(("a",), "mug")
        found = await store.asearch(("a",), query="Where is the red mug?")
        await store.adelete(("a",), "mug")
        return got, found, await store.aget(("a",), "mug")

    got, found, gone = asyncio.run(calls())
    assert got.value["text"].startswith("The red mug") and found[0].key == "mug" and gone is None
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"text": "x"})  # a label may not hold the separator
    with pytest.raises(InputError, match="'id' must be 1 to"):
        store.put(("a",), " ", {"text": "x"})
    with pytest.raises(InputError, match="not JSON-serialisable"):
        store.put(("a",), "k", {"text": "x", "when": object()})
    with pytest.raises(NotImplementedError):
        store.put(("a",), "k", {"text": "x"}, ttl=5)  # no TTL: said, not ignored


def test_import_muster_exact_imports_no_framework() -> None:
    code = (
        "import sys, muster_exact, muster_exact.integrations\n"
        "print(sorted(m for m in ('langgraph', 'langchain_core') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    from muster_exact import integrations

    assert integrations.MusterBaseStore is MusterBaseStore
