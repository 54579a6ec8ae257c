"""The harness as the stage tests run it, and one finished run the run-file tests share.

:func:`run` is ``python -m harness ARGS`` in this process (Hydra's compose API on the same
``conf/``, the same choice check, config check and stage, a typed error as the one line and exit
code the app gives), so a stage test pays for no interpreter, no import and no model load, and
stores built by one run serve the next. It falls back to a new process where this one cannot
stand in for it: a multirun (``-m``), or a test process not running under PYTHONHASHSEED=0
(``make test`` sets it, as the app does), since a run record states the seed.

The shared run is built once per session (it loads the cpu-small embedder); each test copies it
into a results folder of its own (``fresh``) and damages or locks that copy, so tests stay
independent and every other harness call there refuses or resumes in a few seconds, without a
model.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

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
    return run(harness_args(root, results, *overrides)[3:], harness_env())


def run(args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m harness *args`` with ``env`` as its environment: in this process where it can
    be (the module docstring), else in a new one."""
    if "-m" in args or "--multirun" in args or os.environ.get("PYTHONHASHSEED") != "0":
        command = [sys.executable, "-m", "harness", *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=dict(env), timeout=900)
    out, err = io.StringIO(), io.StringIO()
    with _environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = _in_process(args)
    return subprocess.CompletedProcess(["harness", *args], code, out.getvalue(), err.getvalue())


def _in_process(args: list[str]) -> int:
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    from harness.app import STAGES, check_choices
    from harness.checks import check
    from harness.config import register
    from harness.registries import CONF
    from muster_exact.core.errors import MusterError

    try:
        check_choices(args)
        register()
        with initialize_config_dir(version_base="1.3", config_dir=str(CONF), job_name="harness"):
            cfg = compose("config", overrides=args, return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)  # the run record reads the overrides from it
        log_format = cfg.hydra.job_logging.formatters.simple.format
        log_stream = {"ext://sys.stdout": sys.stdout, "ext://sys.stderr": sys.stderr}[
            cfg.hydra.job_logging.handlers.console.stream
        ]
        with open_dict(cfg):
            del cfg["hydra"]
        with _logging_as_the_app(log_format, log_stream):
            check(cfg)
            STAGES.get(cfg.stage.name)(cfg, REPO)
    except MusterError as exc:  # as harness.app answers it: one line, the error's exit code
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


@contextlib.contextmanager
def _logging_as_the_app(log_format: str, stream: Any) -> Iterator[None]:
    """The app's log lines where its Hydra logging config (``conf/config.yaml``'s
    ``hydra.job_logging``) writes them (stderr), for the block."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(log_format))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` as this process's environment for the block (PYTHONHASHSEED kept: it is this
    process's own), then the old one back."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({**env, "PYTHONHASHSEED": saved["PYTHONHASHSEED"]})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


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
