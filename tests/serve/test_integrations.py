"""Each integration with its real framework package, called the way the framework calls it.

Installed on these machines (and in the Makefile's dev set): openai-agents,
langchain-core, langgraph. A framework that is missing skips its test and
its module raises MissingExtra naming the package.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TypedDict

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
    assert set(tools) == {"remember", "recall", "search_memory"}
    assert all(isinstance(tool, agents.FunctionTool) for tool in tools.values())
    assert tools["remember"].params_json_schema["required"] == ["text", "speaker"]  # strict mode: all listed

    def invoke(name: str, arguments: dict) -> str:
        raw = json.dumps(arguments)
        context = ToolContext(context=None, tool_name=name, tool_call_id="call-1", tool_arguments=raw)
        return str(asyncio.run(tools[name].on_invoke_tool(context, raw)))

    for note in NOTES:
        assert json.loads(invoke("remember", {"text": note, "speaker": None}))["added"] == 1
    assert "June 2031" in invoke("recall", {"query": "When does Ana's passport expire?"})
    assert json.loads(invoke("search_memory", {"query": "boiler"}))[0]["records"]
    assert invoke("remember", {"text": "  ", "speaker": None}).startswith("error: record 0 has empty text")


def test_langchain_tools(backend: Backend) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.tools import BaseTool

    from muster_exact.integrations.langchain_tools import memory_tools

    tools = {tool.name: tool for tool in memory_tools(backend)}
    assert set(tools) == {"remember", "recall", "search_memory"} and all(
        isinstance(t, BaseTool) for t in tools.values()
    )
    assert "query" in tools["recall"].args
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


def test_langgraph_node_recalls_into_state_and_remembers_the_turn(backend: Backend) -> None:
    pytest.importorskip("langgraph")
    from langgraph.graph import END, START, StateGraph

    from muster_exact.integrations.langgraph_node import memory_node, remember_node

    class Turn(TypedDict, total=False):
        question: str
        memory: str
        answer: str
        turn_id: str

    def model(state: Turn) -> Turn:  # a stand-in for the chat model: it answers from memory
        return {"answer": f"From memory: {state['memory'][:60]}" if state["memory"] else "I don't know yet."}

    graph = StateGraph(Turn)
    graph.add_node("memory", memory_node(backend))
    graph.add_node("model", model)
    graph.add_node("remember", remember_node(backend))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "model")
    graph.add_edge("model", "remember")
    graph.add_edge("remember", END)
    app = graph.compile()

    first = app.invoke({"question": "My locker number is 417. Can you keep that?", "turn_id": "t1"})
    assert first["memory"] == "" and first["answer"] == "I don't know yet."
    again = app.invoke({"question": "My locker number is 417. Can you keep that?", "turn_id": "t1"})
    assert backend.store().head().records == 2  # the retried turn was not remembered twice
    second = app.invoke({"question": "What is my locker number?", "turn_id": "t2"})
    assert "417" in second["memory"] and again["memory"]
    texts = [r["text"] for r in backend.store().records()]
    assert texts[0].startswith("My locker number is 417") and texts[-1].startswith("From memory:")
