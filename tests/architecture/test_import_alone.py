"""Each module of the library and the harness imports alone, first, in a fresh interpreter: a
circle that only the usual import order hides (one module entered before its partner) fails here.
The static graph (tests/architecture/test_imports.py) finds circles; this shows each module is loadable
as the first thing a user or a launcher imports."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.import_graph import REPO, modules

ENTRY_POINTS = {"harness.__main__", "muster.__main__", "muster_exact.__main__"}  # running, not importing


def _import_alone(module: str) -> str | None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    if done.returncode == 0:
        return None
    return f"{module}: {(done.stderr.strip().splitlines() or ['(no message)'])[-1]}"


def test_each_module_imports_alone_in_a_fresh_interpreter() -> None:
    names = sorted(set(modules("muster_exact", "muster", "harness")) - ENTRY_POINTS)
    assert len(names) > 100
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        failed = [line for line in pool.map(_import_alone, names) if line]
    assert not failed, "modules that fail to import alone:\n" + "\n".join(failed)
