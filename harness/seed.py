"""Exact mode runs under PYTHONHASHSEED=0: the harness re-executes itself when it is unset.

Kept apart from ``harness.app`` so that ``python -m harness`` re-executes before it imports
Hydra or anything else (a start-up paid once, not twice).
"""

from __future__ import annotations

import os
import sys


def ensure_hash_seed() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, "-m", "harness", *sys.argv[1:]], env)
