"""The HTTP API (FastAPI + uvicorn) over :class:`~muster_exact.serve.backend.Backend`.

    MUSTER_HTTP_TOKEN=... muster http --store agent.muster [--host 127.0.0.1] [--port 8765]
    curl -s localhost:8765/v1/add -H 'Content-Type: application/json' -d '{"records":["Red mug"]}'
    curl -s localhost:8765/v1/context -H 'Content-Type: application/json' -d '{"query":"Where is the mug?"}'

Routes: ``POST /v1/add``, ``POST /v1/context``, ``POST /v1/search``,
``POST /v1/inspect``, ``POST /v1/delete``, ``PUT /v1/records/{id}`` (the whole record),
``PATCH /v1/records/{id}`` (the fields given), ``GET /v1/records``, ``GET /v1/export``,
``POST /v1/import``, ``GET /v1/info``, ``GET /healthz`` (liveness), ``GET /readyz`` (readiness:
the store can be reached, else 503 with the reason);
the OpenAPI document at ``/openapi.json``, its reference page at ``/docs``
and the inspector page at ``/`` (:mod:`muster_exact.serve.pages`: open paths,
no data in them). Binds 127.0.0.1 unless told otherwise. A delete is a
write like an add (the same guard, the same token); it answers 200 when the
text is gone from every file, and 202 with the same body (``erase_pending:
true``) when another connection's read keeps it on disk until that read ends
(the server retries within seconds; see docs/security.md). ``muster http --declared-records`` adds ``POST
/v1/declared/context`` (:mod:`muster_exact.derive.declared`), behind the same guard;
without the flag it is 404.

A web page can make a browser send requests to a server on 127.0.0.1, so a
:class:`Guard` in front of every route refuses what only a browser tricked by
a page sends: a ``Host`` that is not a name of this server (421: a rebound DNS
name), a cross-origin ``Origin`` (403), and, from a page (an ``Origin``
header), a write whose body is not ``Content-Type: application/json`` (415:
HTML forms cannot send that type without the page asking first). A browser
sends ``Origin`` with every write a page makes, so a write without one comes
from a program (``curl -d '{...}'``, the seed README's lines): its body is read
as JSON whatever its type, and only a body that is not JSON is 415. With a token (``$MUSTER_HTTP_TOKEN``, or
``--token``) every route but ``/healthz``, ``/readyz`` and the pages needs ``Authorization: Bearer
<token>`` (401). A body over the limit is 413 before it is read. Field values
are validated by the library (the backend), not here, so HTTP, MCP and the
library refuse the same input with the same message (422). Nothing is written
on a refused request.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel

from muster_exact.core.errors import InputError, MusterError, RequestConflict, ResourceMissing
from muster_exact.core.limits import (
    DEFAULT_MAX_BODY,
)
from muster_exact.core.optional import MissingExtra
from muster_exact.core.version import __version__
from muster_exact.serve.backend import TOKEN_ENV, Backend, ServeError, check_fields
from muster_exact.serve.budget import Limits
from muster_exact.serve.guard import Guard
from muster_exact.serve.http_bodies import (
    AddIn,
    DeclaredIn,
    DeleteIn,
    ImportIn,
    PatchIn,
    QueryIn,
    UpdateIn,
)
from muster_exact.serve.pages import add_pages
from muster_exact.store import StoreError
from muster_exact.store.dump import DEFAULT_PAGE

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


_OLD_TEXT_PENDING: dict[int | str, dict[str, Any]] = {
    202: {"description": "Changed; the old text is still on disk until the reads holding it end"}
}

# OpenAPI links: after an add, read the namespace it wrote (what a stateful test client follows).
_ADDED_NAMESPACE = "$response.body#/head/namespace"
_READS_OF_THE_ADDED = {
    "ContextOfTheAdded": {
        "operationId": "context",
        "requestBody": {"query": "What was added?", "namespace": _ADDED_NAMESPACE},
    },
    "SearchOfTheAdded": {
        "operationId": "search",
        "requestBody": {"query": "What was added?", "namespace": _ADDED_NAMESPACE},
    },
    "InfoOfTheAdded": {"operationId": "info", "parameters": {"query.namespace": _ADDED_NAMESPACE}},
}


# --- answers ------------------------------------------------------------------------------


def status_of(exc: MusterError) -> int:
    """The one place typed errors become HTTP statuses."""
    if isinstance(exc, RequestConflict):
        return 409
    if isinstance(exc, InputError):
        return 422
    if isinstance(exc, (StoreError, ResourceMissing, MissingExtra)):
        return 503
    return 400


def _encodable(value: Any) -> Any:
    """``value`` with every string made encodable as UTF-8 (a lone surrogate a caller sent is
    shown as its escape), so that an answer about bad input can always be sent."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(v) for v in value]
    return value


