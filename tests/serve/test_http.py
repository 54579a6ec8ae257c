"""`muster http`: the real server on 127.0.0.1 (a random free port), driven with httpx and curl."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from muster_exact.store import Store
from tests.conftest import REPO, no_hub_env, torch_blocked_env

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.slow

TOKEN = "s3cret-token"
JSON = {"Content-Type": "application/json"}


def readme_curl_lines() -> list[str]:
    """The curl examples of the README, as a reader copies them."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip().startswith("curl ")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``muster http`` in a subprocess on a free port of 127.0.0.1, ready when /healthz answers."""

    def __init__(
        self,
        store: Path | None,
        *extra: str,
        preexec_fn: Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server)
        env = dict(env) if env is not None else {**os.environ, "MUSTER_MODELS": "cpu-small"}
        env.pop("MUSTER_HTTP_TOKEN", None)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "muster_exact",
                "http",
                *(("--store", str(store)) if store is not None else ()),  # None: $MUSTER_STORE
                "--port",
                str(self.port),
                *extra,
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,  # a file, not a pipe: a chatty server never blocks on a full pipe
            preexec_fn=preexec_fn,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start: {self.stderr}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    @property
    def stderr(self) -> str:
        """What the server has logged so far."""
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    store = tmp_path / "robot.muster"
    running = Server(store)
    yield running, store
    running.stop()


@pytest.fixture
def fresh_user_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """``muster http`` as the README starts it: no --models, no $MUSTER_MODELS, no model hub."""
    store = tmp_path / "robot.muster"
    running = Server(store, env=no_hub_env(tmp_path))
    yield running, store
    running.stop()


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    store = tmp_path / "guarded.muster"
    running = Server(store, "--token", TOKEN, "--max-body", "4096")
    yield running, store
    running.stop()


def records_in(store: Path) -> int:
    with Store.open(store) as opened:
        return opened.head().records


def test_the_seed_readme_curl_examples_work_as_written(fresh_user_server: tuple[Server, Path]) -> None:
    running, store = fresh_user_server
    examples = readme_curl_lines()
    assert len(examples) == 2 and all("Content-Type: application/json" in line for line in examples)
    if shutil.which("curl"):
        add, context = (
            shlex.split(line.replace("localhost:8765", f"localhost:{running.port}")) for line in examples
        )
        added = subprocess.run(add, capture_output=True, text=True, timeout=60)
        assert json.loads(added.stdout)["added"] == 1, added.stdout
        read = subprocess.run(context, capture_output=True, text=True, timeout=120)
        assert "Red mug on the kitchen table" in json.loads(read.stdout)["context"], read.stdout
    else:  # the same request without curl
        body = shlex.split(examples[0])[-1]
        assert httpx.post(f"{running.url}/v1/add", content=body, headers=JSON, timeout=60).status_code == 200
    reply = httpx.post(f"{running.url}/v1/context", json={"query": "Where is the red mug?"}, timeout=120)
    assert reply.status_code == 200
    assert "[2026-10-20T10:02] robot: Red mug on the kitchen table" in reply.json()["context"]
    search = httpx.post(f"{running.url}/v1/search", json={"query": "red mug", "units": 1}, timeout=60).json()
    assert search["passages"][0]["text"].endswith("Red mug on the kitchen table")
    info = httpx.get(f"{running.url}/v1/info", timeout=60).json()
    assert info["head"]["records"] == records_in(store) == 1
    # The default profile, auto, found no hub: the packaged CPU models, and it says so, once.
    assert info["models"]["name"] == "cpu-small" and "did not answer" in info["models"]["chosen_by"]
    assert running.stderr.count("models: cpu-small") == 1, running.stderr
    # No token, so any local process may ask: it learns neither the file's path nor other namespaces.
    assert "path" not in info and "namespaces" not in info and str(store.parent) not in json.dumps(info)
    openapi = httpx.get(f"{running.url}/openapi.json", timeout=10).json()
    assert {"/v1/add", "/v1/context", "/v1/search", "/v1/delete", "/v1/info", "/healthz"} <= set(
        openapi["paths"]
    )


