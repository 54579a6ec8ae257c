"""`muster mcp` as a subprocess, driven by the official SDK's own stdio client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, no_hub_env, torch_blocked_env

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow


async def session_calls(store: str, home: Path) -> dict:
    """The README's client configuration (``mcp --store F``, no --models) on a machine with no
    model hub: the default profile must serve contexts. ``store``: a file, or a database's URL."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "muster_exact", "mcp", "--store", store],
        env=no_hub_env(home),
        cwd=str(REPO),
    )
    out: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        out["tools"] = {t.name: t for t in tools.tools}
        out["remember"] = await session.call_tool(
            "remember",
            {"text": "The spare key is under the blue flower pot.", "speaker": "Ana", "request_id": "k1"},
        )
        out["again"] = await session.call_tool(
            "remember",
            {"text": "The spare key is under the blue flower pot.", "speaker": "Ana", "request_id": "k1"},
        )
        out["conflict"] = await session.call_tool(
            "remember", {"text": "The spare key is under the red flower pot.", "request_id": "k1"}
        )
        out["many"] = await session.call_tool(
            "remember_many",
            {
                "records": [
                    "Bruno's bike is in the garage.",
                    {"text": "The wifi password is on the fridge.", "speaker": "Ana"},
                ]
            },
        )
        out["recall"] = await session.call_tool("recall", {"query": "Where is the spare key?"})
        out["search"] = await session.call_tool(
            "search_memory", {"query": "Where is the spare key?", "units": 2}
        )
        out["info"] = await session.call_tool("memory_info", {})
        out["bad"] = await session.call_tool("remember", {"text": "   "})
        out["bad_units"] = await session.call_tool("recall", {"query": "key?", "units": 0})
        out["forget_request"] = await session.call_tool("forget", {"request_id": "k1"})
        out["forget_id"] = await session.call_tool("forget", {"ids": ["r2"]})
        out["forget_missing"] = await session.call_tool("forget", {"ids": ["r2", "r3"]})
        out["after"] = await session.call_tool("recall", {"query": "Where is the spare key?"})
    return out


def payload(result) -> dict:  # type: ignore[no-untyped-def]
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


@pytest.fixture(params=["file", "postgres"])
def agent_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the agent's memory lives: a new file, or a new PostgreSQL database (tests/postgres.py)."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "agent.muster")


def test_an_mcp_client_remembers_and_recalls(agent_store: str, tmp_path: Path) -> None:
    store = agent_store
    out = asyncio.run(session_calls(store, tmp_path))
    assert set(out["tools"]) == {
        "remember",
        "remember_many",
        "recall",
        "search_memory",
        "forget",
        "update_memory",
        "import_memories",
        "list_memories",
        "memory_info",
    }
    for tool in out["tools"].values():
        assert tool.description and len(tool.description) > 40  # every tool documents itself
    assert "query" in out["tools"]["recall"].input_schema["properties"]
    assert "up to 10,000" in out["tools"]["remember_many"].description
    assert payload(out["remember"])["added"] == 1
    assert payload(out["again"])["replayed"] is True
    conflict = out["conflict"]  # the same request id with another body: refused, nothing written
    assert conflict.is_error and conflict.content[0].text.startswith("RequestConflict: request_id 'k1'")
    assert payload(out["many"])["added"] == 2
    recall = payload(out["recall"])
    assert "The spare key is under the blue flower pot." in recall["context"]
    passages = payload(out["search"])["passages"]
    assert passages and all({"unit", "text", "records", "channels"} <= set(p) for p in passages)
    info = payload(out["info"])
    assert info["head"]["records"] == 3 and info["models"]["name"] == "cpu-small"
    assert "did not answer" in info["models"]["chosen_by"]  # auto says why it chose the CPU models
    assert info["namespaces"] == ["default"] and "path" not in info  # the stdio client started the server
    assert out["bad"].is_error and "empty text" in out["bad"].content[0].text
    assert out["bad_units"].is_error and "units must be" in out["bad_units"].content[0].text
    schema = out["tools"]["forget"].input_schema["properties"]
    assert schema["ids"]["type"] == ["array", "null"] and "request_id" in schema
    assert payload(out["forget_request"])["deleted"] == ["r1"]
    assert payload(out["forget_id"])["deleted"] == ["r2"] and not payload(out["forget_id"])["erase_pending"]
    missing = out["forget_missing"]
    assert missing.is_error and missing.content[0].text.startswith("InputError: no record 'r2'")
    assert "spare key" not in payload(out["after"])["context"]
    # The refused calls wrote nothing, and the refused forget deleted nothing (r3 is still there).
    from muster_exact.store import Store

    with Store.open(store) as opened:
        assert [r["id"] for r in opened.records()] == ["r3"]


async def recall_without_torch(store: Path, log: Path) -> str:
    """One remember and one recall on a server whose Python cannot import torch."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**no_hub_env(store.parent), **torch_blocked_env(store.parent)}
    command = ["-m", "muster_exact", "mcp", "--store", str(store)]
    params = StdioServerParameters(command=sys.executable, args=command, env=env, cwd=str(REPO))
    with log.open("w") as errlog:
        client = stdio_client(params, errlog=errlog)
        async with client as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("remember", {"text": "The red mug is on the shelf."})
            recalled = await session.call_tool("recall", {"query": "Where is the mug?"})
    return str(payload(recalled)["context"])


def test_the_model_loads_at_start_and_recall_runs_without_torch(tmp_path: Path) -> None:
    """Issue 29: the model is loaded at start-up, said in one line, and no tool call needs torch."""
    log = tmp_path / "server.log"
    context = asyncio.run(recall_without_torch(tmp_path / "agent.muster", log))
    assert "The red mug is on the shelf." in context
    said = log.read_text()
    loaded = [line for line in said.splitlines() if "before the first request" in line]
    assert len(loaded) == 1 and "loaded packaged:all-MiniLM-L6-v2 in " in loaded[0], said
    assert loaded[0].startswith("INFO muster_exact.cli: "), said  # ordinary news, not a WARNING
    assert "Traceback" not in said, said
