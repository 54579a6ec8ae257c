"""One finished contexts run of the tiny MemoryAgentBench store, shared by the run-file tests.

The run is built once per session (it loads the cpu-small embedder); each test copies it into a
results folder of its own (``fresh``) and damages or locks that copy, so tests stay independent
and every other harness call there refuses or resumes in a few seconds, without a model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.tiny_data import write_manifest

BASE = "base"


def harness_args(root: Path, results: str, *overrides: str) -> list[str]:
    """``python -m harness`` on the tiny FactConsolidation store, writing under ``root/results``."""
    return [
        sys.executable,
        "-m",
        "harness",
        "benchmark=mab",
        "preset=mab.u10",
        "models=cpu-small",
        f"paths.data_root={root / 'data'}",
        f"paths.manifests={root / 'manifests'}",
        f"paths.results={root / results}",
        f"paths.tables={root / results / 'tables'}",
        f"paths.llm_cache={root / results / 'llm.sqlite'}",
        "stage.progress=false",
        *overrides,
    ]


def harness_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}  # the app sets it itself
    env["MUSTER_TEST_KEY"] = "test-key"
    return env


def run_harness(root: Path, results: str, *overrides: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        harness_args(root, results, *overrides),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=harness_env(),
        timeout=900,
    )


def reader(base_url: str, model: str) -> list[str]:
    """A reader on a loopback OpenAI-compatible server (this repo's prompts, one request at a time)."""
    return [
        f"reader.base_url={base_url}",
        f"reader.model={model}",
        "reader.api_key_env=MUSTER_TEST_KEY",
        "reader.prompts=muster",
        "reader.concurrency=1",
        "reader.max_retries=3",
    ]


def contexts_path(root: Path, results: str) -> Path:
    found = sorted((root / results / "mab/mab.u10/cpu-small/muster").glob("*/contexts.jsonl"))
    assert len(found) == 1, found
    return found[0]


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused run prints: exit 2, no traceback, nothing else on stderr."""
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="session")
def mab_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root, its manifest and a finished contexts run (texts saved: answering needs no model)."""
    root = tmp_path_factory.mktemp("mab-run")
    write_manifest(root / "data", root / "manifests")
    shutil.copyfile(REPO / "manifests" / "scorers.json", root / "manifests" / "scorers.json")
    done = run_harness(root, BASE, "stage.save_text=true")
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def fresh(root: Path, results: str) -> str:
    """A copy of the finished run under ``root/results``, for one test to damage."""
    shutil.copytree(root / BASE, root / results)
    return results
