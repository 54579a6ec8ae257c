"""The MCP server's stdin (:mod:`muster_exact.serve.mcp`), read and checked before the SDK reads it.

Every request gets an answer. The SDK's stdio transport reads lines with a
JSON parser that stops at 200 levels of nesting and at a lone surrogate
escape, and drops such a line without a reply (the client then waits
forever); it decodes bytes that are not UTF-8 as U+FFFD (the text would be
stored altered); and it takes a line whose id is not a string or an integer
(a float, null, true, an array, an object) for a notification, which is never
answered. So :class:`CheckedLines` reads stdin first: a line that is not
UTF-8, holds a lone surrogate, nests deeper than ``MAX_REQUEST_DEPTH``, has
such an id, calls a tool with an argument it does not take, or is not
JSON-RPC is answered here (a tool error for a tool call, a JSON-RPC error with
id null where the id cannot be answered, nothing for a well-formed
notification); every other line goes on to the SDK as canonical JSON.

stdin is read on a daemon thread of its own, not the SDK's worker threads: a
read that waits for the client's next line must not hold up a stop (SIGTERM,
SIGINT) nor the interpreter's exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

from muster_exact.core.errors import InputError, MusterError
from muster_exact.core.limits import MAX_REQUEST_DEPTH
from muster_exact.serve.backend import Backend, check_fields
from muster_exact.store import check_unicode

log = logging.getLogger(__name__)

READ_BYTES = 1 << 16


def tool_error(backend: Backend, exc: MusterError) -> Any:
    """The one place a typed error becomes what a tool answers: a tool error with its message."""
    from mcp_types import CallToolResult, TextContent

    text = f"{type(exc).__name__}: {backend.explain(exc)}"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


@dataclass(frozen=True)
class Refused:
    """A line answered here: the message as far as it could be read (for its id), and why."""

    message: Any
    error: MusterError
    code: int = -32602  # "invalid params"; -32600 "invalid request", -32700 a line that is not JSON


class CheckedLines:
    """The lines of stdin the SDK may read, as an async iterator; the others are answered on
    ``replies`` (the SDK's write stream, set once it exists)."""

    def __init__(self, raw: BinaryIO, backend: Backend, tools: dict[str, dict[str, Any]]) -> None:
        self._fd = raw.fileno()
        self._backend = backend
        self._tools = tools
        self._lines: Any = None  # the receiving end of the reader thread's lines, once started
        self.replies: Any = None

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._next_line()
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue
            checked = checked_line(line, self._tools)
            if isinstance(checked, str):
                return checked
            await self._answer(checked)

    async def _next_line(self) -> bytes:
        """The next line of stdin, b"" at its end; waiting for it can be cancelled at once."""
        import anyio
        import anyio.lowlevel

        if self._lines is None:  # started from the event loop: the thread hands lines to it
            send, self._lines = anyio.create_memory_object_stream[bytes](0)
            token = anyio.lowlevel.current_token()
            reader = threading.Thread(
                target=_read_lines, args=(self._fd, send, token), name="muster-mcp-stdin", daemon=True
            )
            reader.start()
        try:
            line: bytes = await self._lines.receive()
        except anyio.EndOfStream:
            return b""
        return line

    async def _answer(self, refused: Refused) -> None:
        reply = refusal_reply(self._backend, refused)
        if reply is None:
            log.warning("refused a notification (no reply possible): %s", refused.error)
            return
        from mcp.shared.message import SessionMessage

        await self.replies.send(SessionMessage(reply))


def _read_lines(fd: int, send: Any, token: Any) -> None:
    """The lines of ``fd`` handed to the event loop one at a time, until its end or the loop's.
    ``os.read``, not a Python file: a daemon thread blocked in a buffered read holds its lock,
    and the interpreter's exit would then stop on it."""
    import anyio.from_thread

    def hand(line: bytes) -> None:
        anyio.from_thread.run(send.send, line, token=token)

    parts: list[bytes] = []
    try:
        while chunk := os.read(fd, READ_BYTES):
            *ended, rest = chunk.split(b"\n")
            for piece in ended:
                hand(b"".join([*parts, piece, b"\n"]))
                parts = []
            if rest:
                parts.append(rest)
        if parts:
            hand(b"".join(parts))  # a last line without its newline
    except Exception as exc:  # the loop has ended (a stop), or stdin cannot be read
        log.debug("stdin reader ends: %s: %s", type(exc).__name__, exc)
    with contextlib.suppress(Exception):  # the end of stdin, for the server: it stops
        anyio.from_thread.run_sync(send.close, token=token)


def checked_line(line: bytes, tools: dict[str, dict[str, Any]] | None = None) -> str | Refused:
    """A line the SDK can read (canonical JSON of a valid message), or why it is refused; a tool
    call's arguments are checked against the tool's schema in ``tools`` (:func:`_tool_arguments`)."""
    try:
        text, not_utf8 = line.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        # Read on (invalid bytes as lone surrogates) only to find the request's id.
        text = line.decode("utf-8", "surrogateescape")
        not_utf8 = InputError(f"the request is not UTF-8 text (byte {exc.start}); send text as UTF-8")
    try:
        message = json.loads(text)
    except RecursionError:
        return Refused(_envelope(text), _too_deep())
    except json.JSONDecodeError:
        return Refused(None, InputError("the line is not JSON"), code=-32700)
    except ValueError:  # JSON, with an integer longer than Python converts: named as HTTP names it
        return _long_integer(text)
    problem = not_utf8 or _problem(message) or _params(message) or _tool_arguments(message, tools or {})
    if problem is not None:
        return Refused(message, problem)
    bad_id = _bad_id(message)
    if bad_id is not None:
        return Refused(message, bad_id, -32600)
    try:
        canonical = json.dumps(message, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return Refused(message, InputError("the request holds NaN or Infinity, which JSON does not allow"))
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        return Refused(message, InputError(f"not a JSON-RPC message ({exc.error_count()} problems)"), -32600)
    return canonical


def _long_integer(text: str) -> Refused:
    """A line holding an integer too long to convert, refused naming where it is: a tool's
    argument by its path from the arguments (``records[0].metadata.n``, as HTTP says it)."""
    from muster_exact.serve.body import check_value, long_integers

    message = long_integers(text)
    params = message.get("params") if isinstance(message, dict) else None
    arguments = params.get("arguments") if isinstance(params, dict) else None
    try:
        check_value(arguments if isinstance(arguments, dict) else message)
        check_value(message)
    except InputError as exc:
        return Refused(message, exc)
    return Refused(message, InputError("the line holds a number too long to read"))


def _params(message: Any) -> InputError | None:
    """MCP's params are named (an object); JSON-RPC also allows a list, which no MCP method takes."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None  # not a request at all: refused as one (-32600) below
    if "params" in message and not isinstance(message["params"], dict):
        kind = "a list" if isinstance(message["params"], list) else type(message["params"]).__name__
        return InputError(f"params must be an object (named parameters), not {kind}")
    return None


def _tool_arguments(message: Any, tools: dict[str, dict[str, Any]]) -> InputError | None:
    """A tool call's argument names as HTTP checks a body's: an unknown one is refused with the
    same message (the SDK would drop it without a word), and a required one that is missing is
    sent on as null, so the library refuses it as it refuses a null (a missing query is no
    query, over HTTP and in Python alike), not the SDK with a message of its own."""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return None
    schema, arguments = tools.get(params["name"]), params.get("arguments")
    if schema is None or not isinstance(arguments, dict):
        return None
    try:
        check_fields(arguments, list(schema.get("properties", {})))
    except InputError as exc:
        return exc
    for name in schema.get("required", []):
        arguments.setdefault(name, None)
    return None


def _request_id(message: Any) -> str | int | None:
    """A message's id if it is one JSON-RPC and MCP allow (a string or an integer), else None."""
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


def _bad_id(message: Any) -> InputError | None:
    """An id that is not a string or an integer (a float, null, true, an array, an object): the
    SDK would take the line for a notification and never answer it, so the client would wait
    forever. It is an invalid request, answered with id null (JSON-RPC 2.0; MCP refuses null)."""
    if isinstance(message, dict) and "id" in message and _request_id(message) is None:
        return InputError(f"the request's id must be a string or an integer, not {message['id']!r}")
    return None


def _notification(message: Any) -> bool:
    """A well-formed JSON-RPC notification (no id, a method name): never answered, even refused."""
    return (
        isinstance(message, dict)
        and "id" not in message
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
    )


def _problem(message: Any) -> InputError | None:
    """The first reason to refuse a parsed message: nesting past the bound, or a string (key or
    value) that is not valid Unicode. Iterative, so no depth can overflow the stack."""
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(message, 1, ())]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            try:
                check_unicode(value, _where(where))
            except InputError as exc:
                return exc
        elif isinstance(value, (dict, list)):
            if depth > MAX_REQUEST_DEPTH:
                return _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    stack.append((key, depth, (*where, "(a key)")))
                stack.append((item, depth + 1, (*where, str(key))))
    return None


def _too_deep() -> InputError:
    return InputError(
        f"the request nests deeper than {MAX_REQUEST_DEPTH} levels; nest its arguments (metadata) less deeply"
    )


def _where(path: tuple[str, ...]) -> str:
    """Where in a message a string is, for a message ("argument 'text'"), always encodable."""
    names = [p.encode("utf-8", "backslashreplace").decode("utf-8") for p in path]
    if names[:2] == ["params", "arguments"] and len(names) == 3 and names[2] != "(a key)":
        return names[2]  # a tool's argument as the library names it ("query"), one message everywhere
    if names[:2] == ["params", "arguments"] and len(names) > 2:
        return f"argument {'.'.join(names[2:])!r}"
    return ".".join(names) or "the request"


# A JSON token: a string (escapes kept whole), one bracket, or a run of anything else.
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]|[^"\[\]{}]+')


def _envelope(text: str) -> Any:
    """The top of a message too deep to parse, with every container below ``params`` replaced by
    null, so that its id and method (and tool name) can still be read; None when even that fails."""
    kept, depth = [], 0
    for token in _TOKEN.findall(text):
        if token in ("{", "["):
            depth += 1
            kept.append(token if depth <= 2 else "null" if depth == 3 else "")
        elif token in ("}", "]"):
            kept.append(token if depth <= 2 else "")
            depth -= 1
        elif depth <= 2:
            kept.append(token)
    try:
        return json.loads("".join(kept))
    except (ValueError, RecursionError):
        return None


def refusal_reply(backend: Backend, refused: Refused) -> Any:
    """The answer to a refused line: a tool error for a tool call, a JSON-RPC error for any other
    line (with id null when its id cannot be read or is not a string or an integer), None for a
    well-formed notification."""
    from mcp_types import ErrorData, JSONRPCError, JSONRPCResponse

    if _notification(refused.message):
        return None
    request_id = _request_id(refused.message)
    if request_id is not None and refused.message.get("method") == "tools/call":
        result = tool_error(backend, refused.error).model_dump(by_alias=True, exclude_none=True, mode="json")
        return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    error = ErrorData(
        code=refused.code, message=f"{type(refused.error).__name__}: {backend.explain(refused.error)}"
    )
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
