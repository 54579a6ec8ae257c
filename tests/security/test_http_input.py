"""Input no client library would send to `muster http`, and what the answers may show: lone
surrogates get a 422 that can be encoded, non-ASCII Authorization bytes a 401, and neither
/v1/info nor an error message shows the store's path; namespaces only to the token holder. A
reply is bounded by the units asked for, however the records were written."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.test_http import JSON, Server, records_in

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    store = tmp_path_factory.mktemp("input") / "agent.muster"
    server = Server(store, "--token", TOKEN)
    for namespace in ("default", "user-42"):
        body = {"records": [f"a note in {namespace}"], "namespace": namespace}
        httpx.post(f"{server.url}/v1/add", json=body, headers=AUTH, timeout=60).raise_for_status()
    yield server, store
    server.stop()


SURROGATE_BODIES = {
    "query (context)": ("/v1/context", r'{"query": "where is \ud800 it?"}', "query"),
    "query (search)": ("/v1/search", r'{"query": "\udfff"}', "query"),
    "request_id": ("/v1/add", r'{"records": ["ok"], "request_id": "r-\ud800"}', "request_id"),
    "namespace (add)": ("/v1/add", r'{"records": ["ok"], "namespace": "n\udc80"}', "namespace"),
    "namespace (context)": ("/v1/context", r'{"query": "q", "namespace": "\ud800"}', "namespace"),
    "record text": ("/v1/add", r'{"records": ["a \ud800 b"]}', "record 0"),
    "an unknown field": ("/v1/add", r'{"records": ["ok"], "\ud800": 1}', "body"),
    "not an object": ("/v1/context", r'"\ud800"', "body"),
}


@pytest.mark.parametrize("case", list(SURROGATE_BODIES))
def test_a_lone_surrogate_gets_a_422_that_can_be_read(running: tuple[Server, Path], case: str) -> None:
    server, store = running
    before = records_in(store)
    path, body, named = SURROGATE_BODIES[case]
    reply = httpx.post(f"{server.url}{path}", content=body, headers={**AUTH, **JSON}, timeout=60)
    assert reply.status_code == 422, (case, reply.status_code, reply.text)
    reply.content.decode("utf-8")  # strict: the answer itself is valid UTF-8
    assert named in json.dumps(reply.json()["detail"]), reply.text
    assert records_in(store) == before


def test_non_ascii_authorization_bytes_are_a_401(running: tuple[Server, Path]) -> None:
    server, _ = running
    for value in (b"Bearer t\xc3\xb6ken", b"Bearer \xff\xfe", "Bearer tök".encode("latin-1"), b"\xe9"):
        reply = httpx.get(f"{server.url}/v1/info", headers={"Authorization": value}, timeout=60)
        assert reply.status_code == 401, (value, reply.status_code)


def test_info_shows_namespaces_to_the_token_holder_and_never_the_path(running: tuple[Server, Path]) -> None:
    server, store = running
    info = httpx.get(f"{server.url}/v1/info", headers=AUTH, timeout=60).json()
    assert info["namespaces"] == ["default", "user-42"]
    assert "path" not in info and str(store.parent) not in json.dumps(info)


def test_a_context_reply_is_at_most_the_units_asked_for_times_their_budget(
    running: tuple[Server, Path],
) -> None:
    server, _ = running
    # Three records of about 5,000 tokens with no sentence break: before, each was one unit.
    words = "alpha beta gamma delta river stone quiet market yellow seven".split()
    records = [" ".join(words[(i * 7 + r) % len(words)] for i in range(5_000)) for r in range(3)]
    body = {"records": records, "namespace": "unbroken"}
    httpx.post(f"{server.url}/v1/add", json=body, headers=AUTH, timeout=120).raise_for_status()
    info = httpx.get(f"{server.url}/v1/info", params={"namespace": "unbroken"}, headers=AUTH, timeout=60)
    budget = info.json()["plan"]["unit_budget"]
    ask = {"query": "river stone", "units": 3, "namespace": "unbroken"}
    reply = httpx.post(f"{server.url}/v1/context", json=ask, headers=AUTH, timeout=120).json()
    assert len(reply["units"]) == 3
    assert reply["tokens"] <= 3 * (budget + 1) < sum(len(r.split()) for r in records) // 3


def test_the_token_on_the_command_line_is_warned_about(running: tuple[Server, Path]) -> None:
    server, _ = running
    assert "MUSTER_HTTP_TOKEN" in server.stderr and "ps" in server.stderr
    assert TOKEN not in server.stderr


def test_error_answers_never_show_the_path(tmp_path: Path) -> None:
    store = tmp_path / "secret-folder" / "agent.muster"
    store.parent.mkdir()
    server = Server(store)
    try:
        httpx.post(f"{server.url}/v1/add", json={"records": ["kept"]}, timeout=60).raise_for_status()
        # The file goes away under the running server; opening another namespace now fails.
        os.replace(store, tmp_path / "moved.muster")
        store.mkdir()
        reply = httpx.post(f"{server.url}/v1/add", json={"records": ["x"], "namespace": "other"}, timeout=60)
    finally:
        server.stop()
        shutil.rmtree(store)
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"] == "StoreError" and "the store" in reply.json()["detail"]
    assert "secret-folder" not in reply.text and str(tmp_path) not in reply.text


# Issue 32: bodies Python's JSON reader cannot take as they are. Each is a 422 that names the field,
# as a malformed body is (README), never a 400 naming nothing; nothing is written.
_METADATA = b'{"records": [{"text": "ok", "metadata": %b}]}'
UNREADABLE_BODIES = {
    "not UTF-8 in a record": ("/v1/add", b'{"records": ["caf\xe9 au lait"]}', "records[0]"),
    "not UTF-8 in a query": ("/v1/context", b'{"query": "where is \xff\xfe it?"}', "query"),
    "not UTF-8 in a key": ("/v1/add", _METADATA % b'{"k\xc3": 1}', "records[0].metadata"),
    "nested 100,000 deep": ("/v1/add", _METADATA % (b"[" * 100_000 + b"]" * 100_000), "records[0].metadata"),
    "an integer of 5,000 digits": ("/v1/add", _METADATA % (b'{"n": %b}' % (b"7" * 5000)), "metadata.n"),
}


@pytest.mark.parametrize("typed", [True, False], ids=["json", "untyped"])
@pytest.mark.parametrize("case", list(UNREADABLE_BODIES))
def test_a_body_json_cannot_read_is_a_422_naming_the_field(
    running: tuple[Server, Path], case: str, typed: bool
) -> None:
    server, store = running
    before = records_in(store)
    path, body, named = UNREADABLE_BODIES[case]
    headers = {**AUTH, **(JSON if typed else {})}
    reply = httpx.post(f"{server.url}{path}", content=body, headers=headers, timeout=60)
    assert reply.status_code == 422, (case, reply.status_code, reply.text)
    assert named in json.dumps(reply.json()["detail"]), reply.text
    assert records_in(store) == before


@pytest.mark.parametrize(
    "route", ["/v1/info?namespace=caf%E9", "/v1/records?namespace=%FF%FE", "/v1/export?namespace=n%ED%A0%80"]
)
def test_a_query_parameter_that_is_not_utf8_is_refused_by_name(
    running: tuple[Server, Path], route: str
) -> None:
    """Before: the bytes became U+FFFD and the call answered 200 about another namespace."""
    server, _ = running
    reply = httpx.get(f"{server.url}{route}", headers=AUTH, timeout=60)
    assert reply.status_code == 422, (route, reply.status_code, reply.text)
    assert "namespace" in reply.json()["detail"] and "UTF-8" in reply.json()["detail"], reply.text
