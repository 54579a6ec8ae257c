"""Each integration with its real framework package, called the way the framework calls it.

Installed on these machines (and in the Makefile's dev set): openai-agents,
langchain-core, langgraph. A framework that is missing skips its test and
its module raises MissingExtra naming the package.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

from muster_exact.serve.backend import Backend

pytestmark = pytest.mark.slow
NOTES = ["The boiler was serviced on 3 March.", "Ana's passport expires in June 2031."]


@pytest.fixture
def backend(tmp_path: Path) -> Backend:
    opened = Backend(tmp_path / "tools.muster", models="cpu-small")
    yield opened
    opened.close()


def test_openai_agents_function_tools(backend: Backend) -> None:
    agents = pytest.importorskip("agents")
    from agents.tool_context import ToolContext

    from muster_exact.integrations.openai_tools import memory_tools

    tools = {tool.name: tool for tool in memory_tools(backend)}
    assert set(tools) == {"remember", "recall", "search_memory", "forget"}
    assert all(isinstance(tool, agents.FunctionTool) for tool in tools.values())
    assert tools["remember"].params_json_schema["required"] == ["text", "speaker"]  # strict mode: all listed

    def invoke(name: str, arguments: dict) -> str:
        raw = json.dumps(arguments)
        context = ToolContext(context=None, tool_name=name, tool_call_id="call-1", tool_arguments=raw)
        return str(asyncio.run(tools[name].on_invoke_tool(context, raw)))

    for note in NOTES:
        assert json.loads(invoke("remember", {"text": note, "speaker": None}))["added"] == 1
    assert "June 2031" in invoke("recall", {"query": "When does Ana's passport expire?"})
    boiler = json.loads(invoke("search_memory", {"query": "boiler"}))[0]["records"]
    assert invoke("remember", {"text": "  ", "speaker": None}).startswith("error: record 0 has empty text")
    assert json.loads(invoke("forget", {"ids": boiler}))["deleted"] == boiler
    assert "boiler" not in invoke("recall", {"query": "When was the boiler serviced?"})
    assert invoke("forget", {"ids": boiler}).startswith(f"error: no record {boiler[0]!r}")  # gone, refused


def test_langchain_tools(backend: Backend) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.tools import BaseTool

    from muster_exact.integrations.langchain_tools import memory_tools

    tools = {tool.name: tool for tool in memory_tools(backend)}
    assert set(tools) == {"remember", "recall", "search_memory", "forget"} and all(
        isinstance(t, BaseTool) for t in tools.values()
    )
    assert "query" in tools["recall"].args
    # Every argument is described in the schema the model reads (issue 54: they were bare names).
    for tool in tools.values():
        assert tool.args and all(arg.get("description") for arg in tool.args.values()), tool.args
        assert "Args:" not in tool.description  # the docstring's argument lines went to the schema
    for note in NOTES:
        assert json.loads(tools["remember"].invoke({"text": note}))["added"] == 1
    # The way an agent calls a tool: a ToolCall dict, answered with a ToolMessage.
    message = tools["recall"].invoke(
        {
            "name": "recall",
            "args": {"query": "When was the boiler serviced?"},
            "id": "c1",
            "type": "tool_call",
        }
    )
    assert "3 March" in message.content and message.tool_call_id == "c1"
    assert tools["recall"].invoke({"query": ""}).startswith("error: empty query")
    passport = json.loads(tools["search_memory"].invoke({"query": "passport"}))[0]["records"]
    assert json.loads(tools["forget"].invoke({"ids": passport}))["deleted"] == passport
    assert "June 2031" not in tools["recall"].invoke({"query": "When does Ana's passport expire?"})


def test_langgraph_node_recalls_into_state_and_remembers_the_turn(backend: Backend) -> None:
    pytest.importorskip("langgraph")

    class Turn(TypedDict, total=False):
        question: str
        memory: str
        answer: str
        turn_id: str

    def model(state: Turn) -> Turn:  # a stand-in for the chat model: it answers from memory
        return {"answer": f"From memory: {state['memory'][:60]}" if state["memory"] else "I don't know yet."}

    app = _graph(backend, Turn, model)
    first = app.invoke({"question": "My locker number is 417. Can you keep that?", "turn_id": "t1"})
    assert first["memory"] == "" and first["answer"] == "I don't know yet."
    again = app.invoke({"question": "My locker number is 417. Can you keep that?", "turn_id": "t1"})
    assert backend.store().head().records == 2  # the retried turn was not remembered twice
    second = app.invoke({"question": "What is my locker number?", "turn_id": "t2"})
    assert "417" in second["memory"] and again["memory"]
    texts = [r["text"] for r in backend.store().records()]
    assert texts[0].startswith("My locker number is 417") and texts[-1].startswith("From memory:")


def _graph(backend: Backend, state: type, model: Callable[..., Any], **options: Any) -> Any:
    """memory -> model -> remember, the graph an agent builds around its chat model."""
    from langgraph.graph import END, START, StateGraph

    from muster_exact.integrations.langgraph_node import memory_node, remember_node

    graph = StateGraph(state)
    graph.add_node("memory", memory_node(backend, **options))
    graph.add_node("model", model)
    graph.add_node("remember", remember_node(backend))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "model")
    graph.add_edge("model", "remember")
    graph.add_edge("remember", END)
    return graph.compile()


def _messages_graph(backend: Backend, state: type, **options: Any) -> Any:
    from langchain_core.messages import AIMessage

    def model(state: dict[str, Any]) -> dict[str, Any]:  # a stand-in: it answers from what it was shown
        shown = [m for m in state["messages"] if m.type == "system" and m.name == "memory"]
        memory = state.get("memory") or (shown[-1].content if shown else "")
        return {"messages": [AIMessage(content=f"From memory: {memory[:80]}" if memory else "Noted.")]}

    return _graph(backend, state, model, **options)


def test_langgraph_node_with_messages_state(backend: Backend) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import HumanMessage
    from langgraph.graph import MessagesState

    app = _messages_graph(backend, MessagesState)
    first = app.invoke({"messages": [HumanMessage("My locker number is 417.", id="m1")]})
    assert [m.type for m in first["messages"]] == ["human", "ai"]  # memory was empty: nothing added
    assert first["messages"][-1].content == "Noted."
    # The same turn again (a retry, same message id): remembered once.
    app.invoke({"messages": [HumanMessage("My locker number is 417.", id="m1")]})
    assert backend.store().head().records == 2
    # The next turn continues the conversation: the question is the last human message.
    second = app.invoke(
        {"messages": [*first["messages"], HumanMessage("What is my locker number?", id="m2")]}
    )
    memory = [m for m in second["messages"] if m.type == "system"]
    assert len(memory) == 1 and memory[0].name == "memory" and "417" in memory[0].content
    assert second["messages"][-1].content.startswith("From memory:")
    texts = [r["text"] for r in backend.store().records()]
    assert texts == ["My locker number is 417.", "Noted.", "What is my locker number?", texts[-1]]
    assert texts[-1].startswith("From memory:")


def test_langgraph_node_with_a_custom_key_and_a_clear_error_without_one(backend: Backend) -> None:
    pytest.importorskip("langgraph")
    from langgraph.graph import MessagesState

    from muster_exact.core.errors import InputError
    from muster_exact.integrations.langgraph_node import memory_node

    class WithMemory(MessagesState):
        memory: str

    backend.remember("The boiler was serviced on 3 March.")
    app = _messages_graph(backend, WithMemory, memory_key="memory")
    out = app.invoke({"messages": [("user", "When was the boiler serviced?")]})
    assert "3 March" in out["memory"] and all(m.type != "system" for m in out["messages"])
    assert "3 March" in out["messages"][-1].content

    node = memory_node(backend)
    with pytest.raises(InputError, match="no question: it looked for a human message"):
        node({"messages": [], "topic": "boilers"})
    with pytest.raises(InputError, match=r"state\['prompt'\]"):
        memory_node(backend, question_key="prompt")({"question": "q"})


@pytest.mark.parametrize("remember_question", [True, False])
def test_langgraph_node_keeps_the_question_or_not_as_asked(backend: Backend, remember_question: bool) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import HumanMessage
    from langgraph.graph import MessagesState

    backend.remember("The boiler was serviced on 3 March.")
    app = _messages_graph(backend, MessagesState, remember_question=remember_question)
    out = app.invoke({"messages": [HumanMessage("When was the boiler serviced?", id="m1")]})
    answer = out["messages"][-1].content
    assert "3 March" in answer  # the question is read (recalled with) either way
    texts = [r["text"] for r in backend.store().records()]
    asked = ["When was the boiler serviced?"] if remember_question else []
    assert texts == ["The boiler was serviced on 3 March.", *asked, answer]  # the answer is kept either way


def test_langgraph_node_keeps_the_question_by_default_and_refuses_a_non_bool(backend: Backend) -> None:
    pytest.importorskip("langgraph")
    from muster_exact.core.errors import InputError
    from muster_exact.integrations.langgraph_node import memory_node

    memory_node(backend)({"question": "My locker number is 417."})
    assert [r["text"] for r in backend.store().records()] == ["My locker number is 417."]
    with pytest.raises(InputError, match="remember_question must be True or False, not 'no'"):
        memory_node(backend, remember_question="no")  # type: ignore[arg-type]


def test_langchain_retriever_returns_documents_with_ids(backend: Backend) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from muster_exact.core.errors import InputError
    from muster_exact.integrations.langchain_tools import MusterRetriever

    backend.remember([{"id": "boiler", "text": NOTES[0]}, {"id": "passport", "text": NOTES[1]}])
    retriever = MusterRetriever(backend=backend, units=1)
    assert isinstance(retriever, BaseRetriever)
    documents = retriever.invoke("When does Ana's passport expire?")
    # Short records are packed into one unit: the passage is that unit, naming both its records.
    assert len(documents) == 1 and isinstance(documents[0], Document)
    assert documents[0].page_content == "\n\n".join(NOTES)
    assert documents[0].metadata["records"] == ["boiler", "passport"]
    assert isinstance(documents[0].metadata["unit"], int)
    assert {"channels", "rerank_rank", "reason"} <= set(documents[0].metadata)
    assert asyncio.run(retriever.ainvoke("boiler"))[0].metadata["records"] == ["boiler", "passport"]
    other = MusterRetriever(backend=backend, namespace="nobody")
    assert other.invoke("boiler") == []  # a namespace never written: no passages
    with pytest.raises(InputError, match="empty query"):
        retriever.invoke("")


def test_the_retriever_without_langchain_core_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import muster_exact.integrations.langchain_tools as tools
    from muster_exact.core.optional import Extra, MissingExtra

    monkeypatch.setitem(sys.modules, "langchain_core.retrievers", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "muster_exact.integrations.langchain_retriever", raising=False)
    with pytest.raises(MissingExtra, match=re.escape(str(Extra("langchain")))):
        tools.MusterRetriever  # noqa: B018 (the attribute access is the call under test)
