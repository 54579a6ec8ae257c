"""One validation for the library, HTTP and MCP: the same bad input gets the same refusal (an
InputError with the same message) through all three, with strict types: nothing is coerced
(``id: true`` is not "1", ``units: "5"`` is not 5) and an empty namespace is not "default"."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from muster_exact.core.errors import InputError
from muster_exact.serve.backend import Backend, check_fields
from muster_exact.store import Store
from tests.conftest import REPO
from tests.serve.test_http import Server, records_in

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("mcp")


@dataclass(frozen=True)
class Case:
    """One bad input, as each of the three takes it, and the core of the refusal."""

    library: Callable[[Path], Any]
    http: tuple[str, dict[str, Any]]
    mcp: tuple[str, dict[str, Any]]
    refusal: str


def add(records: Any, **kwargs: Any) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        with Store.open(path) as store:
            return store.add(records, **kwargs)

    return call


def remember_many(records: Any) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        backend = Backend(path)
        try:
            return backend.remember_many(records)
        finally:
            backend.close()

    return call


def opened(namespace: Any) -> Callable[[Path], Any]:
    return lambda path: Store.open(path, namespace)


def recall(query: Any, units: Any = None, where: Any = None) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        backend = Backend(path)
        try:
            return backend.recall(query, units, where=where)
        finally:
            backend.close()

    return call


def delete(ids: Any = None, request_id: Any = None) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        with Store.open(path) as store:
            return store.delete(ids, request_id=request_id)

    return call


def forget(ids: Any) -> Callable[[Path], Any]:
    """What both servers call for a delete (a Python caller's ``Store.delete`` may name one id)."""

    def call(path: Path) -> Any:
        backend = Backend(path)
        try:
            return backend.forget(ids)
        finally:
            backend.close()

    return call


def update(record_id: Any, record: Any) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        with Store.open(path) as store:
            return store.update(record_id, record)

    return call


def patch(record_id: Any, fields: Any) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        with Store.open(path) as store:
            return store.patch(record_id, fields)

    return call


def importing(lines: Any) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        with Store.open(path) as store:
            return store.import_records(lines)

    return call


def listing(limit: Any = 100, offset: Any = 0) -> Callable[[Path], Any]:
    def call(path: Path) -> Any:
        with Store.open(path) as store:
            return store.list_records(limit, offset)

    return call


def fields(sent: dict[str, Any], takes: tuple[str, ...]) -> Callable[[Path], Any]:
    """The argument names of one call, checked as both servers check them (an HTTP body's keys,
    an MCP tool's arguments); in Python an unknown keyword is Python's own TypeError."""
    return lambda path: check_fields(sent, takes)


ID = "'id' must be a string or a whole number"
UNITS = "units must be a whole number from 1 to 200"
NAMESPACE = "namespace must be 1 to 512 characters"
REQUEST_ID = "request_id must be a non-empty string"
CASES = {
    "record id true": Case(
        add([{"text": "x", "id": True}]),
        ("/v1/add", {"records": [{"text": "x", "id": True}]}),
        ("remember_many", {"records": [{"text": "x", "id": True}]}),
        ID,
    ),
    "record id 1.5": Case(
        add([{"text": "x", "id": 1.5}]),
        ("/v1/add", {"records": [{"text": "x", "id": 1.5}]}),
        ("remember_many", {"records": [{"text": "x", "id": 1.5}]}),
        ID,
    ),
    "text a number": Case(
        add([{"text": 5}]),
        ("/v1/add", {"records": [{"text": 5}]}),
        ("remember_many", {"records": [{"text": 5}]}),
        "'text' must be a string, not int",
    ),
    "text blank": Case(
        add(["   "]), ("/v1/add", {"records": ["   "]}), ("remember", {"text": "   "}), "empty text"
    ),
    "speaker a list": Case(
        add([{"text": "x", "speaker": ["A"]}]),
        ("/v1/add", {"records": [{"text": "x", "speaker": ["A"]}]}),
        ("remember", {"text": "x", "speaker": ["A"]}),
        "'speaker' must be a string or a number",
    ),
    "no records": Case(
        add([]), ("/v1/add", {"records": []}), ("remember_many", {"records": []}), "nothing to add"
    ),
    "units as text": Case(
        recall("q", "5"),
        ("/v1/context", {"query": "q", "units": "5"}),
        ("recall", {"query": "q", "units": "5"}),
        UNITS,
    ),
    "units true": Case(
        recall("q", True),
        ("/v1/context", {"query": "q", "units": True}),
        ("recall", {"query": "q", "units": True}),
        UNITS,
    ),
    "units 0": Case(
        recall("q", 0),
        ("/v1/search", {"query": "q", "units": 0}),
        ("search_memory", {"query": "q", "units": 0}),
        UNITS,
    ),
    "query empty": Case(recall(""), ("/v1/context", {"query": ""}), ("recall", {"query": ""}), "empty query"),
    "namespace empty (write)": Case(
        opened(""),
        ("/v1/add", {"records": ["x"], "namespace": ""}),
        ("remember", {"text": "x", "namespace": ""}),
        NAMESPACE,
    ),
    "namespace a number (write)": Case(
        opened(5),
        ("/v1/add", {"records": ["x"], "namespace": 5}),
        ("remember_many", {"records": ["x"], "namespace": 5}),
        NAMESPACE,
    ),
    "namespace blank (read)": Case(
        opened(" "),
        ("/v1/context", {"query": "q", "namespace": " "}),
        ("recall", {"query": "q", "namespace": " "}),
        NAMESPACE,
    ),
    "request_id a number": Case(
        add(["x"], request_id=7),
        ("/v1/add", {"records": ["x"], "request_id": 7}),
        ("remember", {"text": "x", "request_id": 7}),
        REQUEST_ID,
    ),
    "request_id empty": Case(
        add(["x"], request_id=""),
        ("/v1/add", {"records": ["x"], "request_id": ""}),
        ("remember", {"text": "x", "request_id": ""}),
        REQUEST_ID,
    ),
    "delete: an id true": Case(
        delete([True]),
        ("/v1/delete", {"ids": [True]}),
        ("forget", {"ids": [True]}),
        "id 0 must be a string or a whole number",
    ),
    "delete: an id blank": Case(
        delete(["r1", " "]),
        ("/v1/delete", {"ids": ["r1", " "]}),
        ("forget", {"ids": ["r1", " "]}),
        "id 1 must be 1 to 512 characters",
    ),
    "delete: no ids": Case(
        delete([]), ("/v1/delete", {"ids": []}), ("forget", {"ids": []}), "nothing to delete"
    ),
    # Ids with a request_id are a delete that is safe to retry (issue 55): no longer refused.
    "delete: neither": Case(
        delete(), ("/v1/delete", {}), ("forget", {}), "a delete takes record ids or a request_id"
    ),
    "delete: request_id a number": Case(
        delete(None, 7),
        ("/v1/delete", {"request_id": 7}),
        ("forget", {"request_id": 7}),
        REQUEST_ID,
    ),
    "delete: an id not held": Case(
        delete(["nope"]),
        ("/v1/delete", {"ids": ["nope"]}),
        ("forget", {"ids": ["nope"]}),
        "no record 'nope' in namespace 'default'; nothing deleted",
    ),
    "where: an unknown field": Case(
        recall("q", where={"speakr": "Ana"}),
        ("/v1/context", {"query": "q", "where": {"speakr": "Ana"}}),
        ("recall", {"query": "q", "where": {"speakr": "Ana"}}),
        "where: unknown field 'speakr'",
    ),
    "where: a time that is not ISO 8601": Case(
        recall("q", where={"time": {"from": "May 1"}}),
        ("/v1/search", {"query": "q", "where": {"time": {"from": "May 1"}}}),
        ("search_memory", {"query": "q", "where": {"time": {"from": "May 1"}}}),
        "where.time.from must be an ISO 8601 date or time",
    ),
    "update: an id not held": Case(
        update("nope", "The mug is in the sink."),
        ("PUT /v1/records/nope", {"record": "The mug is in the sink."}),
        ("update_memory", {"id": "nope", "text": "The mug is in the sink."}),
        "no record 'nope' in namespace 'default'; nothing updated",
    ),
    "update: blank text": Case(
        update("r1", "   "),
        ("PUT /v1/records/r1", {"record": "   "}),
        ("update_memory", {"id": "r1", "text": "   "}),
        "empty text",
    ),
    "patch: an id not held": Case(
        patch("nope", {"text": "The mug is in the sink."}),
        ("PATCH /v1/records/nope", {"fields": {"text": "The mug is in the sink."}}),
        ("update_memory", {"id": "nope", "text": "The mug is in the sink."}),
        "no record 'nope' in namespace 'default'; nothing updated",
    ),
    "patch: nothing to change": Case(
        patch("r1", {}),
        ("PATCH /v1/records/r1", {"fields": {}}),
        ("update_memory", {"id": "r1"}),
        "nothing to change",
    ),
    "patch: blank text": Case(
        patch("r1", {"text": "   "}),
        ("PATCH /v1/records/r1", {"fields": {"text": "   "}}),
        ("update_memory", {"id": "r1", "text": "   "}),
        "empty text",
    ),
    "import: not an export line": Case(
        importing([{"record": "x"}]),
        ("/v1/import", {"lines": [{"record": "x"}]}),
        ("import_memories", {"lines": [{"record": "x"}]}),
        "line 1 is not an export line",
    ),
    "list: limit 0": Case(
        listing(0), ("GET /v1/records?limit=0", {}), ("list_memories", {"limit": 0}), "limit must be"
    ),
    "records a number": Case(
        remember_many(5),
        ("/v1/add", {"records": 5}),
        ("remember_many", {"records": 5}),
        "records must be a list of records (strings or objects with 'text'), not int",
    ),
    "records a string": Case(
        remember_many("x"),
        ("/v1/add", {"records": "x"}),
        ("remember_many", {"records": "x"}),
        "records must be a list of records (strings or objects with 'text'), not str",
    ),
    "query missing": Case(recall(None), ("/v1/context", {}), ("recall", {}), "empty query"),
    # Issue 55: schema-exact types, unknown record fields, the library's caps, the real problem named.
    "query a number": Case(
        recall(5), ("/v1/context", {"query": 5}), ("recall", {"query": 5}), "query must be a string, not int"
    ),
    "units a billion": Case(
        recall("q", 10**9),
        ("/v1/context", {"query": "q", "units": 10**9}),
        ("recall", {"query": "q", "units": 10**9}),
        UNITS,
    ),
    "speaker true": Case(
        add([{"text": "x", "speaker": True}]),
        ("/v1/add", {"records": [{"text": "x", "speaker": True}]}),
        ("remember", {"text": "x", "speaker": True}),
        "record 0: 'speaker' must be a string or a number, not bool",
    ),
    "an unknown record field": Case(
        add([{"text": "x", "speakr": "Ana"}]),
        ("/v1/add", {"records": [{"text": "x", "speakr": "Ana"}]}),
        ("remember_many", {"records": [{"text": "x", "speakr": "Ana"}]}),
        "record 0 has an unknown field 'speakr'",
    ),
    "delete: ids a string": Case(
        forget("r1"), ("/v1/delete", {"ids": "r1"}), ("forget", {"ids": "r1"}), "ids must be a list"
    ),
    "an unknown field": Case(
        fields({"query": "q", "limit": 3}, ("query", "units", "namespace", "where")),
        ("/v1/context", {"query": "q", "limit": 3}),
        ("recall", {"query": "q", "limit": 3}),
        "unknown field 'limit'; this call takes query, units, namespace, where",
    ),
    "list: offset -1": Case(
        listing(100, -1),
        ("GET /v1/records?offset=-1", {}),
        ("list_memories", {"offset": -1}),
        "offset must be a whole number, 0 or more",
    ),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("validation") / "agent.muster"
    with Store.open(path):
        pass
    return path


@pytest.fixture(scope="module")
def http(store: Path) -> Iterator[Server]:
    server = Server(store)
    yield server
    server.stop()


async def mcp_replies(store: Path) -> dict[str, Any]:
    return await mcp_calls(store, {name: case.mcp for name, case in CASES.items()})


async def mcp_calls(store: Path, calls: dict[Any, tuple[str, dict[str, Any]]]) -> dict[Any, Any]:
    """Each call's reply from one real `muster mcp` over stdio, by the call's key."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "muster_exact", "mcp", "--store", str(store), "--models", "cpu-small"],
        env={**os.environ},
        cwd=str(REPO),
    )
    out = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for key, (tool, arguments) in calls.items():
            out[key] = await asyncio.wait_for(session.call_tool(tool, arguments), timeout=60)
    return out


@pytest.fixture(scope="module")
def mcp(store: Path) -> dict[str, Any]:
    return asyncio.run(mcp_replies(store))


@pytest.mark.parametrize("name", list(CASES))
def test_the_same_bad_input_gets_the_same_refusal_everywhere(
    name: str, store: Path, http: Server, mcp: dict[str, Any]
) -> None:
    case = CASES[name]
    with pytest.raises(InputError) as library:
        case.library(store)
    assert case.refusal in str(library.value)
    route, body = case.http
    method, _, path = route.rpartition(" ")
    if method == "GET":
        reply = httpx.get(f"{http.url}{path}", timeout=60)
    else:
        reply = httpx.request(method or "POST", f"{http.url}{path}", json=body, timeout=60)
    assert reply.status_code == 422 and reply.json()["error"] == "InputError", reply.text
    assert reply.json()["detail"] == str(library.value), (reply.json(), str(library.value))
    tool = mcp[name]
    assert tool.is_error and tool.content[0].text == f"InputError: {library.value}", tool.content[0].text
    assert records_in(store) == 0


# A namespace name holding a character that does not show: the same refusal, naming the code point
# (tests/security/test_names.py has each kind through the library and the CLI).
CRAFTED_NAMES = {
    "ops\x1b[31m": "U+001B",
    "ops\nFORGED": "U+000A",
    "ops\x00": "U+0000",
    "ops\u202etxt": "U+202E",
    "ops\u200b": "U+200B",
    "ops\u2028": "U+2028",
}


def test_a_crafted_namespace_gets_the_same_refusal_everywhere(store: Path, http: Server) -> None:
    calls = {
        (name, tool): (tool, {**arguments, "namespace": name})
        for name in CRAFTED_NAMES
        for tool, arguments in (("remember", {"text": "x"}), ("recall", {"query": "q"}))
    }
    mcp = asyncio.run(mcp_calls(store, calls))
    for name, code_point in CRAFTED_NAMES.items():
        with pytest.raises(InputError) as library:
            Store.open(store, name)
        message = str(library.value)
        assert code_point in message and message.isprintable(), message
        for route, body in (("/v1/add", {"records": ["x"]}), ("/v1/context", {"query": "q"})):
            reply = httpx.post(f"{http.url}{route}", json={**body, "namespace": name}, timeout=60)
            assert reply.status_code == 422 and reply.json()["detail"] == message, reply.text
        for tool in ("remember", "recall"):
            answer = mcp[name, tool]
            assert answer.is_error and answer.content[0].text == f"InputError: {message}", answer.content
    assert records_in(store) == 0
    with Store.open(store) as opened:
        assert opened.namespaces() == []
