"""The HTTP API (FastAPI + uvicorn) over :class:`~muster_exact.serve.backend.Backend`.

    muster http --store agent.muster [--host 127.0.0.1] [--port 8765] [--token T]
    curl -s localhost:8765/v1/add -d '{"records":[{"speaker":"robot","text":"Red mug on the table"}]}'
    curl -s localhost:8765/v1/context -d '{"query":"Where did I last see the red mug?"}'

Routes: ``POST /v1/add``, ``POST /v1/context``, ``POST /v1/search``,
``GET /v1/info``, ``GET /healthz``; the OpenAPI document at
``/openapi.json``. Binds 127.0.0.1 unless told otherwise. With a token
(``--token`` or ``$MUSTER_HTTP_TOKEN``) every route but ``/healthz`` needs
``Authorization: Bearer <token>`` (401 without it). A body over the limit is
refused with 413 before it is read; a body that is not valid JSON, or lacks a
field, or has a wrong type, is 422 naming the field. Every body is read as
JSON whatever its Content-Type, so ``curl -d`` works as written. Nothing is
written on a refused request.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from muster_exact import __version__
from muster_exact.errors import InputError, MusterError, ResourceMissing
from muster_exact.models import MissingExtra
from muster_exact.serve.backend import MAX_RECORDS_PER_CALL, MAX_UNITS, Backend
from muster_exact.store import StoreError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 16 * 1024 * 1024  # bytes
TOKEN_ENV = "MUSTER_HTTP_TOKEN"
OPEN_PATHS = ("/healthz",)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# --- request bodies ---------------------------------------------------------------------


class RecordIn(BaseModel):
    """One record: ``text``, and optionally speaker/role, time, id and JSON metadata."""

    model_config = ConfigDict(extra="allow")
    text: str = Field(min_length=1, max_length=8_000_000)
    speaker: str | None = None
    role: str | None = None
    time: str | int | float | None = None
    id: str | int | None = None
    metadata: Any = None


class AddIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    records: list[RecordIn | str] = Field(min_length=1, max_length=MAX_RECORDS_PER_CALL)
    request_id: str | None = Field(default=None, min_length=1, max_length=512)
    namespace: str | None = Field(default=None, min_length=1, max_length=512)


class QueryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=20_000)
    units: int | None = Field(default=None, ge=1, le=MAX_UNITS)
    namespace: str | None = Field(default=None, min_length=1, max_length=512)


def _record(value: RecordIn | str) -> Any:
    if isinstance(value, str):
        return value
    return {k: v for k, v in value.model_dump().items() if v is not None}


# --- middleware: token, body size, JSON whatever the content type ------------------------


class Guard:
    """Pure ASGI, in front of everything: 401 without the token, 413 over the body limit, and every
    body read as JSON (``curl -d`` sends ``application/x-www-form-urlencoded``)."""

    def __init__(self, app: Any, token: str | None, max_body: int) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.token and scope["path"] not in OPEN_PATHS and not self._authorised(headers):
            await _send_json(
                send, 401, {"detail": "missing or wrong bearer token"}, {"www-authenticate": "Bearer"}
            )
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            await _send_json(send, 413, {"detail": f"body over the limit of {self.max_body:,} bytes"})
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        # Read the whole body first (it is bounded), so an oversized one never reaches a route.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body:
                await _send_json(send, 413, {"detail": f"body over the limit of {self.max_body:,} bytes"})
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        scope = dict(scope)
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-type"]
        scope["headers"].append((b"content-type", b"application/json"))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _authorised(self, headers: dict[str, str]) -> bool:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(given.strip(), self.token or "")


async def _send_json(
    send: Send, status: int, body: dict[str, Any], extra: dict[str, str] | None = None
) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


# --- the app --------------------------------------------------------------------------


def status_of(exc: MusterError) -> int:
    """The one place typed errors become HTTP statuses."""
    if isinstance(exc, InputError):
        return 422
    if isinstance(exc, (StoreError, ResourceMissing, MissingExtra)):
        return 503
    return 400


def create_app(backend: Backend, token: str | None = None, max_body: int = DEFAULT_MAX_BODY) -> Guard:
    """The ASGI app: the FastAPI routes (``.app``) behind the :class:`Guard`."""
    app = FastAPI(
        title="MUSTER memory",
        version=__version__,
        description="Long-term memory that keeps every word: add records, read contexts.",
    )

    @app.exception_handler(MusterError)
    async def muster_error(request: Request, exc: MusterError) -> JSONResponse:
        return JSONResponse(
            status_code=status_of(exc), content={"detail": str(exc), "error": type(exc).__name__}
        )

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/add")
    def add(body: AddIn) -> dict[str, Any]:
        """Add records in one transaction (no model call); a repeated request_id is applied once."""
        return backend.remember([_record(r) for r in body.records], body.request_id, body.namespace)

    @app.post("/v1/context")
    def context(body: QueryIn) -> dict[str, Any]:
        """The assembled context for a query: verbatim, grouped by parent, in stored order."""
        return backend.recall(body.query, body.units, body.namespace)

    @app.post("/v1/search")
    def search(body: QueryIn) -> dict[str, Any]:
        """The selected passages, best first, with ids and provenance; no assembly."""
        return backend.search(body.query, body.units, body.namespace)

    @app.get("/v1/info")
    def info(namespace: str | None = Query(default=None, min_length=1, max_length=512)) -> dict[str, Any]:
        """Namespaces, head, plan and models of the store."""
        return backend.info(namespace)

    return Guard(app, token, max_body)


def serve(
    backend: Backend,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> None:
    import uvicorn

    uvicorn.run(create_app(backend, token, max_body), host=host, port=port, log_level="warning")
