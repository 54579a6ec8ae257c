"""MUSTER memory as LangChain tools, and as a retriever beside them.

from muster_exact.serve.backend import Backend
from muster_exact.integrations.langchain_tools import MusterRetriever, memory_tools

backend = Backend("agent.muster", models="cpu-small")
tools = memory_tools(backend)                  # bind to any chat model
retriever = MusterRetriever(backend=backend)   # a BaseRetriever: Documents with unit and record ids

``MusterRetriever`` lives in :mod:`.langchain_retriever` (it subclasses a LangChain class, so it
is defined only once langchain-core is imported) and is imported from here on first use.
"""

from __future__ import annotations

from typing import Any

from muster_exact.integrations import require, told
from muster_exact.serve.backend import Backend


def memory_tools(backend: Backend, namespace: str | None = None) -> list[Any]:
    """``remember``, ``recall``, ``search_memory`` and ``forget`` as ``langchain_core`` structured tools."""
    tools = require("langchain_core.tools", "langchain")

    def remember(text: str, speaker: str | None = None) -> str:
        """Keep something in long-term memory, verbatim.

        Args:
            text: What to keep, word for word (a fact, a message, an observation).
            speaker: Who said or observed it (optional).
        """
        record: dict[str, Any] = {"text": text} if speaker is None else {"text": text, "speaker": speaker}
        return told(lambda: backend.remember(record, namespace=namespace))

    def recall(query: str) -> str:
        """Read the memory's excerpts about a question, in their original order, before answering.

        Args:
            query: The question to answer, in plain words.
        """
        return told(lambda: backend.recall(query, namespace=namespace)["context"])

    def search_memory(query: str) -> str:
        """List the memory passages that match a question, best first, with their record ids.

        Args:
            query: What to look for, in plain words.
        """
        return told(lambda: backend.search(query, namespace=namespace)["passages"])

    def forget(ids: list[str]) -> str:
        """Delete memories, and every trace of them, by their record ids.

        Args:
            ids: The record ids to delete, as search_memory lists them (e.g. ["r3"]).
        """
        return told(lambda: backend.forget(ids=ids, namespace=namespace))

    # parse_docstring: each argument's line above becomes its description in the tool's schema,
    # which is what the model reads when it decides how to call the tool.
    return [
        tools.StructuredTool.from_function(f, parse_docstring=True)
        for f in (remember, recall, search_memory, forget)
    ]


def __getattr__(name: str) -> Any:
    """``MusterRetriever`` on first use: this module stays importable without langchain-core."""
    if name == "MusterRetriever":
        from muster_exact.integrations.langchain_retriever import MusterRetriever

        return MusterRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
