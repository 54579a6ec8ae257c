"""The MCP server (official ``mcp`` SDK, stdio) over :class:`~muster_exact.serve.backend.Backend`.

    muster mcp --store /path/to/agent.muster

Claude Desktop-style configuration::

    {"mcpServers": {"muster": {"command": "muster", "args": ["mcp", "--store", "/path/to/agent.muster"]}}}

Tools: ``remember``, ``remember_many``, ``recall``, ``search_memory``,
``forget``, ``update_memory``, ``list_memories``, ``memory_info``.
Arguments reach the backend as the client sent them (the SDK neither
coerces nor parses them), so the library's validation refuses bad
input with the same message as over HTTP. A typed library error becomes a
tool error carrying its message (:func:`tool_error`, the one place that
mapping happens); nothing is written when a call is refused.

Every request gets an answer. The SDK's stdio transport reads lines with a
JSON parser that stops at 200 levels of nesting and at a lone surrogate
escape, and drops such a line without a reply (the client then waits
forever), and it decodes bytes that are not UTF-8 as U+FFFD (the text would
be stored altered). So :class:`CheckedLines` reads stdin first: a line that
is not UTF-8, holds a lone surrogate, nests deeper than
``MAX_MESSAGE_DEPTH`` or is not JSON-RPC is answered here (a tool error for a
tool call, a JSON-RPC error otherwise); every other line goes on to the SDK
as canonical JSON.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, TypeAlias

from pydantic import PlainValidator, WithJsonSchema

from muster_exact.core.errors import InputError, MusterError
from muster_exact.core.limits import MAX_RECORDS_PER_CALL, MAX_UNITS
from muster_exact.serve.backend import Backend, check_fields
from muster_exact.store import check_unicode
from muster_exact.store.dump import DEFAULT_PAGE

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory that keeps every word. Call remember (or remember_many) with what should be "
    "kept, verbatim; call recall with a question to get the relevant excerpts, in their original "
    "order, to read before answering; call forget with record ids (search_memory shows them) to "
    "delete records for good."
)
MAX_MESSAGE_DEPTH = 128  # nesting of one JSON-RPC message; the SDK's parser gives up at 200

if TYPE_CHECKING:
    Text: TypeAlias = Any
    OptionalText: TypeAlias = Any
    Units: TypeAlias = Any
    AnyJSON: TypeAlias = Any
    Count: TypeAlias = Any
    Records: TypeAlias = Any
    Ids: TypeAlias = Any
else:
    # Annotated as ``str`` so the SDK neither coerces a value ("5" -> 5) nor parses a string that
    # looks like JSON ("null" -> None); the validator hands the value on as sent, the library checks it.
    _AS_SENT = PlainValidator(lambda value: value)
    Text = Annotated[str, _AS_SENT, WithJsonSchema({"type": "string"})]
    OptionalText = Annotated[str, _AS_SENT, WithJsonSchema({"type": ["string", "null"]})]
    Units = Annotated[
        str, _AS_SENT, WithJsonSchema({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_UNITS})
    ]
    AnyJSON = Annotated[str, _AS_SENT, WithJsonSchema({"description": "any JSON value"})]
    Count = Annotated[str, _AS_SENT, WithJsonSchema({"type": ["integer", "null"], "minimum": 0})]
    # Not ``str``: clients that send a list as a JSON string (Claude Desktop does) get it parsed.
    Records = Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": ["string", "object"]}})]
    Ids = Annotated[
        Any,
        WithJsonSchema(
            {
                "type": ["array", "null"],
                "items": {"type": ["string", "integer"]},
                "minItems": 1,
                "maxItems": MAX_RECORDS_PER_CALL,
            }
        ),
    ]


def tool_error(backend: Backend, exc: MusterError) -> Any:
    """The one place a typed error becomes what a tool answers: a tool error with its message."""
    from mcp_types import CallToolResult, TextContent

    text = f"{type(exc).__name__}: {backend.explain(exc)}"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def create_server(backend: Backend) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("muster", instructions=INSTRUCTIONS)

    def answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The call's result, or a tool error for a typed library error."""
        try:
            return call()
        except MusterError as exc:
            refused: dict[str, Any] = tool_error(backend, exc)  # a CallToolResult: the SDK sends it as is
            return refused

    @server.tool()
    def remember(
        text: Text,
        speaker: OptionalText = None,
        time: OptionalText = None,
        metadata: AnyJSON = None,
        request_id: OptionalText = None,
        namespace: OptionalText = None,
    ) -> dict[str, Any]:
        """Keep one record in memory, verbatim (no model call; it is readable at once).

        text: what to remember (up to 8,000,000 characters). speaker, time: optional, shown
        with the text. metadata: optional JSON, kept but not shown. request_id: optional; a
        retry with the same id is applied once. namespace: optional, a separate memory.
        """
        record = _record(text, speaker, time, metadata)
        return answer(lambda: backend.remember(record, request_id, namespace))

    @server.tool()
    def remember_many(
        records: Records, request_id: OptionalText = None, namespace: OptionalText = None
    ) -> dict[str, Any]:
        """Keep several records at once, in one transaction (all or none).

        records: up to 10,000 items, each a string or an object with "text" (and optional
        "speaker", "time", "id", "metadata"). request_id: optional; a retry is applied once.
        namespace: optional, a separate memory.
        """
        return answer(lambda: backend.remember_many(records, request_id, namespace))

    @server.tool()
    def recall(
        query: Text, units: Units = None, namespace: OptionalText = None, where: AnyJSON = None
    ) -> dict[str, Any]:
        """The memory's context for a question: the relevant excerpts, verbatim, in stored order,
        newest version of a fact on numbered logs. Put "context" in your prompt; "blocks" carry
        each excerpt's record ids and metadata.

        query: the question (up to 20,000 characters). units: how many passages to read
        (1 to 200; default: the plan's, usually 10). namespace: optional, a separate memory.
        where: optional, only records that match: {"speaker": name or [names], "time": {"from":
        ISO 8601, "to": ISO 8601}, "metadata": {key: value}}.
        """
        return answer(lambda: backend.recall(query, units, namespace, where))

    @server.tool()
    def search_memory(
        query: Text, units: Units = None, namespace: OptionalText = None, where: AnyJSON = None
    ) -> dict[str, Any]:
        """The passages memory would select for a question, best first, each with its unit id,
        record ids, their metadata and which channels proposed it; not assembled. Arguments and
        limits as recall."""
        return answer(lambda: backend.search(query, units, namespace, where))

    @server.tool()
    def forget(
        ids: Ids = None, request_id: OptionalText = None, namespace: OptionalText = None
    ) -> dict[str, Any]:
        """Delete records for good: by their ids (as search_memory lists them), or every record
        one remember call with this request_id added; exactly one of the two. Their text and
        every cached trace of it leave the store's files.

        ids: up to 10,000 record ids; an id the memory does not hold is refused and nothing is
        deleted. request_id: the one given to remember. namespace: optional, which memory.
        erase_pending true in the result: deleted, but the text stays on disk until the store's
        next open or write (another connection is reading).
        """
        return answer(lambda: backend.forget(ids, request_id, namespace))

    @server.tool()
    def update_memory(
        id: Text,
        text: Text,
        speaker: OptionalText = None,
        time: OptionalText = None,
        metadata: AnyJSON = None,
        namespace: OptionalText = None,
    ) -> dict[str, Any]:
        """Replace one record (its id as list_memories or search_memory show it) with new text,
        in place: the same id, the same place in the order. The old text leaves the store's
        files as forget's does. Fields as remember; erase_pending as forget."""
        record = _record(text, speaker, time, metadata)
        return answer(lambda: backend.update(id, record, namespace))

    @server.tool()
    def list_memories(
        namespace: OptionalText = None, limit: Units = None, offset: Units = None
    ) -> dict[str, Any]:
        """What memory holds, in the order it was added: a page of records, each with its id,
        text, speaker, time, metadata and request id; total is the record count.

        limit: records on the page (1 to 10,000; default 100). offset: records to skip (default 0).
        namespace: optional, which memory.
        """
        return answer(
            lambda: backend.records(
                namespace, DEFAULT_PAGE if limit is None else limit, 0 if offset is None else offset
            )
        )

    @server.tool()
    def memory_info(namespace: OptionalText = None) -> dict[str, Any]:
        """What this memory holds: namespaces, record count and content hash, the plan (structure,
        unit and read budgets) and the models reads use. namespace: optional, which memory."""
        return answer(lambda: backend.info(namespace))

    return server


