"""``POST /v1/inspect`` and the pages of ``muster http`` on the real server, over a LoCoMo store,
with the token guard on: what one read kept and why, the units left out just after the cut, the
same refusals as ``/v1/context``; the pages open without the token, every datum behind it, and no
page or file of theirs names another host."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.report import inspector
from muster_exact.serve import pages
from tests.serve.test_http import TOKEN, Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def post(server: Server, path: str, body: object, headers: dict[str, str] = AUTH) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=300)


def test_inspect_shows_what_one_read_kept_and_what_it_left_out(served: Server) -> None:
    read = post(served, "/v1/inspect", {"query": inspector.QUESTION, "units": 4})
    assert read.status_code == 200, read.text
    answer = read.json()
    context = post(served, "/v1/context", {"query": inspector.QUESTION, "units": 4}).json()
    assert answer["context"] == context["context"] and answer["tokens"] == context["tokens"]
    assert answer["head"]["records"] == inspector.TURNS and answer["rerank"] == "rrf"
    channels = {c["channel"]: c for c in answer["channels"]}
    assert set(channels) >= {"dense", "bm25"} and all(c["floor"] >= 0 for c in channels.values())
    kept, left_out = answer["kept"], answer["left_out"]
    assert len(kept) == answer["units_read"] and len(left_out) == 5
    # U = 4 on cpu-small reads 8 units of 256 tokens, and every read says so (issue 54).
    said = {"units_asked": 4, "units_read": 8, "units_selected": 8}
    search = post(served, "/v1/search", {"query": inspector.QUESTION, "units": 4}).json()
    for read_by in (answer["read"], context["read"], search["read"]):
        assert {k: read_by[k] for k in said} == said, read_by
        assert read_by["note"].startswith("U = 4 reads 8 units: U counts 512-token units"), read_by
    fields = {"unit", "shown_as", "parent", "text", "records", "metadata", "channels", "rerank_rank"}
    for passage in kept + left_out:
        assert fields | {"rerank_score", "reason"} == set(passage), passage
        assert passage["channels"] and all(rank >= 1 for rank in passage["channels"].values())
        assert set(passage["channels"]) <= set(channels)
        assert passage["records"] and set(passage["metadata"]) == set(passage["records"])
        assert all(isinstance(m["session"], int) for m in passage["metadata"].values())
        assert isinstance(passage["parent"], int) and passage["text"]
    # Kept: what the context shows, each for a floor or the fill; their records are the context's.
    assert {p["shown_as"] for p in kept} == set(context["units"])
    assert {r for p in kept for r in p["records"]} == set(context["records"])
    assert all(p["reason"] == "fill" or p["reason"].split(":")[1] in channels for p in kept)
    assert all(p["text"] in answer["context"] for p in kept)
    # Left out: the best ranked units not kept, in rerank order, none of them in the context.
    ranks = [p["rerank_rank"] for p in left_out]
    kept_ranks = {p["rerank_rank"] for p in kept}
    assert ranks == [r for r in range(1, max(ranks) + 1) if r not in kept_ranks][:5]
    assert not {p["unit"] for p in left_out} & ({p["unit"] for p in kept} | set(context["units"]))
    assert all(p["text"] not in answer["context"] for p in left_out)
    scores = [p["rerank_score"] for p in left_out]
    assert scores == sorted(scores, reverse=True)
    assert all("read budget" in p["reason"] for p in left_out)
    search = post(served, "/v1/search", {"query": inspector.QUESTION, "units": 4}).json()["passages"]
    assert [(p["unit"], p["channels"], p["rerank_rank"]) for p in search] == [
        (p["shown_as"], p["channels"], p["rerank_rank"]) for p in kept
    ]


def test_a_filtered_inspect_shows_matching_records_only(served: Server, data: Path) -> None:
    where = {"speaker": "Caroline"}
    answer = post(served, "/v1/inspect", {"query": inspector.QUESTION, "where": where}).json()
    speakers = {r["id"]: r["speaker"] for r in inspector.locomo_records(data)}
    shown = answer["kept"] + answer["left_out"]
    assert len(shown) == answer["units_read"] + 5
    assert all(speakers[r] == "Caroline" for p in shown for r in p["records"])
    assert all(speakers[r] == "Caroline" for p in shown for r in p["metadata"])


BAD = [
    {},
    {"query": ""},
    {"query": 5},
    {"query": "q", "units": 0},
    {"query": "q", "units": "5"},
    {"query": "q", "namespace": ""},
    {"query": "q", "where": {"time": {"from": "May 1"}}},
    {"query": "q", "where": {"colour": "red"}},
    {"query": "q", "extra": 1},
]


@pytest.mark.parametrize("body", BAD, ids=[json.dumps(b) for b in BAD])
def test_inspect_refuses_what_context_refuses_with_the_same_message(served: Server, body: dict) -> None:
    inspected = post(served, "/v1/inspect", body)
    context = post(served, "/v1/context", body)
    assert inspected.status_code == context.status_code == 422, (inspected.text, context.text)
    assert inspected.json() == context.json()


def test_inspect_of_a_namespace_never_written_is_empty_and_creates_nothing(served: Server) -> None:
    answer = post(served, "/v1/inspect", {"query": "anything?", "namespace": "ghost"}).json()
    shown = answer["kept"], answer["left_out"], answer["context"], answer["head"]["records"]
    assert shown == ([], [], "", 0)
    info = httpx.get(f"{served.url}/v1/info", headers=AUTH, timeout=60).json()
    assert "ghost" not in info["namespaces"]


def test_info_gives_the_plan_in_words_and_the_records_per_namespace(served: Server) -> None:
    info = httpx.get(f"{served.url}/v1/info", headers=AUTH, timeout=60).json()
    assert info["explain"].startswith("branch: record store") and "why:" in info["explain"]
    assert info["records_by_namespace"] == {"default": inspector.TURNS}
    assert info["namespaces"] == ["default"]


def test_the_pages_are_open_and_every_datum_needs_the_token(served: Server) -> None:
    assert httpx.get(f"{served.url}/healthz").json() == {"status": "ok", "token_required": True}
    for path, (name, media) in pages.PAGES.items():
        reply = httpx.get(f"{served.url}{path}", timeout=60)
        assert reply.status_code == 200, (path, reply.status_code)
        assert reply.headers["content-type"] == media
        assert reply.content == pages.page_bytes(name)
        assert "frame-ancestors 'none'" in reply.headers["content-security-policy"]
        assert reply.headers["x-frame-options"] == "DENY"
        assert "support group" not in reply.text  # no datum in a page
        assert httpx.head(f"{served.url}{path}", timeout=60).status_code == 200
    # A rebound host name is still refused on an open path; so is a write to a page.
    assert httpx.get(f"{served.url}/", headers={"Host": "evil.example"}).status_code == 421
    assert httpx.post(f"{served.url}/", json={}).status_code == 405
    for method, path in (
        ("POST", "/v1/inspect"),
        ("GET", "/v1/records"),
        ("GET", "/v1/info"),
        ("GET", "/openapi.json"),
        ("GET", "/redoc"),
        ("GET", "/inspector/"),
        ("GET", "/inspector/missing.js"),
    ):
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            reply = httpx.request(method, f"{served.url}{path}", json={"query": "q"}, headers=headers)
            assert reply.status_code == 401, (method, path, headers, reply.status_code)
    # FastAPI's own pages (scripts from a CDN) are gone; /docs is ours.
    assert httpx.get(f"{served.url}/redoc", headers=AUTH).status_code == 404
    assert b"swagger" not in httpx.get(f"{served.url}/docs").content.lower()


# An absolute URL of another host, or a protocol-relative one ("//cdn...") in an attribute or url().
EXTERNAL = re.compile(r"""https?://(?!(?:127\.0\.0\.1|localhost)\b)|["'(]\s*//""", re.IGNORECASE)
LINKED = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|from\s+["']([^"']+)["']""")


def test_no_page_or_file_loads_anything_from_another_host(served: Server) -> None:
    """Every file under the pages' folder is served, and none of them (nor /docs, nor the
    inspector as served) names another host: no script, style or font from a CDN."""
    for fastapi_default in ('src="https://cdn.jsdelivr.net/npm/swagger-ui.js"', "src='//cdn.example/x.js'"):
        assert EXTERNAL.search(fastapi_default), fastapi_default  # the check sees what it must refuse
    folder = Path(pages.__file__).parent / pages.FOLDER
    assert {p.name for p in folder.iterdir()} == {name for name, _ in pages.PAGES.values()}
    for path in pages.PAGES:
        text = httpx.get(f"{served.url}{path}", timeout=60).text
        assert not EXTERNAL.findall(text), (path, EXTERNAL.findall(text))
        assert "cdn" not in text.lower(), path
        for link in (a or b for a, b in LINKED.findall(text)):
            if link.startswith("data:"):
                continue
            target = link if link.startswith("/") else f"/inspector/{link.removeprefix('./')}"
            assert target in pages.PAGES or target == "/openapi.json", (path, link)


def test_a_read_of_a_small_store_says_the_whole_store_fit(tmp_path: Path) -> None:
    from muster_exact.serve.backend import Backend

    backend = Backend(tmp_path / "small.muster", models="cpu-small")
    try:
        backend.remember_many(["The red mug is on the table.", "The kettle is new."])
        answer = backend.recall("Where is the mug?")
        units = backend.info()["plan"]["stats"]["units"]
    finally:
        backend.close()
    read = answer["read"]
    assert "The kettle is new." in answer["context"]  # all of it, and the answer says why
    assert read["units_selected"] == units and f"the whole store fit the budget: all {units} " in read["note"]
