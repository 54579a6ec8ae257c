"""The throw-away PostgreSQL cluster (tests/postgres.py): a working server, reached by the URL alone
from another process, each test on a database of its own, dropped after it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.postgres import PostgresCluster


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, connect_timeout=10)


def test_the_url_reaches_a_fresh_empty_database_owned_by_the_test_role(
    postgres_url: str, postgres_cluster: PostgresCluster
) -> None:
    assert postgres_url.startswith(f"postgresql://muster:{postgres_cluster.role_password}@127.0.0.1:")
    with _connect(postgres_url) as db:
        user, owner, tables = db.execute(
            "SELECT current_user, pg_catalog.pg_get_userbyid(datdba),"
            " (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')"
            " FROM pg_database WHERE datname = current_database()"
        ).fetchone()
        assert (user, owner, tables) == ("muster", "muster", 0)
        db.execute("CREATE TABLE t (x int)")  # the owner may create its schema
        db.execute("INSERT INTO t VALUES (1)")


def test_a_subprocess_needs_only_the_url(postgres_url: str) -> None:
    script = "import psycopg, sys; print(psycopg.connect(sys.argv[1]).execute('SELECT 40 + 2').fetchone()[0])"
    done = subprocess.run([sys.executable, "-c", script, postgres_url], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr


# Two tests, each writing a marker table into its own database: neither sees the other's, and
# the database of the first is gone once it has ended (whichever order they run in).
SEEN: dict[str, str] = {}


@pytest.mark.parametrize("marker", ["first", "second"])
def test_each_test_has_a_database_of_its_own(
    marker: str, postgres_url: str, postgres_cluster: PostgresCluster
) -> None:
    with _connect(postgres_url) as db:
        assert db.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'marker'").fetchone() == (0,)
        db.execute("CREATE TABLE marker (name text)")
        db.execute("INSERT INTO marker VALUES (%s)", (marker,))
        name = db.execute("SELECT current_database()").fetchone()[0]
    with postgres_cluster.admin() as admin:
        alive = {row[0] for row in admin.execute("SELECT datname FROM pg_database")}
    assert name in alive and not set(SEEN.values()) & alive, (SEEN, alive)
    SEEN[marker] = name


def test_the_cluster_is_durable_off_and_local(postgres_cluster: PostgresCluster) -> None:
    with postgres_cluster.admin() as db:
        settings = dict(db.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'listen_addresses')"
        ).fetchall())  # fmt: skip
    assert settings == {"fsync": "off", "listen_addresses": "127.0.0.1"}
    assert postgres_cluster.start_seconds > 0 and (postgres_cluster.data_dir / "PG_VERSION").is_file()


# --- without the binaries, and after a crash -----------------------------------------------------


def _inner_pytest(folder: Path, test: str, env: dict[str, str] | None = None, **popen: Any) -> Any:
    """pytest in a subprocess on one test file written in ``folder``, with the cluster plugin."""
    (folder / "test_inner.py").write_text(test)
    plugins = ["-p", "tests.postgres", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-rsf", "-c", os.devnull, "--rootdir", str(folder),
               *plugins, "test_inner.py"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.Popen(command, cwd=folder, env=env, text=True, **popen)


NO_BINARIES = """import tests.postgres

tests.postgres.server_bindir = lambda: None


def test_uses_the_cluster(postgres_url):
    pass
"""


@pytest.mark.parametrize(("required", "outcome"), [("0", "1 skipped"), ("1", "1 error")])
def test_without_the_binaries_they_skip_unless_required(tmp_path: Path, required: str, outcome: str) -> None:
    env = {"MUSTER_POSTGRES_REQUIRED": required}
    inner = _inner_pytest(tmp_path, NO_BINARIES, env, stdout=subprocess.PIPE)
    out, _ = inner.communicate(timeout=120)
    assert outcome in out and "PostgreSQL server binaries (initdb, pg_ctl) not found" in out, out
    assert "make install" in out and "Traceback" not in out


KILLED = """import time


def test_waits(postgres_cluster):
    print("CLUSTER", postgres_cluster.root, postgres_cluster.port, flush=True)
    time.sleep(120)
"""


def test_a_killed_pytest_leaves_no_server_behind(tmp_path: Path) -> None:
    inner = _inner_pytest(tmp_path, KILLED, {}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert inner.stdout is not None
    line = ""
    while "CLUSTER" not in line:
        line = inner.stdout.readline()
        assert line or inner.poll() is None, "the inner pytest ended before starting its cluster"
    root, port = line.split()[-2], int(line.split()[-1])
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # listening
    inner.kill()  # SIGKILL: no finalizer, no atexit
    inner.wait()
    inner.stdout.close()
    deadline = time.monotonic() + 30  # the watchdog looks once a second
    while Path(root).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(root).exists(), "the cluster's folder outlived the killed pytest"
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
