"""Managing a memory over the real HTTP server and the real MCP client: list, export, import,
update (the whole record) and patch (the fields given), and a reused request id that is a
conflict, not a silent replay. Real LoCoMo turns."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_exact.store import Store
from muster_exact.store.dump import dumped
from tests.conftest import REPO
from tests.serve.test_http import Server
from tests.store.test_store import locomo_records

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("mcp")
pytestmark = pytest.mark.slow
MODELS = "cpu-small"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    store = tmp_path_factory.mktemp("manage") / "agent.muster"
    server = Server(store)
    turns, _ = locomo_records(60)
    body = {"records": [{**t, "metadata": {"n": i}} for i, t in enumerate(turns)], "request_id": "chat-1"}
    httpx.post(f"{server.url}/v1/add", json=body, timeout=60).raise_for_status()
    yield server, store
    server.stop()


def test_records_are_listed_in_pages_and_exported_as_lines(running: tuple[Server, Path]) -> None:
    server, store = running
    page = httpx.get(f"{server.url}/v1/records", params={"limit": 25, "offset": 50}, timeout=60).json()
    assert (page["total"], page["limit"], page["offset"], len(page["records"])) == (60, 25, 50, 10)
    with Store.open(store, models=MODELS) as opened:
        expected = list(opened.export(every_namespace=False))
    assert page["records"] == expected[50:]
    assert page["records"][0]["request_id"] == "chat-1" and page["records"][0]["record"]["metadata"] == {
        "n": 50
    }
    with httpx.stream("GET", f"{server.url}/v1/export", timeout=60) as reply:
        assert reply.headers["content-type"] == "application/x-ndjson"
        text = "".join(reply.iter_text())
    assert text == "".join(dumped(line) for line in expected)
    empty = httpx.get(f"{server.url}/v1/records", params={"namespace": "nobody"}, timeout=60).json()
    assert empty["records"] == [] and empty["total"] == 0
    assert httpx.get(f"{server.url}/v1/export", params={"namespace": "nobody"}, timeout=60).text == ""


def test_a_filtered_read_over_http_shows_matching_records_with_their_metadata(
    running: tuple[Server, Path],
) -> None:
    server, _ = running
    body = {"query": "What did Caroline say about the support group?", "where": {"speaker": "Melanie"}}
    context = httpx.post(f"{server.url}/v1/context", json=body, timeout=120).json()
    lines = [line for line in context["context"].splitlines() if line.strip()]
    assert lines and all("] Melanie: " in line for line in lines)
    assert context["blocks"] and all(set(b["metadata"]) == set(b["records"]) for b in context["blocks"])
    search = httpx.post(f"{server.url}/v1/search", json={**body, "units": 3}, timeout=120).json()
    said = [line for p in search["passages"] for line in p["text"].splitlines() if line.strip()]
    assert said and all("] Melanie: " in line for line in said)  # as the context shows them
    assert search["passages"] and all(
        p["metadata"] and set(p["metadata"]) <= set(p["records"]) for p in search["passages"]
    )
    bad = httpx.post(f"{server.url}/v1/context", json={**body, "where": {"time": {"from": "x"}}}, timeout=60)
    assert bad.status_code == 422 and "ISO 8601" in bad.json()["detail"]


def test_an_update_over_http_reads_as_the_new_text(running: tuple[Server, Path]) -> None:
    server, _ = running
    url = f"{server.url}/v1/records/D1:3"
    new = {"speaker": "Caroline", "time": "8 May 2023", "text": "The support group meets in the old library."}
    reply = httpx.put(url, json={"record": new}, timeout=120)
    assert reply.status_code == 200 and reply.json()["changed"] and not reply.json()["erase_pending"], (
        reply.text
    )
    context = httpx.post(
        f"{server.url}/v1/context", json={"query": "Where does the support group meet?"}, timeout=120
    ).json()
    assert "old library" in context["context"]
    again = httpx.put(url, json={"record": new}, timeout=120).json()
    assert again["changed"] is False
    missing = httpx.put(f"{server.url}/v1/records/nope", json={"record": "x"}, timeout=60)
    assert missing.status_code == 422 and "nothing updated" in missing.json()["detail"]
    assert httpx.put(url, json={"text": "x"}, timeout=60).status_code == 422  # the body is {"record": ...}
    # Any id a record can have is a path: one with a slash too.
    added = {"records": [{"id": "notes/1", "text": "A note with a path-like id."}], "namespace": "paths"}
    httpx.post(f"{server.url}/v1/add", json=added, timeout=60).raise_for_status()
    moved = httpx.put(
        f"{server.url}/v1/records/notes/1", json={"record": "Changed.", "namespace": "paths"}, timeout=60
    )
    assert moved.status_code == 200 and moved.json()["id"] == "notes/1", moved.text


def test_a_patch_over_http_keeps_the_fields_it_is_not_given(running: tuple[Server, Path]) -> None:
    server, store = running
    url = f"{server.url}/v1/records/D1:5"
    with Store.open(store, models=MODELS) as opened:
        before = next(r for r in opened.records() if r["id"] == "D1:5")
    assert before.get("speaker") and before.get("time"), before
    reply = httpx.patch(url, json={"fields": {"text": "We met at the old library."}}, timeout=120)
    assert reply.status_code == 200 and reply.json()["changed"], reply.text
    page = httpx.get(f"{server.url}/v1/records", params={"limit": 10}, timeout=60).json()
    after = next(line["record"] for line in page["records"] if line["record"]["id"] == "D1:5")
    assert after == {**before, "text": "We met at the old library."}  # speaker, time, metadata kept
    merged = httpx.patch(url, json={"fields": {"metadata": {"seen": True}, "time": None}}, timeout=120)
    assert merged.status_code == 200, merged.text
    page = httpx.get(f"{server.url}/v1/records", params={"limit": 10}, timeout=60).json()
    after = next(line["record"] for line in page["records"] if line["record"]["id"] == "D1:5")
    expected = {k: v for k, v in before.items() if k != "time"}
    assert after == {**expected, "text": "We met at the old library.", "metadata": {"n": 4, "seen": True}}
    missing = httpx.patch(f"{server.url}/v1/records/nope", json={"fields": {"text": "x"}}, timeout=60)
    assert missing.status_code == 422 and "nothing updated" in missing.json()["detail"]
    gone = httpx.patch(url, json={"fields": {"text": None}}, timeout=60)
    assert gone.status_code == 422 and "text cannot be removed" in gone.json()["detail"]


def test_an_export_imported_twice_over_http_adds_nothing_the_second_time(
    running: tuple[Server, Path],
) -> None:
    server, _ = running
    exported = httpx.get(f"{server.url}/v1/export", timeout=60).text
    lines = [{**json.loads(line), "namespace": "copy"} for line in exported.splitlines()]
    first = httpx.post(f"{server.url}/v1/import", json={"lines": lines}, timeout=120)
    assert first.status_code == 200 and first.json()["added"] == {"copy": len(lines)}, first.text
    second = httpx.post(f"{server.url}/v1/import", json={"lines": lines}, timeout=120).json()
    assert (second["total_added"], second["skipped"]) == (0, len(lines))
    copied = httpx.get(f"{server.url}/v1/export", params={"namespace": "copy"}, timeout=60).text
    assert [json.loads(line)["record"] for line in copied.splitlines()] == [line["record"] for line in lines]
    context = httpx.post(
        f"{server.url}/v1/context", json={"query": "Where did they meet?", "namespace": "copy"}, timeout=120
    ).json()
    assert context["context"]  # the imported namespace reads
    # Checked whole first: one bad line and nothing is written.
    bad = [*({**line, "namespace": "half"} for line in lines[:3]), {"namespace": "half", "record": "x"}]
    refused = httpx.post(f"{server.url}/v1/import", json={"lines": bad}, timeout=60)
    assert refused.status_code == 422 and refused.json()["detail"].startswith("line 4"), refused.text
    assert (
        httpx.get(f"{server.url}/v1/records", params={"namespace": "half"}, timeout=60).json()["total"] == 0
    )


def test_a_reused_request_id_with_another_body_is_409(running: tuple[Server, Path]) -> None:
    server, _ = running
    first = httpx.post(f"{server.url}/v1/add", json={"records": ["Note A."], "request_id": "n-1"}, timeout=60)
    same = httpx.post(f"{server.url}/v1/add", json={"records": ["Note A."], "request_id": "n-1"}, timeout=60)
    assert first.status_code == same.status_code == 200 and same.json()["replayed"]
    other = httpx.post(f"{server.url}/v1/add", json={"records": ["Note B."], "request_id": "n-1"}, timeout=60)
    assert other.status_code == 409 and other.json()["error"] == "RequestConflict", other.text
    assert "'n-1'" in other.json()["detail"] and "nothing was written" in other.json()["detail"]


async def mcp_calls(store: Path) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "muster_exact", "mcp", "--store", str(store), "--models", MODELS],
        cwd=str(REPO),
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["add"] = await session.call_tool(
            "remember",
            {"text": "The blue kettle is new.", "speaker": "Ann", "time": "2023-05-08", "request_id": "k"},
        )
        out["conflict"] = await session.call_tool("remember", {"text": "The red kettle.", "request_id": "k"})
        out["list"] = await session.call_tool("list_memories", {"limit": 2})
        out["update"] = await session.call_tool(
            "update_memory", {"id": "r1", "text": "The blue kettle is broken.", "metadata": {"fixed": False}}
        )
        out["after"] = await session.call_tool("list_memories", {})
        lines = [{**line, "namespace": "copy"} for line in payload(out["after"])["records"]]
        out["import"] = await session.call_tool("import_memories", {"lines": lines})
        out["import again"] = await session.call_tool("import_memories", {"lines": lines})
        out["recall"] = await session.call_tool("recall", {"query": "What about the kettle?"})
        out["filtered"] = await session.call_tool(
            "recall", {"query": "What about the kettle?", "where": {"metadata": {"fixed": True}}}
        )
    return out


def payload(result: Any) -> dict[str, Any]:
    data = (
        result.structured_content
        if result.structured_content is not None
        else json.loads(result.content[0].text)
    )
    assert isinstance(data, dict)
    return data


def test_mcp_lists_updates_and_refuses_a_conflicting_request_id(tmp_path: Path) -> None:
    out = asyncio.run(mcp_calls(tmp_path / "mcp.muster"))
    assert payload(out["add"])["added"] == 1
    conflict = out["conflict"]
    assert conflict.is_error and conflict.content[0].text.startswith("RequestConflict: request_id 'k'")
    listed = payload(out["list"])
    assert listed["total"] == 1 and listed["records"][0]["record"]["text"] == "The blue kettle is new."
    assert payload(out["update"])["changed"] is True
    after = payload(out["after"])["records"][0]["record"]
    # The fields given changed; the speaker and the time were kept.
    assert after == {
        "id": "r1",
        "text": "The blue kettle is broken.",
        "speaker": "Ann",
        "time": "2023-05-08",
        "metadata": {"fixed": False},
    }
    assert payload(out["import"])["added"] == {"copy": 1}
    assert (payload(out["import again"])["total_added"], payload(out["import again"])["skipped"]) == (0, 1)
    recall = payload(out["recall"])
    assert "broken" in recall["context"] and recall["blocks"][0]["metadata"] == {"r1": {"fixed": False}}
    assert payload(out["filtered"])["context"] == ""
