"""MUSTER memory as OpenAI Agents SDK function tools.

from agents import Agent
from muster_exact.serve.backend import Backend
from muster_exact.integrations.openai_tools import memory_tools

agent = Agent(name="assistant", tools=memory_tools(Backend("agent.muster", models="cpu-small")))
"""

from __future__ import annotations

from typing import Any

from muster_exact.integrations import require, told
from muster_exact.serve.backend import Backend


def memory_tools(backend: Backend, namespace: str | None = None) -> list[Any]:
    """``remember``, ``recall``, ``search_memory`` and ``forget`` as ``agents.FunctionTool`` objects."""
    agents = require("agents", "openai-agents")

    def remember(text: str, speaker: str | None = None) -> str:
        """Keep something in long-term memory, verbatim.

        Args:
            text: What to remember, word for word.
            speaker: Who said or observed it (optional).
        """
        record: dict[str, Any] = {"text": text} if speaker is None else {"text": text, "speaker": speaker}
        return told(lambda: backend.remember(record, namespace=namespace))

    def recall(query: str) -> str:
        """Read the memory's excerpts about a question, in their original order, before answering.

        Args:
            query: The question to find memories for.
        """
        return told(lambda: backend.recall(query, namespace=namespace)["context"])

    def search_memory(query: str) -> str:
        """List the memory passages that match a question, best first, with their ids.

        Args:
            query: The question to find passages for.
        """
        return told(lambda: backend.search(query, namespace=namespace)["passages"])

    def forget(ids: list[str]) -> str:
        """Delete memories, and every trace of them, by the record ids search_memory lists.

        Args:
            ids: The record ids to delete (each as search_memory lists it, e.g. "r3").
        """
        return told(lambda: backend.forget(ids=ids, namespace=namespace))

    tools = (remember, recall, search_memory, forget)
    return [agents.function_tool(f, name_override=f.__name__) for f in tools]
