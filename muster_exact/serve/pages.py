"""The pages ``muster http`` serves to a browser: the inspector at ``/`` and the API reference at
``/docs``, static files shipped in the package (``muster_exact/serve/inspector/``: HTML, one
stylesheet, plain scripts; nothing is built and nothing is fetched from another host).

They are open paths (no token, :mod:`muster_exact.serve.guard`): a browser's navigation cannot
send an ``Authorization`` header, and the files hold no data. Every datum is fetched by the page's
script from the guarded routes, with the token the page asked for (kept in the tab's
``sessionStorage``). The Host check still applies to them (a rebound DNS name gets 421), and each
answer forbids framing and every script, style or connection that is not this server's own
(``Content-Security-Policy``).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI
    from fastapi.responses import Response

FOLDER = "inspector"  # beside this module, shipped in the wheel (pyproject's package-data)
_HTML, _JS, _CSS = "text/html; charset=utf-8", "text/javascript; charset=utf-8", "text/css; charset=utf-8"

# path -> (file in FOLDER, media type)
PAGES = {
    "/": ("index.html", _HTML),
    "/docs": ("docs.html", _HTML),
    "/inspector/common.js": ("common.js", _JS),
    "/inspector/inspector.js": ("inspector.js", _JS),
    "/inspector/docs.js": ("docs.js", _JS),
    "/inspector/inspector.css": ("inspector.css", _CSS),
}
OPEN_PATHS = tuple(PAGES)

HEADERS = {
    # Only this server's own scripts, styles and API; no plugin, no frame, no form posted elsewhere.
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",  # a page elsewhere cannot frame the inspector and steer its clicks
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",  # a new version's page after an upgrade, not a cached one
}


def page_bytes(name: str) -> bytes:
    """A file of the pages, as shipped."""
    return resources.files(__package__).joinpath(FOLDER, name).read_bytes()


def add_pages(app: FastAPI) -> None:
    """The pages' routes (GET and HEAD, left out of the OpenAPI document): each file read once, here."""
    for path, (name, media) in PAGES.items():
        page = _answer(page_bytes(name), media)
        app.add_api_route(path, page, methods=["GET", "HEAD"], include_in_schema=False)


def _answer(body: bytes, media: str) -> Callable[[], Response]:
    from fastapi.responses import Response

    def page() -> Response:
        return Response(body, media_type=media, headers=HEADERS)

    return page
