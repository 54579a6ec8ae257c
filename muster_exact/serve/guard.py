"""The guard in front of the HTTP API (:mod:`muster_exact.serve.http`): what only a browser tricked
by a web page sends is refused before any route runs (a foreign ``Host``: 421, a foreign
``Origin``: 403, a page's write that is not JSON: 415), and so is a request without the token
(401) or over the body limit (413). ``docs/security.md`` is the threat model."""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from muster_exact.core.errors import InputError
from muster_exact.serve import pages
from muster_exact.serve.backend import TOKEN_ENV, ServeError
from muster_exact.serve.body import NOT_JSON_BODY, body_json, check_query

log = logging.getLogger(__name__)

# No token on these: the health and readiness checks (a load balancer holds no token; they show no
# data, and a reason never names the store), and the pages a browser navigates to (no data either).
OPEN_PATHS = ("/healthz", "/readyz", *pages.OPEN_PATHS)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
JSON = "application/json"
NOT_JSON = "send the body as JSON, with the header 'Content-Type: application/json'"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Guard:
    """Pure ASGI, in front of everything, answering before any route runs: 421 for a Host that is
    not this server's, 403 for a cross-origin request, 401 without the token, 413 over the body
    limit, 415 for a write whose body is not JSON (by its type from a page, by its bytes from a
    program: :func:`_as_json`)."""

    def __init__(
        self,
        app: Any,
        token: str | None,
        max_body: int,
        hosts: Iterable[str] = (),
        origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.token = None if token is None else check_token(token, "the token").encode("ascii")
        self.max_body = check_max_body(max_body)
        self.hosts = {h.lower() for h in (*LOCAL_HOSTS, *hosts)}
        self.origins = {o.lower().rstrip("/") for o in origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.lower(), value)  # the first of a repeated header
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _send_json(send, *refusal)
            return
        try:
            check_query(scope.get("query_string", b""))
        except InputError as exc:
            await _send_json(send, 422, str(exc), error="InputError")
            return
        if scope["method"] not in WRITE_METHODS:
            await self.app(scope, receive, send)
            return
        body = await self._body(receive, send)
        if body is None:
            return
        try:
            value = body_json(body)
        except InputError as exc:  # JSON, but not as Python's reader takes it: named here
            await _send_json(send, 422, str(exc), error="InputError")
            return
        as_json = _as_json(scope, headers, value)
        if as_json is None:
            await _send_json(send, 415, NOT_JSON)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(as_json, replay, send)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str, dict[str, str]] | None:
        """Why this request is refused before it is read (status, message, extra headers), or None."""
        host = headers.get(b"host", b"").decode("latin-1")
        if _hostname(host) not in self.hosts:
            return 421, f"Host {host!r} is not a name of this server; start it with --allow-host NAME", {}
        origin = headers.get(b"origin")
        if origin is not None and not self._same_or_allowed(origin.decode("latin-1"), host):
            return (
                403,
                f"cross-origin request from {origin.decode('latin-1')!r} refused; "
                "start the server with --allow-origin ORIGIN to allow it",
                {},
            )
        if self.token and scope["path"] not in OPEN_PATHS and not self._authorised(headers):
            return 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"}
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body:
            return 413, f"body over the limit of {self.max_body:,} bytes", {}
        if scope["method"] in WRITE_METHODS and b"origin" in headers and _media_type(headers) != JSON:
            return 415, NOT_JSON, {}  # before the body is read: a page's form never reaches a route
        return None

    def _same_or_allowed(self, origin: str, host: str) -> bool:
        origin = origin.lower().rstrip("/")
        return origin == f"http://{host.lower()}" or origin in self.origins

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        # Bytes, not text: a header may carry any byte, and compare_digest takes only ASCII text.
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), self.token or b"")

    async def _body(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body (it is bounded), so an oversized one never reaches a route; None when the
        request was answered (413) or the client went away."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body:
                await _send_json(send, 413, f"body over the limit of {self.max_body:,} bytes")
                return None
            if not message.get("more_body", False):
                return b"".join(chunks)


def _hostname(host: str) -> str:
    """The name in a Host header, without its port ("[::1]:8765" -> "[::1]")."""
    host = host.strip().lower()
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and (not name.startswith("[") or name.endswith("]")):
        return name
    return host


def _media_type(headers: dict[bytes, bytes]) -> str:
    return headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()


def _as_json(scope: Scope, headers: dict[bytes, bytes], value: Any) -> Scope | None:
    """The write as the routes read it: as sent when it says JSON; from a program (no ``Origin``:
    a page's write always has one, and :meth:`Guard._refusal` checked it) with a body that parses
    as JSON (``value``, from :func:`body_json`), the same request marked ``application/json``;
    None (415) when the body is not JSON."""
    if _media_type(headers) == JSON:
        return scope
    if value is NOT_JSON_BODY:
        return None
    marked = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-type"]
    return {**scope, "headers": [*marked, (b"content-type", JSON.encode())]}


def token_of(given: str | None) -> str | None:
    """The server's token: ``--token`` when given (with a warning: every user of the machine can
    read a command line, with ps), else ``$MUSTER_HTTP_TOKEN``, else none. Set but empty is
    refused, not read as none: a token emptied by mistake must not open the server."""
    if given is not None:
        check_token(given, "--token")
        log.warning("--token is visible to every user of this machine (ps); set $%s instead", TOKEN_ENV)
        return given
    from_env = os.environ.get(TOKEN_ENV)
    if from_env == "":
        raise ServeError(f"${TOKEN_ENV} is set but empty; set a token, or unset it to serve without one")
    return None if from_env is None else check_token(from_env, f"${TOKEN_ENV}")


def check_max_body(max_body: int) -> int:
    """A body limit some body fits (at least a byte); refused at start-up, not with every POST."""
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        raise ServeError(f"--max-body must be a number of bytes above 0, not {max_body!r}")
    return max_body


def check_token(token: str, source: str) -> str:
    """A bearer token goes in an HTTP header: printable ASCII, no spaces. Refused at start-up."""
    if not token or not all("!" <= c <= "~" for c in token):
        raise ServeError(
            f"{source} must be printable ASCII without spaces (it is sent in an HTTP header); choose another"
        )
    return token


async def _send_json(
    send: Send, status: int, detail: str, extra: dict[str, str] | None = None, *, error: str | None = None
) -> None:
    data = json.dumps({"detail": detail} | ({} if error is None else {"error": error})).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
