"""The MCP server (official ``mcp`` SDK, stdio) over :class:`~muster_exact.serve.backend.Backend`.

    muster mcp --store /path/to/agent.muster

Claude Desktop-style configuration::

    {"mcpServers": {"muster": {"command": "muster", "args": ["mcp", "--store", "/path/to/agent.muster"]}}}

Tools: ``remember``, ``remember_many``, ``recall``, ``search_memory``,
``memory_info``. A typed library error becomes a tool error carrying its
message (the one place that mapping happens); nothing is written when a
call is refused.
"""

from __future__ import annotations

from typing import Any

from muster_exact.errors import MusterError
from muster_exact.serve.backend import Backend

INSTRUCTIONS = (
    "Long-term memory that keeps every word. Call remember (or remember_many) with what should be "
    "kept, verbatim; call recall with a question to get the relevant excerpts, in their original "
    "order, to read before answering."
)


def create_server(backend: Backend) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("muster", instructions=INSTRUCTIONS)

    def answer(call: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = call()
        except MusterError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None
        return result

    @server.tool()
    def remember(
        text: str,
        speaker: str | None = None,
        time: str | None = None,
        metadata: dict[str, Any] | None = None,
        request_id: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """Keep one record in memory, verbatim (no model call; it is readable at once).

        text: what to remember (up to 8,000,000 characters). speaker, time: optional, shown
        with the text. metadata: optional JSON, kept but not shown. request_id: optional; a
        retry with the same id is applied once. namespace: optional, a separate memory.
        """
        record: dict[str, Any] = {"text": text}
        for key, value in (("speaker", speaker), ("time", time), ("metadata", metadata)):
            if value is not None:
                record[key] = value
        return answer(lambda: backend.remember(record, request_id, namespace))

    @server.tool()
    def remember_many(
        records: list[dict[str, Any] | str], request_id: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """Keep several records at once, in one transaction (all or none).

        records: up to 10,000 items, each a string or an object with "text" (and optional
        "speaker", "time", "id", "metadata"). request_id: optional; a retry is applied once.
        namespace: optional, a separate memory.
        """
        return answer(lambda: backend.remember(records, request_id, namespace))

    @server.tool()
    def recall(query: str, units: int | None = None, namespace: str | None = None) -> dict[str, Any]:
        """The memory's context for a question: the relevant excerpts, verbatim, in stored order,
        newest version of a fact on numbered logs. Put "context" in your prompt.

        query: the question (up to 20,000 characters). units: how many passages to read
        (1 to 200; default: the plan's, usually 10). namespace: optional, a separate memory.
        """
        return answer(lambda: backend.recall(query, units, namespace))

    @server.tool()
    def search_memory(query: str, units: int | None = None, namespace: str | None = None) -> dict[str, Any]:
        """The passages memory would select for a question, best first, each with its unit id,
        record ids and which channels proposed it; not assembled. Arguments and limits as recall."""
        return answer(lambda: backend.search(query, units, namespace))

    @server.tool()
    def memory_info(namespace: str | None = None) -> dict[str, Any]:
        """What this memory holds: namespaces, record count and content hash, the plan (structure,
        unit and read budgets) and the models reads use. namespace: optional, which memory."""
        return answer(lambda: backend.info(namespace))

    return server


def serve(backend: Backend) -> None:
    create_server(backend).run("stdio")
