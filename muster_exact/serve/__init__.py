"""Serving a store: one backend (:mod:`.backend`) under the MCP server (:mod:`.mcp`, its
stdin checked by :mod:`.mcp_wire`), the HTTP API
(:mod:`.http`) and the agent-framework integrations (:mod:`muster_exact.integrations`).

Nothing here is imported by ``import muster_exact``; each server needs its extra
(``muster-memory[mcp]``, ``muster-memory[http]``).
"""
