"""One rule on every surface (issue 55, items 6, 8, 9 and 10): the library, the CLI, HTTP and MCP
refuse the same input with the same one-line message, naming the real problem.

Each test runs the real thing: a SQLite store in a temporary folder, the CLI in a subprocess,
``muster http`` on a free port, ``muster mcp`` over stdio (raw lines where the official client
cannot send the input)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_RECORD_CHARS
from muster_exact.memory import build
from muster_exact.store import Store
from tests.conftest import run_muster
from tests.security.test_mcp_stdio import RawClient, tool_call
from tests.serve.test_http import Server
from tests.serve.test_one_validation import mcp_calls

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("mcp")

MODELS = {"MUSTER_MODELS": "cpu-small"}
HELD = "The red mug is in the kitchen sink."
SURROGATE_QUERY = "hello \udcff"  # what `"$(printf 'hello \xff')"` is in Python's argv
UNITS_REFUSAL = "units must be a whole number from 1 to 200, not 1000000000"
QUERY_REFUSAL = "query is not valid Unicode (a lone surrogate at character 6); decode its bytes as UTF-8"
RECORD_REFUSAL = "record 0 is not valid Unicode (a lone surrogate at character 6); decode its bytes as UTF-8"
UNKNOWN_FIELD = "record 0 has an unknown field 'speakr'"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("one-rule") / "agent.muster"
    with Store.open(path, models="cpu-small") as opened:
        opened.add([{"text": HELD, "id": "r1"}])
    return path


@pytest.fixture(scope="module")
def http(store: Path) -> Iterator[Server]:
    server = Server(store)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def raw_mcp(store: Path) -> Iterator[RawClient]:
    client = RawClient(store)
    yield client
    client.close()


def library_refusal(call: Any) -> str:
    with pytest.raises(InputError) as refused:
        call()
    message = str(refused.value)
    assert "\n" not in message, message
    return message


def cli_refusal(*args: str, env: dict[str, str] | None = None) -> str:
    """The CLI's one line on stderr, exit code 2 (every typed input error's), nothing on stdout."""
    result = run_muster(*args, env={**MODELS, **(env or {})}, timeout=300)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("muster: error: "), lines
    return lines[0].removeprefix("muster: error: ")


def http_refusal(server: Server, route: str, body: Any) -> str:
    reply = httpx.post(f"{server.url}{route}", json=body, timeout=120)
    assert reply.status_code == 422 and reply.json()["error"] == "InputError", reply.text
    return str(reply.json()["detail"])


def mcp_raw_refusal(client: RawClient, n: int, tool: str, arguments: str) -> str:
    client.send(tool_call(n, tool, arguments))
    reply = client.reply()
    assert reply is not None and reply["id"] == n and reply["result"]["isError"] is True, reply
    text = str(reply["result"]["content"][0]["text"])
    assert text.startswith("InputError: "), text
    return text.removeprefix("InputError: ")


def mcp_refusals(store: Path, calls: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, str]:
    out = {}
    for key, reply in asyncio.run(mcp_calls(store, calls)).items():
        assert reply.is_error and reply.content[0].text.startswith("InputError: "), reply.content
        out[key] = reply.content[0].text.removeprefix("InputError: ")
    return out


def records_of(store: Path) -> list[dict[str, Any]]:
    with Store.open(store) as opened:
        return list(opened.records())


# -- item 6: lone surrogates ----------------------------------------------------------------------


def test_a_lone_surrogate_in_a_query_is_one_refusal_on_every_surface(
    store: Path, http: Server, raw_mcp: RawClient
) -> None:
    """Before: the CLI and the library raised the tokenizer's TypeError (a 68-line traceback)."""
    memory = build([HELD], models="cpu-small", cache=False)
    with Store.open(store) as opened:
        assert library_refusal(lambda: opened.context(SURROGATE_QUERY)) == QUERY_REFUSAL
    assert library_refusal(lambda: memory.context(SURROGATE_QUERY)) == QUERY_REFUSAL
    assert cli_refusal("query", "--store", str(store), SURROGATE_QUERY) == QUERY_REFUSAL
    reply = httpx.post(  # httpx's json= refuses to encode a lone surrogate: the JSON escape, as sent
        f"{http.url}/v1/context",
        content=b'{"query": "hello \\udcff"}',
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert reply.status_code == 422 and reply.json()["detail"] == QUERY_REFUSAL, reply.text
    assert mcp_raw_refusal(raw_mcp, 61, "recall", r'{"query":"hello \udcff"}') == QUERY_REFUSAL


def test_a_lone_surrogate_in_records_is_one_refusal_for_build_query_file_and_add(
    store: Path, tmp_path: Path
) -> None:
    file = tmp_path / "records.json"
    file.write_text('[{"text": "hello \\udcff"}]', encoding="utf-8")  # valid JSON, a lone surrogate
    assert (
        library_refusal(lambda: build([SURROGATE_QUERY], models="cpu-small", cache=False)) == RECORD_REFUSAL
    )
    with Store.open(store) as opened:
        assert library_refusal(lambda: opened.add([SURROGATE_QUERY])) == RECORD_REFUSAL
    assert cli_refusal("query", str(file), "where is the mug?") == RECORD_REFUSAL
    assert cli_refusal("add", "--store", str(store), str(file)) == RECORD_REFUSAL
    assert len(records_of(store)) == 1


# -- item 8: the caps are the library's ------------------------------------------------------------


def test_units_over_the_cap_are_one_refusal_on_every_surface(store: Path, http: Server) -> None:
    """Before: `muster query --store F Q --units 1000000000` exited 0 (HTTP and MCP refused it)."""
    memory = build([HELD], models="cpu-small", cache=False)
    with Store.open(store) as opened:
        assert library_refusal(lambda: opened.context("mug?", units=10**9)) == UNITS_REFUSAL
    assert library_refusal(lambda: memory.context("mug?", units=10**9)) == UNITS_REFUSAL
    assert library_refusal(lambda: build([HELD], models="cpu-small", units=10**9)) == UNITS_REFUSAL
    assert cli_refusal("query", "--store", str(store), "mug?", "--units", "1000000000") == UNITS_REFUSAL
    assert http_refusal(http, "/v1/context", {"query": "mug?", "units": 10**9}) == UNITS_REFUSAL
    refused = mcp_refusals(store, {"recall": ("recall", {"query": "mug?", "units": 10**9})})
    assert refused["recall"] == UNITS_REFUSAL
    # The cap's own edge is a read, on every surface.
    assert HELD in memory.context("mug?", units=200).text


def test_a_record_over_the_size_cap_is_refused_before_any_embedding_everywhere(
    store: Path, http: Server, tmp_path: Path
) -> None:
    """Before: `build([<20 MB record>])` started an 85-minute embedding."""
    big = "word " * (MAX_RECORD_CHARS // 5) + "x"
    refusal = f"record 0 has {len(big):,} characters; a record holds at most {MAX_RECORD_CHARS:,}"
    file = tmp_path / "big.json"
    file.write_text(json.dumps([big]), encoding="utf-8")
    for call in (
        lambda: build([big], models="cpu-small", cache=False),
        lambda: build(big, models="cpu-small", cache=False),  # a text: one block, one record
        lambda: build([{"text": big}], models="cpu-small", cache=False, record_format="serial"),
    ):
        assert library_refusal(call).startswith(refusal)
    with Store.open(store) as opened:
        message = library_refusal(lambda: opened.add([big]))
    assert message.startswith(refusal)
    assert cli_refusal("query", str(file), "mug?") == message
    assert http_refusal(http, "/v1/add", {"records": [big]}) == message
    assert mcp_refusals(store, {"remember": ("remember", {"text": big})})["remember"] == message
    assert len(records_of(store)) == 1


# -- item 9: schema-exact types, unknown fields ----------------------------------------------------


def test_http_and_mcp_take_ids_as_the_schema_says_a_list(store: Path, http: Server) -> None:
    """Before: `POST /v1/delete {"ids": "r1"}` deleted r1 though the schema says an array."""
    refusal = "ids must be a list of record ids, not str"
    assert http_refusal(http, "/v1/delete", {"ids": "r1"}) == refusal
    assert mcp_refusals(store, {"forget": ("forget", {"ids": "r1"})})["forget"] == refusal
    assert [r["id"] for r in records_of(store)] == ["r1"]


def test_the_library_still_deletes_one_id_given_alone(tmp_path: Path) -> None:
    """`Store.delete("r1")` is documented (an id, or a list): the servers' stricter schema is
    theirs, the Python call keeps working."""
    with Store.open(tmp_path / "one.muster") as opened:
        opened.add([{"text": HELD, "id": "r1"}, {"text": "Another note.", "id": "r2"}])
        assert list(opened.delete("r1").deleted) == ["r1"]
        assert [r["id"] for r in opened.records()] == ["r2"]


def test_a_speaker_true_is_refused_not_stored_as_true(store: Path, http: Server) -> None:
    """Before: `speaker: true` was stored and shown as `True: a`."""
    with Store.open(store) as opened:
        message = library_refusal(lambda: opened.add([{"text": "a", "speaker": True}]))
    assert message == "record 0: 'speaker' must be a string or a number, not bool"
    assert http_refusal(http, "/v1/add", {"records": [{"text": "a", "speaker": True}]}) == message
    refused = mcp_refusals(store, {"remember": ("remember", {"text": "a", "speaker": True})})
    assert refused["remember"] == message
    assert len(records_of(store)) == 1


def test_an_unknown_record_field_is_refused_naming_it_on_every_surface(
    store: Path, http: Server, tmp_path: Path
) -> None:
    """Before: `{"text": "a", "speakr": "Ana"}` was stored without a word, its speaker lost."""
    record = {"text": "a", "speakr": "Ana"}
    file = tmp_path / "typo.jsonl"
    file.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with Store.open(store) as opened:
        message = library_refusal(lambda: opened.add([record]))
        assert library_refusal(lambda: opened.update("r1", record)) == message
        assert "unknown field 'speakr'" in library_refusal(lambda: opened.patch("r1", {"speakr": "Ana"}))
    assert message.startswith(UNKNOWN_FIELD) and "speaker" in message and "metadata" in message
    assert library_refusal(lambda: build([record], models="cpu-small", cache=False)) == message
    assert cli_refusal("add", "--store", str(store), str(file)) == message
    assert cli_refusal("query", str(file), "who?") == message
    assert http_refusal(http, "/v1/add", {"records": [record]}) == message
    assert mcp_refusals(store, {"many": ("remember_many", {"records": [record]})})["many"] == message
    assert [r["id"] for r in records_of(store)] == ["r1"] and records_of(store)[0]["text"] == HELD


def test_declared_records_and_imports_keep_every_field(tmp_path: Path) -> None:
    """The two documented exceptions: a declared record array round-trips every field as given,
    and an import restores an export as written (an older store may hold other fields), which a
    read then takes as it is."""
    records = [{"text": "Step 1: boil water", "step_owner": "ana"}, {"text": "Step 2: add tea"}]
    memory = build(records, models="cpu-small", cache=False, record_format="serial")
    assert memory.ordered_records is not None and memory.ordered_records.roundtrip() == records
    line = {"namespace": "default", "record": {"text": HELD, "id": "old", "source": "v1"}, "request_id": None}
    with Store.open(tmp_path / "old.muster", models="cpu-small") as opened:
        opened.import_records([line])
        assert next(iter(opened.records()))["source"] == "v1"
        assert HELD in opened.context("Where is the mug?").text


# -- item 10: messages that name the real problem --------------------------------------------------


def test_nan_in_time_is_named_as_such(store: Path, http: Server) -> None:
    """Before: "metadata must be JSON values" for a NaN in `time`."""
    with Store.open(store) as opened:
        message = library_refusal(lambda: opened.add([{"text": "a", "time": math.nan}]))
    assert message == "record 0: 'time' must be a string or a finite number, not nan"
    reply = httpx.post(
        f"{http.url}/v1/add",
        content=b'{"records": [{"text": "a", "time": NaN}]}',
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert reply.status_code == 422 and reply.json()["detail"] == message, reply.text
    with Store.open(store) as opened:
        in_metadata = library_refusal(lambda: opened.add([{"text": "a", "metadata": {"n": math.inf}}]))
    assert (
        in_metadata.startswith("record 0: 'metadata' is not JSON-serialisable")
        and "inf" in in_metadata.lower()
    )


def test_a_query_that_is_not_text_is_named_as_such(store: Path, http: Server) -> None:
    """Before: `"query": 5` -> "empty query"."""
    with Store.open(store) as opened:
        message = library_refusal(lambda: opened.context(5))  # type: ignore[arg-type]
    assert message == "query must be a string, not int"
    assert http_refusal(http, "/v1/context", {"query": 5}) == message
    assert mcp_refusals(store, {"recall": ("recall", {"query": 5})})["recall"] == message


def test_mcp_params_as_an_array_is_named_as_such(raw_mcp: RawClient) -> None:
    """Before: "not a JSON-RPC message (4 problems)"."""
    said = "InputError: params must be an object (named parameters), not a list"
    reply = raw_mcp.request({"jsonrpc": "2.0", "id": 70, "method": "tools/list", "params": ["x"]})
    assert reply["id"] == 70 and reply["error"]["code"] == -32602 and reply["error"]["message"] == said
    reply = raw_mcp.request({"jsonrpc": "2.0", "id": 71, "method": "tools/call", "params": ["recall"]})
    assert reply["id"] == 71 and reply["result"]["isError"] is True, reply  # a tool call: a tool error
    assert reply["result"]["content"][0]["text"] == said
    assert raw_mcp.request({"jsonrpc": "2.0", "id": 72, "method": "ping"})["result"] == {}


def test_a_number_too_long_names_its_field_over_mcp_as_over_http(
    store: Path, http: Server, raw_mcp: RawClient
) -> None:
    """Before: "the line is not JSON" over MCP, while HTTP named the field."""
    digits = "7" * 5000
    arguments = '{"records":[{"text":"a","metadata":{"n":' + digits + "}}]}"
    reply = httpx.post(
        f"{http.url}/v1/add",
        content=arguments.encode(),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert reply.status_code == 422, reply.text
    message = reply.json()["detail"]
    assert message.startswith("records[0].metadata.n is a number of 5,000 digits"), message
    assert mcp_raw_refusal(raw_mcp, 81, "remember_many", arguments) == message
    assert len(records_of(store)) == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("query", "--store", "x.muster", "q", "--units", "x"), "argument --units: invalid int value: 'x'"),
        (("query",), "the following arguments are required: FILE"),
        (("quarry", "F", "q"), "invalid choice: 'quarry'"),
        (("add", "--bogus"), "unrecognized arguments: --bogus"),
    ],
)
def test_a_command_line_mistake_is_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    """Before: argparse printed its usage (4 to 6 lines) before the error."""
    result = run_muster(*args)
    assert result.returncode == 2 and result.stdout == "", result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--help" in lines[0], result.stderr


def test_help_still_shows_the_whole_usage() -> None:
    result = run_muster("query", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: muster query")
    assert "--units" in result.stdout and "--where" in result.stdout