def _record(text: Any, speaker: Any, time: Any, metadata: Any) -> dict[str, Any]:
    """A record from a tool's arguments, as sent; the fields not given are left out."""
    record: dict[str, Any] = {"text": text}
    for key, value in (("speaker", speaker), ("time", time), ("metadata", metadata)):
        if value is not None:
            record[key] = value
    return record


def serve(backend: Backend) -> None:
    import anyio

    anyio.run(_serve_stdio, create_server(backend), backend)


async def _serve_stdio(server: Any, backend: Backend) -> None:
    from mcp.server.stdio import stdio_server

    tools = {tool.name: tool.input_schema for tool in await server.list_tools()}
    lines = CheckedLines(sys.stdin.buffer, backend, tools)
    # The SDK serves the lines given; its own stdout handling (the wire on a private descriptor,
    # stray prints sent to stderr) stays. mcp 2.x has no public way to run an MCPServer on given
    # streams, hence the low-level server (the extra pins mcp < 3).
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.replies = write_stream
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())


# --- stdin, checked before the SDK reads it -------------------------------------------------


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
        import anyio

        self._raw = anyio.wrap_file(raw)
        self._backend = backend
        self._tools = tools
        self.replies: Any = None

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._raw.readline()
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue
            checked = checked_line(line, self._tools)
            if isinstance(checked, str):
                return checked
            await self._answer(checked)

    async def _answer(self, refused: Refused) -> None:
        reply = refusal_reply(self._backend, refused)
        if reply is None:
            log.warning("refused a notification (no reply possible): %s", refused.error)
            return
        from mcp.shared.message import SessionMessage

        await self.replies.send(SessionMessage(reply))


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
    except ValueError:
        return Refused(None, InputError("the line is not JSON"), code=-32700)
    problem = not_utf8 or _problem(message) or _tool_arguments(message, tools or {})
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
            if depth > MAX_MESSAGE_DEPTH:
                return _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    stack.append((key, depth, (*where, "(a key)")))
                stack.append((item, depth + 1, (*where, str(key))))
    return None


def _too_deep() -> InputError:
    return InputError(
        f"the request nests deeper than {MAX_MESSAGE_DEPTH} levels; nest its arguments (metadata) less deeply"
    )


def _where(path: tuple[str, ...]) -> str:
    """Where in a message a string is, for a message ("argument 'text'"), always encodable."""
    names = [p.encode("utf-8", "backslashreplace").decode("utf-8") for p in path]
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
