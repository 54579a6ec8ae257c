"""MUSTER memory as LangChain tools.

from muster_exact.serve.backend import Backend
from muster_exact.integrations.langchain_tools import memory_tools

tools = memory_tools(Backend("agent.muster", models="cpu-small"))   # bind to any chat model
"""

from __future__ import annotations

from typing import Any

from muster_exact.integrations import require, told
from muster_exact.serve.backend import Backend


def memory_tools(backend: Backend, namespace: str | None = None) -> list[Any]:
    """``remember``, ``recall`` and ``search_memory`` as ``langchain_core`` structured tools."""
    tools = require("langchain_core.tools", "langchain-core")

    def remember(text: str, speaker: str | None = None) -> str:
        """Keep something in long-term memory, verbatim. speaker: who said or observed it (optional)."""
        record: dict[str, Any] = {"text": text} if speaker is None else {"text": text, "speaker": speaker}
        return told(lambda: backend.remember(record, namespace=namespace))

    def recall(query: str) -> str:
        """Read the memory's excerpts about a question, in their original order, before answering."""
        return told(lambda: backend.recall(query, namespace=namespace)["context"])

    def search_memory(query: str) -> str:
        """List the memory passages that match a question, best first, with their ids."""
        return told(lambda: backend.search(query, namespace=namespace)["passages"])

    return [tools.StructuredTool.from_function(f) for f in (remember, recall, search_memory)]