def _answer(status: int, detail: Any, error: str | None = None) -> JSONResponse:
    content = {"detail": _encodable(detail)} | ({} if error is None else {"error": error})
    return JSONResponse(status_code=status, content=content)


# --- the app ------------------------------------------------------------------------------


def create_app(
    backend: Backend,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    *,
    hosts: Iterable[str] = (),
    origins: Iterable[str] = (),
    declared_records: bool = False,
) -> Guard:
    """The ASGI app: the FastAPI routes (``.app``) behind the :class:`Guard`. ``hosts`` and
    ``origins`` are allowed besides this machine's own names and same-origin requests;
    ``declared_records`` adds ``POST /v1/declared/context`` (``muster http --declared-records``)."""
    app = FastAPI(
        title="MUSTER memory",
        version=__version__,
        description="Long-term memory that keeps every word: add records, read contexts.",
        docs_url=None,  # FastAPI's pages load their scripts from a CDN; ours are in the package
        redoc_url=None,
    )
    add_pages(app)  # the inspector at /, the reference at /docs (muster_exact.serve.pages)

    @app.exception_handler(MusterError)
    async def muster_error(request: Request, exc: MusterError) -> JSONResponse:
        return _answer(status_of(exc), backend.explain(exc), type(exc).__name__)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        try:
            _check_body_fields(request, exc)
        except InputError as unknown:
            return await muster_error(request, unknown)
        # Where and what, never the input itself: it can be megabytes, or text that cannot be sent.
        detail = [{"loc": e["loc"], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        return _answer(422, detail)

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        """Up; and whether the other routes need the token (a page asks for it only then)."""
        return {"status": "ok", "token_required": token is not None}

    @app.get("/readyz", responses={503: {"description": "The store cannot be reached; the reason"}})
    def readyz() -> Any:
        """Ready to serve: the store answers now (what a load balancer checks; /healthz is only
        liveness). 503 with the reason, never the store's location, when it does not."""
        try:
            backend.ready()
        except MusterError as exc:
            content = {"status": "unavailable", "detail": backend.explain(exc), "error": type(exc).__name__}
            return JSONResponse(status_code=503, content=_encodable(content))
        return {"status": "ready"}

    @app.post("/v1/add", operation_id="add", responses={200: {"links": _READS_OF_THE_ADDED}})
    def add(body: AddIn) -> dict[str, Any]:
        """Add records in one transaction (no model call); a repeated request_id is applied once."""
        return backend.remember_many(body.records, body.request_id, body.namespace)

    @app.post("/v1/context", operation_id="context")
    def context(body: QueryIn) -> dict[str, Any]:
        """The assembled context for a query: verbatim, grouped by parent, in stored order."""
        return backend.recall(body.query, body.units, body.namespace, body.where)

    @app.post("/v1/search", operation_id="search")
    def search(body: QueryIn) -> dict[str, Any]:
        """The selected passages, best first, with ids and provenance; no assembly."""
        return backend.search(body.query, body.units, body.namespace, body.where)

    @app.post("/v1/inspect", operation_id="inspect")
    def inspect(body: QueryIn) -> dict[str, Any]:
        """A context with its reasons, from one retrieval pass: each passage kept (the channels
        that proposed it and their ranks, its rerank place and score, the floor or fill that kept
        it, its parent and records), each channel's floor, and the units ranked just after the
        cut (``left_out``), with the same fields. What the inspector page at ``/`` shows."""
        return backend.inspect(body.query, body.units, body.namespace, body.where)

    @app.post(
        "/v1/delete",
        operation_id="delete",
        responses={202: {"description": "Deleted; the text is still on disk until the reads holding it end"}},
    )
    def delete(body: DeleteIn) -> Any:
        """Delete records by id, or every record one request added, and every cached trace of them.
        200: the text is gone from every file of the store; 202: deleted, but another connection's
        read keeps the text on disk until that read ends (``erase_pending``; retried within seconds)."""
        result = backend.forget(body.ids, body.request_id, body.namespace)
        return JSONResponse(status_code=202, content=result) if result["erase_pending"] else result

    @app.put("/v1/records/{record_id:path}", operation_id="update", responses=_OLD_TEXT_PENDING)
    def update(record_id: str, body: UpdateIn) -> Any:
        """Replace one record in place (same id, same place in the stored order); its old text is
        erased as a delete erases it. 200, or 202 with ``erase_pending`` as for a delete."""
        result = backend.update(record_id, body.record, body.namespace)
        return JSONResponse(status_code=202, content=result) if result["erase_pending"] else result

    @app.patch("/v1/records/{record_id:path}", operation_id="patch", responses=_OLD_TEXT_PENDING)
    def patch(record_id: str, body: PatchIn) -> Any:
        """Change the fields given and keep the others (a JSON merge patch, RFC 7396: null removes
        a field, metadata merges key by key); otherwise as ``PUT``, which replaces the whole record."""
        result = backend.patch(record_id, body.fields, body.namespace)
        return JSONResponse(status_code=202, content=result) if result["erase_pending"] else result

    @app.post("/v1/import", operation_id="import")
    def import_(body: ImportIn) -> dict[str, Any]:
        """Write the lines of an export (``GET /v1/export``, ``muster export``), each to its own
        namespace, as ``muster import`` does: all checked first, then one transaction; a record
        already there as in the dump is skipped, so the same dump twice adds nothing."""
        return backend.import_lines(body.lines)

    @app.get("/v1/records", operation_id="records")
    def records(namespace: str | None = None, limit: int = DEFAULT_PAGE, offset: int = 0) -> dict[str, Any]:
        """A page of a namespace's records in stored order, each with its id, fields, metadata and
        request id; ``total`` is the namespace's record count."""
        return backend.records(namespace, limit, offset)

    @app.get("/v1/export", operation_id="export", response_class=StreamingResponse)
    def export(namespace: str | None = None) -> StreamingResponse:
        """Every record of a namespace as JSON lines (``muster import`` reads them), in stored order."""
        return StreamingResponse(iter(backend.export(namespace)), media_type="application/x-ndjson")

    @app.get("/v1/info", operation_id="info")
    def info(namespace: str | None = None) -> dict[str, Any]:
        """Head, plan and models of a namespace; the store's namespaces too when a token is set
        (every caller who got this far has shown it)."""
        return backend.info(namespace, namespaces=token is not None)

    if declared_records:

        @app.post("/v1/declared/context", operation_id="declared_context")
        def declared_context(body: DeclaredIn) -> dict[str, Any]:
            """The context of a declared record array for a query: built in memory, in the array's
            order, each serial prefix set aside, every version kept; nothing is stored."""
            return backend.recall_declared(body.format, body.records, body.query, body.units)

    return Guard(app, token, max_body, hosts, origins)


def _check_body_fields(request: Request, exc: RequestValidationError) -> None:
    """A body field the route does not take, refused as an MCP tool refuses an unknown argument
    (:func:`~muster_exact.serve.backend.check_fields`, one message for both)."""
    sent = [e["loc"][1] for e in exc.errors() if e["type"] == "extra_forbidden" and len(e["loc"]) == 2]
    body = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(body, "field_info", None), "annotation", None)
    if sent and isinstance(model, type) and issubclass(model, BaseModel):
        check_fields([str(name) for name in sent], list(model.model_fields))


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` now, so that a bad or busy port is one clear line at start-up."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ServeError(f"port {port!r} is not a TCP port; give one from 1 to 65535")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ServeError(f"cannot listen on {host!r}: {exc}; give an address of this machine") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"cannot listen on {host}:{port}: the port is in use; choose another --port"
            ) from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --host") from None
    return sock


def serve(
    backend: Backend,
    sock: socket.socket,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    *,
    hosts: Iterable[str] = (),
    origins: Iterable[str] = (),
    declared_records: bool = False,
    limits: Limits | None = None,
) -> None:
    """Serve on ``sock`` (from :func:`listen`) until interrupted; ``limits`` bound each connection's
    wait on its client and the connections open (:mod:`muster_exact.serve.connections`; by
    default, a share of the file descriptors left now: :mod:`muster_exact.serve.budget`)."""
    import uvicorn

    from muster_exact.serve.budget import budget
    from muster_exact.serve.connections import Refusals, collapsed_logs, protocol

    address = str(sock.getsockname()[0])
    if token is None and not ipaddress.ip_address(address.split("%")[0]).is_loopback:
        log.warning("%s is reachable from other machines and no token is set; set $%s", address, TOKEN_ENV)
    app = create_app(
        backend, token, max_body, hosts=hosts, origins=origins, declared_records=declared_records
    )
    limits = limits or Limits()
    if limits.max_connections is None:
        limits = replace(limits, max_connections=budget(backend.max_open).connections)
    assert limits.max_connections is not None
    refusals = Refusals()
    config = uvicorn.Config(
        app,
        log_level="warning",
        http=protocol(limits, refusals),
        # The most connections accepted in one go: one more share of the connections' descriptors.
        backlog=limits.max_connections,
    )
    with collapsed_logs(refusals):
        uvicorn.Server(config).run(sockets=[sock])
