"""MUSTER memory as a LangChain retriever (``langchain_core.retrievers.BaseRetriever``).

    from muster_exact.integrations.langchain_tools import MusterRetriever

    retriever = MusterRetriever(backend=Backend("agent.muster", models="cpu-small"))
    retriever.invoke("Where is the red mug?")         # every passage the read selects, best first
    retriever.invoke("Where is the red mug?", k=3)    # exactly 3 (fewer only when memory holds fewer)

Each Document is one selected passage (what ``search_memory`` lists): its
verbatim text, and in ``metadata`` the unit id, the ids of the records it
holds, the channels that proposed it, its rerank rank and score, and why it
was kept, with the read's budget: ``units_asked`` (U) and ``units_read`` (how
many units that U took: on ``cpu-small`` two per U, see :class:`MusterRetriever`).
This module needs langchain-core; importing it without raises
:class:`~muster_exact.core.optional.MissingExtra`.
"""

from __future__ import annotations

from typing import Any

from muster_exact.core import optional
from muster_exact.core.errors import InputError
from muster_exact.derive.plan import Plan

# Not integrations.require: the package hands this class out, so importing it back would be a cycle.
optional.require("langchain_core.retrievers", optional.Extra("langchain"))

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables.config import run_in_executor  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from muster_exact.serve.backend import Backend  # noqa: E402


class MusterRetriever(BaseRetriever):
    """The passages a MUSTER store selects for a query, best first, as LangChain Documents.

    ``namespace``: which memory. ``units`` is MUSTER's read budget U (default: the plan's); a
    read of U takes ``plan.units_to_read(U)`` units, which is U where units are cut at the record
    budget and more where they are cut shorter (the ``cpu-small`` profile cuts 256-token units
    for a 512-token budget, so U=3 reads 6 passages). Without ``k`` every passage the read
    selects is a Document, so ``units=3`` can give 6; each Document's metadata says
    ``units_asked`` (3) and ``units_read`` (6).

    ``k`` (LangChain's number of results) gives exactly k Documents, fewer only when the
    memory holds fewer units. Which k, by MUSTER's own rule: MUSTER does not rank a whole memory
    and cut the list; it selects a budget of units under reserved per-channel floors
    (dense, BM25, graph), the rest by rerank order, then assembles them in stored order. So the
    k are taken from MUSTER's selection, not from a longer ranked list: the read's U is the
    smallest whose read takes at least k units (raised to ``units`` where that is given), and
    when that read takes more than k, the ones with the worst rerank rank are left out. With
    ``units`` unset and k a multiple of the units a U takes, the k are exactly what MUSTER
    selects at that budget, floors included. Documents come best first (rerank rank).
    ``k`` and ``units`` are also ``invoke`` keywords (``invoke(q, k=1)``), which override the
    retriever's own for that call.

    A typed library error (an empty query, a bad ``units`` or ``k``) is raised as it is.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    backend: Backend
    namespace: str | None = None
    units: int | None = None
    k: int | None = None

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        units: int | None = None,
    ) -> list[Document]:
        return self._read(query, self.k if k is None else k, self.units if units is None else units)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        units: int | None = None,
    ) -> list[Document]:
        # LangChain's default runs the sync method without the call's keywords: k would be lost.
        return await run_in_executor(
            None, self._read, query, self.k if k is None else k, self.units if units is None else units
        )

    def _read(self, query: str, k: int | None, units: int | None) -> list[Document]:
        """One read of the store: its passages best first, the best k of them when k is given."""
        k = _checked_k(k)
        plan = self._plan() if k is not None or units is None else None  # what U means here
        asked = units if plan is None or k is None else read_budget(plan, k, units)
        passages = self.backend.search(query, asked, self.namespace)["passages"]
        shown = plan.units_read if asked is None and plan is not None else asked  # None: the plan's U
        budget = {"units_asked": shown, "units_read": len(passages)}
        kept = passages if k is None else passages[:k]  # already best first (rerank rank)
        return [Document(page_content=p["text"], metadata={**_metadata(p), **budget}) for p in kept]

    def _plan(self) -> Plan | None:
        """The plan of this namespace's records (None while it holds none): what U means here."""
        plan = self.backend.info(self.namespace, namespaces=False)["plan"]
        return None if plan is None else Plan.from_dict(plan)


def read_budget(plan: Plan, k: int, units: int | None) -> int:
    """The U of a read for k passages (see :class:`MusterRetriever`): the smallest U whose read
    takes at least k units under ``plan``, raised to ``units`` when that is given."""
    smallest = next(u for u in range(1, k + 1) if plan.units_to_read(u) >= k)  # U=k always does
    if units is None or isinstance(units, bool) or not isinstance(units, int):
        return smallest if units is None else units  # a bad units: the Backend refuses it as it is
    return max(smallest, units)


def _checked_k(k: Any) -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k (the number of Documents) must be a positive whole number, not {k!r}")
    return k


def _metadata(passage: dict[str, Any]) -> dict[str, Any]:
    return {
        "unit": passage["unit"],
        "records": passage["records"],
        "channels": passage["channels"],
        "rerank_rank": passage["rerank_rank"],
        "rerank_score": passage["rerank_score"],
        "reason": passage["reason"],
    }
