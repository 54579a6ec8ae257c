"""A fresh `muster http` under concurrent first reads (issue 32, item 1).

The server loads the default namespace's models before it listens, but a namespace embedded with
another model loads that model on its first read. Four namespaces embedded with one torch model
(a sentence-transformers folder the numpy path does not run) are read at the same moment on a
fresh server: the model is built once and all four answer 200 (before, the threads built it at
once and some answered 500, "Cannot copy out of meta tensor"). A namespace whose model's files
are damaged answers 503 naming the cause, on every read, and the others keep working.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_exact import models
from muster_exact.models.numpy_bert import runs_on_numpy
from muster_exact.store import Store
from tests.conftest import no_hub_env
from tests.security.test_mcp_stdio import RawClient, tool_call
from tests.serve.test_http import Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("sentence_transformers")
pytestmark = pytest.mark.slow

NAMESPACES = ["n1", "n2", "n3", "n4"]


def torch_model(folder: Path) -> Path:
    """The packaged MiniLM with max pooling: a sentence-transformers model that loads with torch
    (the numpy embedder runs mean pooling only)."""
    packaged = models.resolve(models.ModelRef(models.PACKAGED_MINILM))
    shutil.copytree(packaged, folder, symlinks=True, ignore=shutil.ignore_patterns("1_Pooling"))
    (folder / "1_Pooling").mkdir()
    pooling = json.loads((packaged / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    assert not runs_on_numpy(folder)
    return folder


def damaged_model(folder: Path, model: Path) -> Path:
    """``model`` with its weights cut off after 4 KiB."""
    shutil.copytree(model, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])
    return folder


def embedded_with(store: Path, namespace: str, model: Path) -> None:
    """A namespace with records, recorded as embedded with ``model`` (what its first read with
    ``--models DIR`` records), so a server started without --models reads it with that model."""
    with Store.open(store, namespace) as opened:
        opened.add([f"The {namespace} key is in drawer {i}." for i in range(6)])
    db = sqlite3.connect(store)
    with db:
        db.execute("INSERT INTO meta VALUES (?, ?)", (f"embedder:{namespace}", str(model)))
    db.close()


@pytest.fixture(scope="module")
def cold_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The store, and the environment its servers run in: no --models, so each namespace is
    read with its own model."""
    root = tmp_path_factory.mktemp("cold").resolve()
    store, model = root / "agent.muster", torch_model(root / "model")
    for namespace in NAMESPACES:
        embedded_with(store, namespace, model)
    embedded_with(store, "broken", damaged_model(root / "broken-model", model))
    return store, {**no_hub_env(root), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def cold(cold_store: tuple[Path, dict[str, str]]) -> Iterator[Server]:
    store, env = cold_store
    running = Server(store, env=env)
    yield running
    running.stop()


def read(server: Server, namespace: str) -> httpx.Response:
    body = {"query": "Where is the key?", "namespace": namespace}
    return httpx.post(f"{server.url}/v1/context", json=body, timeout=300)


def test_four_simultaneous_first_reads_of_a_cold_model_all_answer(cold: Server) -> None:
    barrier = threading.Barrier(len(NAMESPACES))
    replies: dict[str, Any] = {}

    def first_read(namespace: str) -> None:
        barrier.wait()
        try:
            replies[namespace] = read(cold, namespace)
        except httpx.HTTPError as exc:  # a reset connection: recorded, and the test fails on it
            replies[namespace] = exc

    threads = [threading.Thread(target=first_read, args=(n,)) for n in NAMESPACES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    got = {n: getattr(r, "status_code", r) for n, r in replies.items()}
    assert got == dict.fromkeys(NAMESPACES, 200), (got, [getattr(r, "text", "") for r in replies.values()])
    assert all("drawer" in replies[n].json()["context"] for n in NAMESPACES)
    assert "Traceback" not in cold.stderr


def test_a_model_that_cannot_load_is_a_503_naming_the_cause(cold: Server) -> None:
    for _ in range(2):  # not remembered as a success, nor as a hang: the next read tries again
        reply = read(cold, "broken")
        assert reply.status_code == 503, reply.text
        body = reply.json()
        assert body["error"] == "ModelLoadError", body
        assert "cannot load model" in body["detail"] and "SafetensorError" in body["detail"], body
    assert read(cold, "n1").status_code == 200
    assert "Traceback" not in cold.stderr


def test_over_mcp_a_model_that_cannot_load_is_a_tool_error_naming_the_cause(
    cold_store: tuple[Path, dict[str, str]],
) -> None:
    store, env = cold_store
    client = RawClient(store, env=env)
    try:
        client.send(tool_call(1, "recall", '{"query":"Where is the key?","namespace":"broken"}'))
        # A cold model load, failing: as long as the HTTP test's read may take on a busy machine
        # (20 s was passed there beside three other jobs); a hang still fails, later.
        reply = client.reply(timeout=300)
    finally:
        client.close()
    assert reply is not None and reply["result"]["isError"] is True, reply
    text = reply["result"]["content"][0]["text"]
    assert text.startswith("ModelLoadError: cannot load model") and "SafetensorError" in text, text
