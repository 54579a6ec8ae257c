"""Mem0, a memory an LLM writes, as a peer of the harness (issue 56; docs/peers.md).

The real adapter (``scripts/peers/run_mem0.py``) in the real Mem0 venv (``make peer-mem0``: CPU
torch, mem0ai, the packaged MiniLM weights), run by ``python -m harness system=mem0`` on the tiny
LoCoMo-shaped stores. The one double is the LLM: the loopback OpenAI-compatible server, which
answers Mem0's extraction with one memory per message, built from that message's words. No number
of Mem0 on a benchmark is measured here or anywhere in the project.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.systems import external
from tests.conftest import REPO
from tests.harness.fake_llm import Behaviour, FakeLLM
from tests.harness.test_peers import contexts, harness, tiny  # noqa: F401 (the module's fixture)

pytestmark = pytest.mark.slow

PYTHON = REPO / ".venv-peers" / "mem0" / "bin" / "python"
NEW_MESSAGE = re.compile(r"## New Messages\n(.*?)\n\n## Observation Date", re.S)
ADAPTERS = str(REPO / "scripts" / "peers")


@pytest.fixture(scope="module")
def mem0_python() -> Path:
    if not PYTHON.is_file():
        if os.environ.get("MUSTER_MEM0_REQUIRED"):
            pytest.fail(f"no Mem0 venv at {PYTHON.parent.parent}: `make peer-mem0` builds it")
        pytest.skip("no Mem0 venv: `make peer-mem0` builds it (`make test` does)")
    return PYTHON


def remembered(body: dict[str, Any]) -> dict[str, Any]:
    """Mem0's extraction answered as an LLM might: one memory per new message, in other words."""
    prompt = body["messages"][-1]["content"]
    found = NEW_MESSAGE.search(prompt)
    if found is None:
        return {"memory": []}
    said = found.group(1).strip().removeprefix("user:").strip()
    words = said.split("] ", 1)[-1]  # the record's words after MUSTER's header
    return {"memory": [{"text": f"Remembered: {words}"}]}


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(Behaviour(json_reply=remembered)) as fake:
        yield fake


def mem0(tiny: Path, llm: FakeLLM, *overrides: str, **env: str) -> Any:  # noqa: F811
    settings = {
        "MUSTER_PEER_ADAPTERS": ADAPTERS,
        "MUSTER_PEER_PYTHON_MEM0": str(PYTHON),
        "MUSTER_MEM0_BASE_URL": llm.base_url,
        "MUSTER_MEM0_API_KEY": "test-key",
        "MUSTER_MEM0_MODEL": "fake-mem0",
        **env,
    }
    return harness(tiny, "locomo", "system=mem0", *overrides, **settings)


def test_mem0_runs_through_the_harness_on_memories_its_llm_wrote(
    tiny: Path,  # noqa: F811
    llm: FakeLLM,
    mem0_python: Path,
) -> None:
    native = harness(tiny, "locomo", "system=muster_native", "stage.save_text=true")
    assert native.returncode == 0, native.stderr[-3000:]
    done = mem0(tiny, llm, "stage.save_text=true")
    assert done.returncode == 0, done.stderr[-3000:]
    ours = {line["qid"]: line for line in contexts(tiny, "locomo", "muster_native")}
    theirs = contexts(tiny, "locomo", "mem0")
    assert theirs and len(theirs) == len(ours)
    # Mem0 asked the LLM once per record to write its memories, with the model it was given.
    extractions = [e for e in llm.log if e.answered and e.body.get("model") == "fake-mem0"]
    assert len(extractions) == records_in(tiny, {line["store"] for line in theirs})
    for line in theirs:
        assert line["budget"] == ours[line["qid"]]["tokens"]
        assert line["sha256"] == hashlib.sha256(line["text"].encode()).hexdigest()
        assert line["records"], line["qid"]
        # What is shown is what the LLM wrote, not the stored record.
        shown = line["text"].split("\n\n")
        assert all(memory.startswith("Remembered: ") for memory in shown)
        assert len(shown) == len(line["records"])
    (record_path,) = sorted((tiny / "runs" / "locomo").glob("*/*/mem0/*/run.json"))
    recorded = json.loads(record_path.read_text())["peer"]
    assert recorded["versions"]["mem0ai"] == "2.2.1"
    assert recorded["adapter_sha256"] == hashlib.sha256(Path(recorded["adapter"]).read_bytes()).hexdigest()


def test_mem0_without_an_endpoint_is_one_clear_error(tiny: Path, llm: FakeLLM, mem0_python: Path) -> None:  # noqa: F811
    home = str(tiny / "no-endpoint")
    failed = mem0(tiny, llm, runs="no-endpoint", MUSTER_MEM0_BASE_URL="", MUSTER_HOME=home)
    assert failed.returncode == 2, failed.stderr[-2000:]
    assert "the peer 'mem0' failed" in failed.stderr and "set MUSTER_MEM0_BASE_URL" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_make_peers_leaves_out_the_peers_that_ask_an_llm() -> None:
    assert "mem0" in external.names() and external.ASKS_LLM == ("mem0",)
    shown = subprocess.run(
        [sys.executable, "scripts/peers.py", "--help"], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    default = " ".join(shown.split()).split("(default: ", 1)[1].split(")", 1)[0]
    assert default.split() == [p for p in external.names() if p != "mem0"]


def records_in(root: Path, stores: set[str]) -> int:
    from harness import benchmarks
    from harness.config import BenchmarkConfig
    from harness.data import DataRoot

    data = DataRoot.open(root / "data", root / "manifests" / "data.json")
    found = benchmarks.load("locomo").stores(data, BenchmarkConfig(name="locomo"))
    return sum(len(external.store_input(s)["records"]) for s in found if s.name in stores)
