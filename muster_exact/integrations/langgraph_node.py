"""A LangGraph node that recalls into state and remembers the turn.

    from langgraph.graph import MessagesState, StateGraph
    from muster_exact.integrations.langgraph_node import memory_node, remember_node

    graph = StateGraph(MessagesState)
    graph.add_node("memory", memory_node(backend))          # before the model: the memory's context
    graph.add_node("remember", remember_node(backend))      # after the model: keeps its answer

With LangGraph's usual ``MessagesState`` the question is the content of the
last human message, and ``memory_node`` appends the memory's context (what it
held before this turn; nothing while it is empty) as a system message named
``memory``; ``remember_node`` keeps the content of the last AI message. A
state with a ``question`` and no ``messages`` (the older shape) is read too:
the context goes to ``state["memory"]`` and ``remember_node`` keeps
``state["answer"]``. ``question_key``, ``memory_key`` and ``answer_key`` name
custom keys instead (``class State(MessagesState): memory: str`` with
``memory_key="memory"`` keeps the context out of the messages). A state with
none of them raises :class:`~muster_exact.core.errors.InputError` naming the keys
it looked for. A turn id in ``state["turn_id"]``, else the message's own id,
makes both idempotent: a retried turn is remembered once. ``remember_question=False`` keeps
the question out of memory (the node then only reads it); by default it is kept, since a user's
turns ("my locker is 417") are most of what a conversation's memory has to hold.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from muster_exact.core.errors import InputError, RequestConflict
from muster_exact.integrations import require
from muster_exact.serve.backend import Backend

log = logging.getLogger(__name__)

State = Mapping[str, Any]
Update = dict[str, Any]
MEMORY_NAME = "memory"  # the name of the system message that carries the context


@dataclass(frozen=True)
class Said:
    """What one side said this turn, whether it was a message, and the request id that keeps it once."""

    text: str
    from_messages: bool
    request_id: str | None


def memory_node(
    backend: Backend,
    *,
    question_key: str | None = None,
    memory_key: str | None = None,
    speaker: str = "user",
    namespace: str | None = None,
    remember_question: bool = True,
) -> Callable[[State], Update]:
    """The node before the model: the context for this turn's question, then the question kept
    (unless ``remember_question=False``)."""
    require("langgraph", "langgraph")
    if not isinstance(remember_question, bool):  # "no" would be truthy and keep every question
        raise InputError(f"remember_question must be True or False, not {remember_question!r}")

    def node(state: State) -> Update:
        question = _said(state, question_key, "human", "question")
        if question is None:
            looked = (
                f"state[{question_key!r}]"
                if question_key
                else "a human message in state['messages'], or state['question']"
            )
            raise InputError(
                f"the memory node found no question: it looked for {looked}; "
                "give question_key='...' to read another key"
            )
        # Recall first: the context is what memory held before this turn (empty while it holds nothing).
        context = backend.recall(question.text, namespace=namespace)["context"]
        if remember_question:
            _keep(backend, question, speaker, namespace)
        if memory_key is not None or not question.from_messages:
            return {memory_key or "memory": context}
        if not context:
            return {}
        from langchain_core.messages import SystemMessage

        return {"messages": [SystemMessage(content=context, name=MEMORY_NAME)]}

    return node


def remember_node(
    backend: Backend,
    *,
    answer_key: str | None = None,
    speaker: str = "assistant",
    namespace: str | None = None,
) -> Callable[[State], Update]:
    """The node after the model: its answer kept (nothing when it gave none)."""
    require("langgraph", "langgraph")

    def node(state: State) -> Update:
        answer = _said(state, answer_key, "ai", "answer")
        if answer is not None and answer.text:
            _keep(backend, answer, speaker, namespace)
        return {}

    return node


def _said(state: State, key: str | None, role: str, old_key: str) -> Said | None:
    """What ``role`` said: ``state[key]`` when a key is named, else the last message of that role
    in this turn, else ``state[old_key]``; None when there is none. Kept once per turn: the turn is
    ``state["turn_id"]``, else the id of the turn's human message (a retried turn has the same)."""
    turn = state.get("turn_id")
    if key is None and state.get("messages"):
        said, asked = _this_turn(state["messages"], role)
        if said is not None:
            if turn is None and asked is not None and asked.id:
                turn = f"message:{asked.id}"
            return Said(said.text, True, None if turn is None else f"{turn}:{old_key}")
    wanted = key or old_key
    if state.get(wanted) is None:
        return None
    return Said(str(state[wanted]), False, None if turn is None else f"{turn}:{wanted}")


def _this_turn(messages: Any, role: str) -> tuple[Any, Any]:
    """The last message of ``role`` ("human", "ai") in this turn (an answer after the last human
    message, not an older turn's) and the turn's human message, either None when absent; messages
    given in any form LangChain reads."""
    from langchain_core.messages import convert_to_messages

    said = None
    for message in reversed(convert_to_messages(messages)):
        if message.type == role and said is None:
            said = message
        if message.type == "human":
            return said, message
    return said, None


def _keep(backend: Backend, said: Said, speaker: str, namespace: str | None) -> None:
    """Keep what was said, once per turn. A retried turn whose model now says something else
    keeps the first answer (the turn is in memory once) and says so in the log, rather than
    stopping the graph on the store's :class:`RequestConflict`."""
    record = {"speaker": speaker, "text": said.text}
    try:
        backend.remember(record, request_id=said.request_id, namespace=namespace)
    except RequestConflict:
        log.warning("turn %r is in memory already; this retry's different text is not kept", said.request_id)
