"""Memory as tools inside agent frameworks, each importable only when its framework is installed:

* :mod:`.openai_tools`: OpenAI Agents SDK function tools (``pip install openai-agents``);
* :mod:`.langchain_tools`: LangChain tools (``pip install langchain-core``);
* :mod:`.langgraph_node`: a LangGraph node that recalls into state and remembers the turn
  (``pip install langgraph``).

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


def require(module: str, package: str) -> Any:
    """A framework an integration needs (:func:`muster_exact.core.optional.require`), ``package`` its
    name on PyPI."""
    return optional.require(module, f"pip install {package}")
