"""`muster mcp` answers every request, also one whose bytes no MCP client library would send: a lone
surrogate escape, nesting deeper than a JSON parser goes, bytes that are not UTF-8, NaN, a line that
is not JSON-RPC. Each gets an answer (a tool error for a tool call) and nothing is written or altered.

The official client cannot produce these inputs (it refuses to serialise them), so the lines are
written to the server's stdin as they would arrive from a buggy or hostile client."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_exact.store import Store
from tests.conftest import REPO

pytest.importorskip("mcp")

REPLY_TIMEOUT = 20.0  # seconds: a hang fails the test instead of hanging the suite


class RawClient:
    """``muster mcp`` with raw pipes: JSON-RPC lines in, lines out, with a timeout on every reply."""

    def __init__(self, store: Path, stderr: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.stderr = None if stderr is None else stderr.open("wb")  # else nothing is kept
        self.process = subprocess.Popen(
            [sys.executable, "-m", "muster_exact", "mcp", "--store", str(store)],
            cwd=REPO,
            env={**os.environ, "MUSTER_MODELS": "cpu-small"} if env is None else env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if self.stderr is None else self.stderr,
        )
        self.pending = b""
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert "result" in self.request({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self, timeout: float = REPLY_TIMEOUT) -> dict[str, Any] | None:
        """The next line the server writes, or None when none comes within ``timeout`` seconds."""
        assert self.process.stdout is not None
        out = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([out], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(out, 1 << 20)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return dict(json.loads(line))

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps(message).encode())
        reply = self.reply()
        assert reply is not None, f"no reply to {message}"
        return reply

    def close(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # the server may have gone already
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.stderr is not None:
            self.stderr.close()


def tool_call(n: int, tool: str, arguments: str) -> bytes:
    """A tools/call line with ``arguments`` spliced in as raw JSON text."""
    head = f'{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"{tool}","arguments":'
    return head.encode() + arguments.encode("utf-8", "surrogatepass") + b"}}"


DEEP = 900
BAD_TOOL_CALLS = {
    "lone surrogate in text": ("remember", r'{"text":"a \ud800 b"}', "not valid Unicode"),
    "lone surrogate in namespace": ("remember", r'{"text":"ok","namespace":"n\udfff"}', "not valid Unicode"),
    "lone surrogate in request_id": ("remember", r'{"text":"ok","request_id":"\ud83d"}', "not valid Unicode"),
    "lone surrogate in a metadata key": (
        "remember",
        r'{"text":"ok","metadata":{"\udc00":1}}',
        "not valid Unicode",
    ),
    "lone surrogate in a query": ("recall", r'{"query":"where \ud800?"}', "not valid Unicode"),
    "metadata nested 900 deep": (
        "remember",
        '{"text":"ok","metadata":' + "[" * DEEP + "]" * DEEP + "}",
        "nest",
    ),
    "records nested 100,000 deep": (
        "remember_many",
        '{"records":' + "[" * 100_000 + "]" * 100_000 + "}",
        "nest",
    ),
    "NaN in an argument": ("recall", '{"query":"q","units":NaN}', "NaN"),
    "lone surrogate in an id to forget": ("forget", r'{"ids":["r\udc00"]}', "not valid Unicode"),
    "ids nested 900 deep": ("forget", '{"ids":' + "[" * DEEP + "]" * DEEP + "}", "nest"),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RawClient, Path]]:
    store = tmp_path_factory.mktemp("mcp-raw") / "agent.muster"
    raw = RawClient(store)
    yield raw, store
    raw.close()


def records_in(store: Path) -> list[dict[str, Any]]:
    with Store.open(store) as opened:
        return list(opened.records())


@pytest.mark.parametrize("case", list(BAD_TOOL_CALLS))
def test_every_bad_tool_call_gets_a_tool_error(client: tuple[RawClient, Path], case: str) -> None:
    raw, store = client
    tool, arguments, reason = BAD_TOOL_CALLS[case]
    n = 100 + list(BAD_TOOL_CALLS).index(case)
    raw.send(tool_call(n, tool, arguments))
    reply = raw.reply()
    assert reply is not None, f"{case}: no reply (the client would hang)"
    assert reply["id"] == n and reply["result"]["isError"] is True, reply
    text = reply["result"]["content"][0]["text"]
    assert text.startswith("InputError: ") and reason in text, text
    assert records_in(store) == []


def test_bytes_that_are_not_utf8_are_refused_not_replaced(client: tuple[RawClient, Path]) -> None:
    raw, store = client
    line = b'{"jsonrpc":"2.0","id":200,"method":"tools/call","params":{"name":"remember","arguments":'
    raw.send(line + b'{"text":"caf\xe9 \xff\xfe"}}}')
    reply = raw.reply()
    assert reply is not None and reply["id"] == 200 and reply["result"]["isError"] is True, reply
    assert "not UTF-8" in reply["result"]["content"][0]["text"]
    assert records_in(store) == []  # not stored as "caf\ufffd \ufffd\ufffd"


def test_lines_that_are_not_json_rpc_get_an_error_answer(client: tuple[RawClient, Path]) -> None:
    raw, _ = client
    raw.send(b"this is not JSON")
    reply = raw.reply()
    assert reply is not None and reply["id"] is None and reply["error"]["code"] == -32700, reply
    raw.send(b'{"jsonrpc":"2.0","id":301,"method":5}')
    reply = raw.reply()
    assert reply is not None and reply["id"] == 301 and "error" in reply, reply
    raw.send(b'{"jsonrpc":"2.0","id":302,"method":"tools/list","params":{"cursor":"\\ud800"}}')
    reply = raw.reply()
    assert reply is not None and reply["id"] == 302 and "not valid Unicode" in reply["error"]["message"], (
        reply
    )


BAD_IDS = {"a float": "1.5", "null": "null", "true": "true", "an array": "[7]", "an object": '{"n":7}'}


@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
@pytest.mark.parametrize("case", list(BAD_IDS))
def test_a_request_whose_id_is_not_a_string_or_an_integer_gets_an_error_with_id_null(
    client: tuple[RawClient, Path], case: str, method: str
) -> None:
    """JSON-RPC 2.0: the id of an invalid request cannot be answered, so the error's id is null;
    MCP also refuses null. Before, these lines passed as notifications and got no reply at all."""
    raw, store = client
    params = '{"name":"remember","arguments":{"text":"kept?"}}' if method == "tools/call" else "{}"
    raw.send(f'{{"jsonrpc":"2.0","id":{BAD_IDS[case]},"method":"{method}","params":{params}}}'.encode())
    reply = raw.reply()
    assert reply is not None, f"id {case}: no reply (the client would hang)"
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    assert "id must be a string or an integer" in reply["error"]["message"], reply
    assert records_in(store) == []


def test_a_line_that_is_not_a_valid_notification_gets_an_error_and_a_valid_one_none(
    client: tuple[RawClient, Path],
) -> None:
    """No id and a method that is not a name: an invalid request (JSON-RPC 2.0's own example),
    answered with id null. A valid notification is never answered: the next reply is the ping's."""
    raw, _ = client
    for line in (b'{"jsonrpc":"2.0","method":1,"params":"bar"}', b'{"jsonrpc":"1.0","method":"ping"}'):
        raw.send(line)
        reply = raw.reply()
        assert reply is not None and reply["id"] is None and reply["error"]["code"] == -32600, (line, reply)
    raw.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}')
    assert raw.request({"jsonrpc": "2.0", "id": 500, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 500,
        "result": {},
    }


def test_the_server_still_works_after_every_refusal(client: tuple[RawClient, Path]) -> None:
    raw, store = client
    reply = raw.request(
        json.loads(tool_call(400, "remember", '{"text":"caf\\u00e9 au lait","speaker":"Ana"}'))
    )
    assert reply["result"]["isError"] is False, reply
    assert [r["text"] for r in records_in(store)] == ["café au lait"]
