"""`muster http --declared-records`: POST /v1/declared/context on the real server (127.0.0.1, a
free port), behind the same guard as every route; 404 without the flag."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.test_http import JSON, TOKEN, Server, records_in

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.slow

RECORDS = [
    "Step 1: The CEO of Acme is Ann Lee.",
    "#2 The weather in Oslo is cold.",
    {"speaker": "robot", "text": "(3) The capital of Peru is Lima.", "id": "p"},
    "The color of the car is red.",
    "Step 4: The CEO of Acme is Bo Li.",
]
ROUTE = "/v1/declared/context"
BODY = {"format": "serial", "records": RECORDS, "query": "Who is the CEO of Acme?"}


@pytest.fixture(scope="module")
def declaring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    store = tmp_path_factory.mktemp("declared") / "d.muster"
    running = Server(store, "--declared-records", "--token", TOKEN, "--max-body", "65536")
    yield running, store
    running.stop()


def _post(server: Server, body: object, **headers: str) -> httpx.Response:
    sent = {**JSON, "Authorization": f"Bearer {TOKEN}", **headers}
    return httpx.post(f"{server.url}{ROUTE}", json=body, headers=sent, timeout=120)


def test_the_context_of_a_declared_array_keeps_every_version(declaring: tuple[Server, Path]) -> None:
    server, store = declaring
    answer = _post(server, BODY)
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert "The CEO of Acme is Ann Lee." in got["context"] and "The CEO of Acme is Bo Li." in got["context"]
    assert "Step " not in got["context"] and "#2" not in got["context"]
    assert got["format"] == "serial" and "p" in got["records"]
    assert got["tokens"] > 0 and got["query"] == BODY["query"]
    assert records_in(store) == 0  # built in memory: nothing is stored


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**BODY, "format": "csv"}, "unknown declared record format 'csv'"),
        ({**BODY, "records": "Step 1: x"}, "'records' is a list of records, not str"),
        ({**BODY, "records": ["Step 1:  "]}, "record 0 is only a serial prefix"),
        ({**BODY, "records": ["x", {"speaker": "a"}]}, "record 1 has no text"),
        ({**BODY, "records": ["x", {"text": "y", "id": []}]}, "record 1: 'id' must be a string"),
        ({**BODY, "units": "5"}, "units must be a whole number"),
    ],
)
def test_bad_input_is_422_with_the_librarys_message(
    declaring: tuple[Server, Path], body: dict[str, object], message: str
) -> None:
    answer = _post(declaring[0], body)
    assert answer.status_code == 422, answer.text
    assert message in answer.json()["detail"]
    assert answer.json()["error"] in ("DeclaredError", "InputError")


def test_unknown_and_missing_fields_are_422(declaring: tuple[Server, Path]) -> None:
    assert _post(declaring[0], {**BODY, "namespace": "x"}).status_code == 422
    assert _post(declaring[0], {"format": "serial", "records": RECORDS}).status_code == 422


def test_the_guard_stands_in_front_of_it(declaring: tuple[Server, Path]) -> None:
    server = declaring[0]
    url = f"{server.url}{ROUTE}"
    assert httpx.post(url, json=BODY, headers=JSON, timeout=30).status_code == 401  # no token
    assert _post(server, BODY, Host="evil.example").status_code == 421
    assert _post(server, BODY, Origin="http://evil.example").status_code == 403
    own = f"http://127.0.0.1:{server.port}"
    assert _post(server, BODY, **{"Content-Type": "text/plain", "Origin": own}).status_code == 415
    big = {**BODY, "records": ["Step 1: " + "x" * 70_000]}
    assert _post(server, big).status_code == 413


def test_without_the_flag_the_route_is_not_there(tmp_path: Path) -> None:
    server = Server(tmp_path / "plain.muster")
    try:
        answer = httpx.post(f"{server.url}{ROUTE}", json=BODY, headers=JSON, timeout=30)
        assert answer.status_code == 404
        assert ROUTE not in httpx.get(f"{server.url}/openapi.json", timeout=30).json()["paths"]
    finally:
        server.stop()
