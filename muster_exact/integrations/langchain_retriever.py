"""MUSTER memory as a LangChain retriever (``langchain_core.retrievers.BaseRetriever``).

    from muster_exact.integrations.langchain_tools import MusterRetriever

    retriever = MusterRetriever(backend=Backend("agent.muster", models="cpu-small"))
    retriever.invoke("Where is the red mug?")    # Documents, best first

Each Document is one selected passage (what ``search_memory`` lists): its
verbatim text, and in ``metadata`` the unit id, the ids of the records it
holds, the channels that proposed it, its rerank rank and score, and why it
was kept. This module needs langchain-core; importing it without raises
:class:`~muster_exact.core.optional.MissingExtra`.
"""

from __future__ import annotations

from typing import Any

from muster_exact.integrations import require

require("langchain_core.retrievers", "langchain-core")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from muster_exact.serve.backend import Backend  # noqa: E402


class MusterRetriever(BaseRetriever):
    """The passages a MUSTER store selects for a query, best first, as LangChain Documents.

    ``units``: how many passages to read (default: the plan's); ``namespace``: which memory.
    A typed library error (an empty query, a bad ``units``) is raised as it is.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    backend: Backend
    namespace: str | None = None
    units: int | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        passages = self.backend.search(query, self.units, self.namespace)["passages"]
        return [Document(page_content=p["text"], metadata=_metadata(p)) for p in passages]


def _metadata(passage: dict[str, Any]) -> dict[str, Any]:
    return {
        "unit": passage["unit"],
        "records": passage["records"],
        "channels": passage["channels"],
        "rerank_rank": passage["rerank_rank"],
        "rerank_score": passage["rerank_score"],
        "reason": passage["reason"],
    }