def test_the_model_loads_at_start_and_requests_run_without_torch(tmp_path: Path) -> None:
    """Issue 29: the CPU profile's model is loaded before the server takes requests, said in one
    line with the time it took, and no request needs torch (importing it raises here)."""
    running = Server(tmp_path / "robot.muster", env={**no_hub_env(tmp_path), **torch_blocked_env(tmp_path)})
    try:
        loaded = [line for line in running.stderr.splitlines() if "before the first request" in line]
        assert len(loaded) == 1 and "loaded packaged:all-MiniLM-L6-v2 in " in loaded[0], running.stderr
        assert loaded[0].startswith("INFO muster_exact.cli: ")  # ordinary news, not a WARNING
        warned = [line for line in running.stderr.splitlines() if line.startswith("WARNING")]
        assert not warned, running.stderr
        added = httpx.post(
            f"{running.url}/v1/add", json={"records": ["The red mug is on the shelf."]}, timeout=60
        )
        assert added.status_code == 200, added.text
        reply = httpx.post(f"{running.url}/v1/context", json={"query": "Where is the mug?"}, timeout=60)
        assert reply.status_code == 200 and "The red mug is on the shelf." in reply.json()["context"]
        assert running.process.poll() is None and "Traceback" not in running.stderr, running.stderr
    finally:
        running.stop()


def test_a_bounded_mixed_load_loses_nothing(server: tuple[Server, Path]) -> None:
    running, store = server
    total, clients = 400, 16  # enough to interleave adds and reads; speed lives in make bench

    def one(i: int, client: httpx.Client) -> httpx.Response:
        if i % 2 == 0:
            body = {"records": [{"speaker": f"sensor-{i % 7}", "text": f"reading {i}: door {i % 5} is open"}]}
            return client.post(f"{running.url}/v1/add", json={**body, "request_id": f"load-{i}"})
        return client.post(f"{running.url}/v1/context", json={"query": f"Is door {i % 5} open?"})

    httpx.post(f"{running.url}/v1/add", json={"records": ["the first observation"]}, timeout=60)
    with httpx.Client(timeout=300) as client, ThreadPoolExecutor(max_workers=clients) as pool:
        replies = list(pool.map(lambda i: one(i, client), range(total)))
    # A refusal names its request and the server's reason: a 503 here once (of 400, beside a busy
    # study) left no trace of which of the server's reasons it was.
    refused = [(r.request.url.path, r.status_code, r.text[:300]) for r in replies if r.status_code != 200]
    assert not refused, (refused, running.stderr[-2000:])
    assert records_in(store) == 1 + total // 2  # every add counted, none lost, none doubled


def test_one_request_id_sent_concurrently_is_applied_once(server: tuple[Server, Path]) -> None:
    running, store = server
    body = {"records": ["a", "b", "c"], "request_id": "same-one"}
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(max_workers=16) as pool:
        replies = list(pool.map(lambda _: client.post(f"{running.url}/v1/add", json=body).json(), range(32)))
    assert sum(not r["replayed"] for r in replies) == 1 and len({tuple(r["ids"]) for r in replies}) == 1
    assert records_in(store) == 3


