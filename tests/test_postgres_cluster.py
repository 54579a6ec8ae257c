"""The throw-away PostgreSQL cluster (tests/postgres.py): a working server, reached by the URL alone
from another process, each test on a database of its own, dropped after it."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

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
    assert postgres_cluster.start_seconds > 0
