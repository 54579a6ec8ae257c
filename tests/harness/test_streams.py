"""What the harness writes where (issue 53): a contexts run's log lines (``loading embedder``,
``built ...``, the stage's counts) and its progress go to stderr; stdout, which users pipe, holds
nothing for a contexts run and only the tables where a stage prints them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.harness.conftest import harness_args, harness_env


def test_a_contexts_run_writes_nothing_to_stdout(mab_run: Path) -> None:
    # A new process, as a user runs it: Hydra's own logging config, not the tests' stand-in.
    args = harness_args(mab_run, "streams", "stage.progress=true")
    done = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=harness_env(), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == ""
    assert "loading embedder packaged:all-MiniLM-L6-v2 (numpy, float64)" in done.stderr  # what runs
    assert "questions written" in done.stderr
