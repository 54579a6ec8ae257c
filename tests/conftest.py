from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def data_root() -> Path | None:
    """The benchmark data: $MUSTER_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get("MUSTER_DATA")
    root = Path(env) if env else REPO.parent / "shared" / "data"
    return root if root.is_dir() else None


@pytest.fixture(scope="session")
def data() -> Path:
    root = data_root()
    if root is None:
        pytest.skip("benchmark data not found (set MUSTER_DATA or place ../shared/data)")
    return root


def run_muster(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "muster_exact", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
