"""``MusterRetriever`` against LangChain's own standard retriever suite (langchain-tests), over a real
60-record store read with the packaged CPU embedder, and the k/units rule the suite does not see
(docs/decisions/0210-langchain-k.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_exact.serve.backend import Backend
from tests.integrations.conftest import copied

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")
from langchain_tests.integration_tests import RetrieversIntegrationTests

pytestmark = pytest.mark.slow
QUERY = "Where does Hugo keep the spare key?"


@pytest.fixture(scope="module")
def backend(sixty_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """A Backend over a copy of the session's 60-record store, for this module's reads."""
    opened = Backend(copied(sixty_store, tmp_path_factory.mktemp("standard")), models="cpu-small")
    yield opened
    opened.close()


class TestMusterRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's suite as LangChain runs it: ``k`` in the constructor and in ``invoke``."""

    @pytest.fixture(autouse=True)
    def _backend(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def retriever_constructor(self) -> type:
        from muster_exact.integrations.langchain_retriever import MusterRetriever

        return MusterRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"backend": self.backend}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def _retriever(backend: Backend, **options: Any) -> Any:
    from muster_exact.integrations.langchain_retriever import MusterRetriever

    return MusterRetriever(backend=backend, **options)


def _plan(backend: Backend) -> Any:
    from muster_exact.derive.plan import Plan

    return Plan.from_dict(backend.info(namespaces=False)["plan"])


def test_the_store_cuts_units_shorter_than_u_on_cpu_small(backend: Backend) -> None:
    # What the rest of this module relies on: U=1 reads two units here, as the docstring says.
    assert _plan(backend).units_to_read(1) == 2
    assert len(backend.search(QUERY, 3)["passages"]) == 6


def test_units_keeps_its_meaning_and_the_metadata_says_what_a_u_read(backend: Backend) -> None:
    documents = _retriever(backend, units=3).invoke(QUERY)
    assert len(documents) == 6  # U=3 reads six 256-token units on cpu-small
    assert {(d.metadata["units_asked"], d.metadata["units_read"]) for d in documents} == {(3, 6)}
    assert len(_retriever(backend).invoke(QUERY, units=1)) == 2
    default = _retriever(backend).invoke(QUERY)
    plan = _plan(backend)
    assert default[0].metadata["units_asked"] == plan.units_read
    held = len(backend.store().memory().cut.units)  # 15: fewer than the 20 units U=10 reads
    assert len(default) == default[0].metadata["units_read"] == min(plan.units_to_read(plan.units_read), held)


def test_an_even_k_is_exactly_what_muster_selects_at_that_budget(backend: Backend) -> None:
    # k=4 reads U=2 (two units per U): the four Documents are MUSTER's own selection at U=2,
    # floors included, best first; not the top four of a longer read.
    documents = _retriever(backend, k=4).invoke(QUERY)
    selected = backend.search(QUERY, 2)["passages"]
    assert [d.metadata["unit"] for d in documents] == [p["unit"] for p in selected]
    assert {(d.metadata["units_asked"], d.metadata["units_read"]) for d in documents} == {(2, 4)}
    assert "hugo-key" in documents[0].metadata["records"]  # the passage that answers comes first


def test_an_odd_k_drops_the_worst_ranked_of_the_read(backend: Backend) -> None:
    documents = _retriever(backend).invoke(QUERY, k=3)  # U=2 reads 4; the fourth by rank goes
    selected = backend.search(QUERY, 2)["passages"]
    assert [d.metadata["unit"] for d in documents] == [p["unit"] for p in selected[:3]]
    ranks = [d.metadata["rerank_rank"] for d in documents]
    assert ranks == sorted(ranks) and documents[0].metadata["units_read"] == 4


def test_k_with_units_reads_the_wider_budget_and_keeps_the_best_k(backend: Backend) -> None:
    documents = _retriever(backend, units=5).invoke(QUERY, k=2)
    selected = backend.search(QUERY, 5)["passages"]
    assert [d.metadata["unit"] for d in documents] == [p["unit"] for p in selected[:2]]
    assert documents[0].metadata["units_asked"] == 5
    # units smaller than k needs is raised to what k needs: still k Documents.
    assert len(_retriever(backend, units=1).invoke(QUERY, k=5)) == 5


def test_the_call_keyword_overrides_the_retriever_and_async_keeps_it(backend: Backend) -> None:
    retriever = _retriever(backend, k=5)
    assert len(retriever.invoke(QUERY)) == 5
    assert len(retriever.invoke(QUERY, k=1)) == 1
    assert len(asyncio.run(retriever.ainvoke(QUERY, k=2))) == 2


def test_k_beyond_the_memory_gives_what_it_holds_and_a_bad_k_is_refused(tmp_path: Path) -> None:
    from muster_exact.core.errors import InputError

    small = Backend(tmp_path / "small.muster", models="cpu-small")
    try:
        small.remember(["The boiler was serviced on 3 March.", "Ana's passport expires in June 2031."])
        documents = _retriever(small, k=5).invoke("When was the boiler serviced?")
        assert len(documents) == 1 and "3 March" in documents[0].page_content  # one packed unit
        assert _retriever(small, namespace="nobody", k=3).invoke("boiler") == []
        for bad in (0, -1, True, 2.5, "3"):
            with pytest.raises(InputError, match="k \\(the number of Documents\\) must be a positive"):
                _retriever(small).invoke("boiler", k=bad)
    finally:
        small.close()
