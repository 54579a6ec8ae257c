from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The throw-away PostgreSQL cluster: postgres_cluster (per process) and postgres_url (per test).
pytest_plugins = ["tests.postgres"]


def _threads_per_worker() -> None:
    """One share of the cores per pytest-xdist worker, before numpy or torch is loaded (they read
    these at load time; subprocesses inherit them). Each library otherwise starts one thread per
    core in every worker: two workers on two cores then run four busy threads, and the same test
    took 126 s for two concurrent runs instead of 30 s (docs/decisions/0137-test-threads.md)."""
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if count is None:  # one process, or the controller (whose environment the workers inherit)
        return
    threads = max(1, len(os.sched_getaffinity(0)) // int(count))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(threads))


_threads_per_worker()


def data_root() -> Path | None:
    """The benchmark data: $MUSTER_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get("MUSTER_DATA")
    root = Path(env) if env else REPO.parent / "shared" / "data"
    return root if root.is_dir() else None


# The longest modules on a fresh clone, longest first: their time in a `make test` of a fresh clone
# (results/bench/test_durations.md, docs/decisions/0062-test-time-both-cores.md).
# `make test` keeps this order (--no-loadscope-reorder; xdist would otherwise start the files
# with the most tests).
LONGEST_FIRST = (
    "tests/store/test_store.py",
    "tests/store/test_backends_equal.py",
    "tests/store/test_postgres.py",
    "tests/models/test_numpy_bert.py",
    "tests/memory/test_determinism.py",
    "tests/memory/test_supersession.py",
    "tests/serve/test_http.py",
    "tests/harness/test_answer_judge.py",
    "tests/harness/test_reproduce.py",
    "tests/cli/test_cli.py",
    "tests/cli/test_progress.py",
    "tests/harness/test_stages.py",
    "tests/channels/test_bm25.py",
    "tests/harness/test_longmemeval.py",
)


def _start_order(item: pytest.Item) -> tuple[int, int]:
    path = item.nodeid.split("::")[0]
    longest = LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
    return longest, item.get_closest_marker("slow") is None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first, then the other slow ones, each in its own order. `make test`
    spreads whole files over the cores (pytest-xdist, --dist=loadfile) in this order: each core
    takes the next longest file when it is free, and the short ones fill the cores at the end,
    instead of one long file running alone last."""
    items.sort(key=_start_order)


@pytest.fixture(scope="session")
def session_vectors() -> Path:
    """The session's vector cache, ``$MUSTER_HOME/vectors.sqlite``, which ``make test`` fills before
    the workers start (scripts/warm_test_vectors.py): for tests that build benchmark stores and do
    not test a cold cache, so each text is embedded once per session, not once per test."""
    from muster_exact.cache.vectors import default_path

    return default_path()


@pytest.fixture(scope="session")
def data() -> Path:
    root = data_root()
    if root is None:
        pytest.skip("benchmark data not found (set MUSTER_DATA or place ../shared/data)")
    return root


def run_muster(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
    stdin: str | bytes | None = None,
    prefix: tuple[str, ...] = (),
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, as a user runs it (``prefix``: a command to run it under)."""
    result = subprocess.run(
        [*prefix, sys.executable, "-m", "muster_exact", *args],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
    out, err = (stream.decode("utf-8", "replace") for stream in (result.stdout, result.stderr))
    return subprocess.CompletedProcess(result.args, result.returncode, out, err)


def one_line_error(result: subprocess.CompletedProcess[str], message: str) -> str:
    """A refusal as the CLI gives it: exit 2 and one stderr line naming the problem, no traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("muster: error: "), result.stderr
    assert message in lines[0] and "Traceback" not in result.stderr
    return lines[0]


def beside(path: Path) -> list[str]:
    """The names in ``path``'s folder: a refused file must leave no -wal, -shm or -journal there."""
    return sorted(p.name for p in path.parent.iterdir())


def sqlite_file(path: Path, *statements: str) -> Path:
    """Another program's SQLite file, made by running ``statements`` (a file MUSTER must not touch)."""
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


def no_hub_env(home: Path) -> dict[str, str]:
    """A fresh user's environment on a machine with no model hub: no $MUSTER_MODELS, an empty hub
    cache, and a hub endpoint on a loopback port nothing listens on (refused at once, as a
    machine without network would be, but without waiting on a resolver)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("MUSTER_MODELS", "HF_HUB_OFFLINE")}
    return {**env, "HF_HOME": str(home / "hf"), "HF_ENDPOINT": f"http://127.0.0.1:{closed}"}


TORCH_BLOCKER = """raise RuntimeError("torch was imported on a path that must not need it")\n"""


def torch_blocked_env(tmp_path: Path) -> dict[str, str]:
    """Variables for a subprocess in which torch is unimportable (a package of that name, first
    on the path, raises when imported), with an empty vector cache (so the embedder runs) and the
    CPU profile named: the read and build paths of issue 29 must not need torch."""
    (tmp_path / "block" / "torch").mkdir(parents=True, exist_ok=True)
    (tmp_path / "block" / "torch" / "__init__.py").write_text(TORCH_BLOCKER)
    path = os.pathsep.join([str(tmp_path / "block"), str(REPO), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path, "MUSTER_HOME": str(tmp_path / "home"), "MUSTER_MODELS": "cpu-small"}
