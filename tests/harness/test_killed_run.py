"""A run killed mid-way keeps every finished question's timing, as it keeps its context (issue 32,
item 12).

The real harness runs the contexts stage and is killed with SIGKILL while it reads the third
question (a ``sitecustomize`` on its path wraps ``harness.systems.context``: the kill comes from
inside, at a known point, not after a sleep). Before, ``contexts.jsonl`` was flushed per line and
``timings.jsonl`` was not, so the killed run's timings were lost while its contexts survived.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.conftest import harness_args, harness_env
from tests.harness.tiny_data import write_manifest

pytestmark = pytest.mark.slow

KILL_AT = 3  # the call of systems.context that kills the run: two questions are finished
KILLER = f"""
import os, signal
import harness.systems as systems

_context, _calls = systems.context, []


def context(*args, **kwargs):
    _calls.append(1)
    if len(_calls) == {KILL_AT}:
        os.kill(os.getpid(), signal.SIGKILL)
    return _context(*args, **kwargs)


systems.context = context
"""


def test_a_killed_run_keeps_the_timing_of_every_question_it_finished(tmp_path: Path) -> None:
    write_manifest(tmp_path / "data", tmp_path / "manifests")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(KILLER)
    path = os.pathsep.join([str(tmp_path / "site"), str(REPO), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run(
        harness_args(tmp_path, "runs"),
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**harness_env(), "PYTHONPATH": path},
        timeout=900,
    )
    assert result.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), result.stderr[-3000:]
    (contexts,) = (tmp_path / "runs").glob("**/contexts.jsonl")
    finished = [json.loads(line)["qid"] for line in contexts.read_text().splitlines()]
    assert len(finished) == KILL_AT - 1, finished
    timings = [json.loads(line) for line in (contexts.parent / "timings.jsonl").read_text().splitlines()]
    assert [t["qid"] for t in timings if "qid" in t] == finished, timings
    assert [t for t in timings if "build_s" in t], timings  # the store's build time too
