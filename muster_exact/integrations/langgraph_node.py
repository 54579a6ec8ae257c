"""A LangGraph node that recalls into state and remembers the turn.

    from langgraph.graph import StateGraph
    from muster_exact.integrations.langgraph_node import memory_node

    graph.add_node("memory", memory_node(backend))          # before the model: fills state["memory"]
    graph.add_node("remember", remember_node(backend))      # after the model: keeps the turn

``memory_node`` reads ``state["question"]``, puts the memory's context for it
in ``state["memory"]`` (empty while the memory is empty) and then remembers
the question; ``remember_node`` keeps ``state["answer"]``. Key names are
parameters. A turn id in ``state["turn_id"]`` makes both idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster_exact.integrations import require
from muster_exact.serve.backend import Backend

State = dict[str, Any]


def memory_node(
    backend: Backend,
    *,
    question_key: str = "question",
    memory_key: str = "memory",
    speaker: str = "user",
    namespace: str | None = None,
) -> Callable[[State], State]:
    require("langgraph", "langgraph")

    def node(state: State) -> State:
        question = str(state[question_key])
        # Recall first: the context is what memory held before this turn (empty while it holds nothing).
        context = backend.recall(question, namespace=namespace)["context"]
        turn = state.get("turn_id")
        backend.remember(
            {"speaker": speaker, "text": question},
            request_id=None if turn is None else f"{turn}:{question_key}",
            namespace=namespace,
        )
        return {memory_key: context}

    return node


def remember_node(
    backend: Backend, *, answer_key: str = "answer", speaker: str = "assistant", namespace: str | None = None
) -> Callable[[State], State]:
    require("langgraph", "langgraph")

    def node(state: State) -> State:
        answer = state.get(answer_key)
        if answer:
            turn = state.get("turn_id")
            backend.remember(
                {"speaker": speaker, "text": str(answer)},
                request_id=None if turn is None else f"{turn}:{answer_key}",
                namespace=namespace,
            )
        return {}

    return node
