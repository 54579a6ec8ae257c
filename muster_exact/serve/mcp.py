"""The MCP server (official ``mcp`` SDK, stdio) over :class:`~muster_exact.serve.backend.Backend`.

    muster mcp --store /path/to/agent.muster

Claude Desktop-style configuration::

    {"mcpServers": {"muster": {"command": "muster", "args": ["mcp", "--store", "/path/to/agent.muster"]}}}

Tools: ``remember``, ``remember_many``, ``recall``, ``search_memory``,
``forget``, ``update_memory``, ``import_memories``, ``list_memories``, ``memory_info``.
Arguments reach the backend as the client sent them (the SDK neither
coerces nor parses them), so the library's validation refuses bad
input with the same message as over HTTP. A typed library error becomes a
tool error carrying its message (:func:`~muster_exact.serve.mcp_wire.tool_error`,
the one place that mapping happens); nothing is written when a call is refused.

Every request gets an answer: stdin is read and checked before the SDK
reads it (:mod:`muster_exact.serve.mcp_wire`). SIGTERM and SIGINT stop the
server at once, also while its client is connected: :func:`serve` returns
the signal, and the caller closes the store.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import PlainValidator, WithJsonSchema

from muster_exact.core.errors import MusterError
from muster_exact.core.limits import MAX_RECORDS_PER_CALL, MAX_UNITS
from muster_exact.serve.backend import Backend
from muster_exact.serve.mcp_wire import CheckedLines, tool_error
from muster_exact.store.dump import DEFAULT_PAGE

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory that keeps every word. Call remember (or remember_many) with what should be "
    "kept, verbatim; call recall with a question to get the relevant excerpts, in their original "
    "order, to read before answering; call forget with record ids (search_memory shows them) to "
    "delete records for good."
)

if TYPE_CHECKING:
    Text: TypeAlias = Any
    OptionalText: TypeAlias = Any
    Units: TypeAlias = Any
    AnyJSON: TypeAlias = Any
    Count: TypeAlias = Any
    Records: TypeAlias = Any
    Ids: TypeAlias = Any
    Lines: TypeAlias = Any
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
    Lines = Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "object"}})]
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
        one remember call with this request_id added. Their text and every cached trace of it
        leave the store's files.

        ids: up to 10,000 record ids; an id the memory does not hold is refused and nothing is
        deleted. request_id: alone, the one given to remember; with ids, this forget's own id:
        a retry with the same ids and request_id is answered as done. namespace: optional.
        erase_pending true in the result: deleted, but the text stays on disk until another
        connection's read ends (the server retries within seconds).
        """
        return answer(lambda: backend.forget(ids, request_id, namespace))

    @server.tool()
    def update_memory(
        id: Text,
        text: OptionalText = None,
        speaker: OptionalText = None,
        time: OptionalText = None,
        metadata: AnyJSON = None,
        namespace: OptionalText = None,
    ) -> dict[str, Any]:
        """Change one record (its id as list_memories or search_memory show it) in place: the
        fields given change, the others are kept (metadata, an object, merges key by key); the
        same id, the same place in the order. The old text leaves the store's files as forget's
        does. Fields as remember; erase_pending as forget."""
        fields = {
            key: value
            for key, value in (("text", text), ("speaker", speaker), ("time", time), ("metadata", metadata))
            if value is not None
        }
        return answer(lambda: backend.patch(id, fields, namespace))

    @server.tool()
    def import_memories(lines: Lines) -> dict[str, Any]:
        """Write back the lines of an export (GET /v1/export or muster export: one object per
        record, {"namespace", "record", "request_id"}), each to its own namespace. All are
        checked first and written in one transaction; a record already there as in the export is
        skipped, so importing the same lines twice adds nothing. Up to 10,000 lines a call."""
        return answer(lambda: backend.import_lines(lines))

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


def serve(backend: Backend) -> int | None:
    """Serve on stdin and stdout until stdin ends (None) or SIGTERM or SIGINT comes (that
    signal's number); the caller closes the store either way."""
    import anyio

    return anyio.run(_serve_stdio, create_server(backend), backend)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def _serve_stdio(server: Any, backend: Backend) -> int | None:
    import anyio
    from mcp.server.stdio import stdio_server

    tools = {tool.name: tool.input_schema for tool in await server.list_tools()}
    lines = CheckedLines(sys.stdin.buffer, backend, tools)
    stopped: list[int] = []
    async with anyio.create_task_group() as group:
        if sys.platform != "win32":  # no signal handlers on an event loop there
            group.start_soon(_stop_on_signal, group.cancel_scope, stopped)
        # The SDK serves the lines given; its own stdout handling (the wire on a private
        # descriptor, stray prints sent to stderr) stays. mcp 2.x has no public way to run an
        # MCPServer on given streams, hence the low-level server (the extra pins mcp < 3).
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.replies = write_stream
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())
        group.cancel_scope.cancel()  # stdin ended: stop waiting for a signal
    return stopped[0] if stopped else None


async def _stop_on_signal(scope: Any, stopped: list[int]) -> None:
    """The first SIGTERM or SIGINT cancels the server (a request in progress with it) and is
    kept, so that the caller closes the store and exits as that signal asks."""
    import anyio

    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            log.info("stopping on %s", signal.Signals(signum).name)
            stopped.append(signum)
            scope.cancel()
            return
