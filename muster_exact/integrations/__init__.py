"""Memory as tools inside agent frameworks, each importable only when its framework is installed:

* :mod:`.openai_tools`: OpenAI Agents SDK function tools (the ``openai-agents`` extra);
* :mod:`.langchain_tools`: LangChain tools (the ``langchain`` extra);
* :mod:`.langgraph_node`: a LangGraph node that recalls into state and remembers the turn
  (the ``langgraph`` extra);
* :mod:`.langchain_retriever`: :class:`MusterRetriever`, a LangChain ``BaseRetriever``
  (``k`` Documents, or a read of U units);
* :mod:`.langgraph_store`: :class:`MusterBaseStore`, LangGraph's long-term memory store
  (``BaseStore``: namespaced put, get, search, delete) over a MUSTER store file.

The two classes subclass their framework's base, so they are defined only once it is imported:
``from muster_exact.integrations import MusterBaseStore`` imports langgraph then, not
``import muster_exact``.

A missing framework raises :class:`muster_exact.core.optional.MissingExtra` (:func:`require`).

All of them call :class:`muster_exact.serve.backend.Backend`, and turn a typed
library error into a message the model can read (``error: ...``) rather than
an exception that ends the agent's run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from muster_exact.core import optional
from muster_exact.core.errors import MusterError


def told(call: Callable[[], Any]) -> str:
    """A tool's reply to the model: the result as text (JSON for objects), or ``error: <message>``."""
    try:
        result = call()
    except MusterError as exc:
        return f"error: {exc}"
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def require(module: str, extra: str) -> Any:
    """A framework an integration needs (:func:`muster_exact.core.optional.require`), ``extra`` the
    extra that installs it (``langchain``, ``langgraph``, ``openai-agents``)."""
    return optional.require(module, optional.Extra(extra))


def __getattr__(name: str) -> Any:
    """``MusterRetriever`` and ``MusterBaseStore`` on first use (each imports its framework)."""
    if name == "MusterRetriever":
        from muster_exact.integrations.langchain_retriever import MusterRetriever

        return MusterRetriever
    if name == "MusterBaseStore":
        from muster_exact.integrations.langgraph_store import MusterBaseStore

        return MusterBaseStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