def test_token_size_limit_and_validation(guarded: tuple[Server, Path]) -> None:
    running, store = guarded
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.post(f"{running.url}/v1/add", json={"records": ["kept"]}, headers=auth).status_code == 200
    before = records_in(store)
    for method, path in (
        ("POST", "/v1/add"),
        ("POST", "/v1/context"),
        ("POST", "/v1/search"),
        ("POST", "/v1/delete"),
        ("GET", "/v1/info"),
        ("GET", "/openapi.json"),  # /docs is a page without data: open (tests/serve/test_inspect.py)
    ):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            body = {"records": ["x"], "query": "q", "ids": ["r1"]}
            reply = httpx.request(method, f"{running.url}{path}", json=body, headers=headers)
            assert reply.status_code == 401, (method, path, headers, reply.status_code)
    assert httpx.get(f"{running.url}/healthz").status_code == 200
    big = {"records": ["x" * 5000]}
    assert httpx.post(f"{running.url}/v1/add", json=big, headers=auth).status_code == 413
    cases = [
        (b"{not json", "json"),
        (json.dumps({"request_id": "r"}).encode(), "records"),
        (json.dumps({"records": "not a list"}).encode(), "records"),
        (json.dumps({"records": [{"speaker": "A"}]}).encode(), "text"),
        (json.dumps({"records": [{"text": 5}]}).encode(), "text"),
        (json.dumps({"records": ["ok"], "request_id": 7}).encode(), "request_id"),
    ]
    for body, field in cases:
        reply = httpx.post(f"{running.url}/v1/add", content=body, headers={**auth, **JSON})
        assert reply.status_code == 422, (body, reply.status_code)
        assert field in json.dumps(reply.json()["detail"]), (body, reply.text)
    for body, field in ((b"{}", "query"), (json.dumps({"query": "q", "units": 0}).encode(), "units")):
        reply = httpx.post(f"{running.url}/v1/context", content=body, headers={**auth, **JSON})
        assert reply.status_code == 422 and field in reply.text
    assert records_in(store) == before  # nothing written by any refused request


def test_schemathesis_finds_no_server_error(guarded: tuple[Server, Path]) -> None:
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    running, _ = guarded
    auth = {"Authorization": f"Bearer {TOKEN}"}
    httpx.post(f"{running.url}/v1/add", json={"records": ["something to find"]}, headers=auth)
    raw = httpx.get(f"{running.url}/openapi.json", headers=auth).json()
    schema = schemathesis.openapi.from_dict(raw)
    checked = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        @given(case=operation.as_strategy())
        def no_server_error(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call(base_url=running.url, headers=auth, timeout=120)
            assert response.status_code < 500, (
                case.path,
                case.body,
                response.status_code,
                response.text[:300],
            )

        no_server_error()
        checked += 1
    assert checked == 13  # every operation, PATCH, import and /readyz among them


def test_delete_by_ids_and_by_request_id(server: tuple[Server, Path]) -> None:
    running, store = server
    add = f"{running.url}/v1/add"
    httpx.post(add, json={"records": ["kept", {"id": "k2", "text": "gone"}]}, timeout=60).raise_for_status()
    batch = {"records": ["batch one", "batch two"], "request_id": "batch-1", "namespace": "user-7"}
    httpx.post(add, json=batch, timeout=60).raise_for_status()
    delete = f"{running.url}/v1/delete"
    by_id = httpx.post(delete, json={"ids": ["k2"]}, timeout=120)
    assert by_id.status_code == 200 and by_id.json()["deleted"] == ["k2"], by_id.text
    assert by_id.json()["head"]["records"] == 1 and by_id.json()["erase_pending"] is False
    by_request = httpx.post(delete, json={"request_id": "batch-1", "namespace": "user-7"}, timeout=120)
    assert by_request.status_code == 200 and len(by_request.json()["deleted"]) == 2, by_request.text
    # Nothing of that request is left, so a retry deletes nothing; an id no longer held is refused.
    again = httpx.post(delete, json={"request_id": "batch-1", "namespace": "user-7"}, timeout=120)
    assert again.status_code == 200 and again.json()["deleted"] == []
    missing = httpx.post(delete, json={"ids": ["k2"]}, timeout=60)
    assert missing.status_code == 422 and "no record 'k2'" in missing.json()["detail"]
    # A namespace never written is not created by a delete.
    ghost = httpx.post(delete, json={"request_id": "x", "namespace": "ghost"}, timeout=60)
    assert ghost.status_code == 200 and ghost.json()["deleted"] == []
    with Store.open(store) as opened:
        assert [r["text"] for r in opened.records()] == ["kept"] and "ghost" not in opened.namespaces()
