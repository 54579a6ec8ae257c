"""Connecting to PostgreSQL (muster_exact/store/postgres_connect.py), against the throw-away cluster
of tests/postgres.py: each failure a user can cause is one typed error naming the URL with its
password hidden, and no message ever holds the password."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from muster_exact.core.errors import StoreError, StoreReadOnly, StoreUnavailable
from muster_exact.core.optional import Extra
from muster_exact.store.postgres_connect import (
    connect,
    is_postgres_url,
    shown_url,
    typed_error,
    typed_errors,
)
from tests.conftest import REPO
from tests.postgres import PostgresCluster

# A password with characters that must be percent-encoded in a URL: neither spelling may leak.
SECRET = "Sh0w-me@never/%"
ENCODED = quote(SECRET, safe="")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def refused(url: str) -> StoreError:
    """The error ``connect`` raises for ``url``, checked to be one line without the password."""
    with pytest.raises(StoreError) as caught:
        connect(url).close()
    message = str(caught.value)
    assert "\n" not in message and SECRET not in message and ENCODED not in message, message
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__), "a chain"
    return error


@pytest.fixture
def role(postgres_cluster: PostgresCluster, postgres_url: str) -> Iterator[Callable[..., str]]:
    """Make a login role with password SECRET on the test's database (``grants``: SQL run there as
    the superuser, ``{role}`` filled in); the role's URL. Dropped after the test."""
    made: list[str] = []
    database = postgres_url.rsplit("/", 1)[1]

    def make(*grants: str) -> str:
        name = f"r_{uuid.uuid4().hex[:10]}"
        made.append(name)
        with postgres_cluster.admin(database) as db:
            db.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{SECRET}'")
            for grant in grants:
                db.execute(grant.format(role=name))
        return postgres_cluster.url(database, name, SECRET)

    yield make
    with postgres_cluster.admin(database) as db:
        for name in made:
            db.execute(f"DROP OWNED BY {name}")
            db.execute(f"DROP ROLE {name}")


@pytest.fixture
def table(postgres_url: str) -> str:
    """The test database with a table ``t`` (owned by the test role) to read and write."""
    with connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE TABLE t (x int)")
        db.execute("INSERT INTO t VALUES (1)")
    return postgres_url


# --- URLs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("postgresql://u@h/db", True),
        ("postgres://h/db", True),
        ("POSTGRESQL://h/db", True),
        ("agent.muster", False),
        ("/var/lib/postgresql/agent.muster", False),
        ("sqlite:///x", False),
        ("postgresql:/h/db", False),
    ],
)
def test_a_postgres_url_is_told_by_its_scheme(text: str, answer: bool) -> None:
    assert is_postgres_url(text) is answer


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://u:{ENCODED}@h:5432/db", "postgresql://u:***@h:5432/db"),
        (f"postgresql://u:{SECRET}@h/db", "postgresql://u:***@h/db"),  # unencoded: up to the last @
        (f"postgres://h/db?user=u&password={ENCODED}&sslmode=require", "postgres://h/db?user=u&password=***&sslmode=require"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://h", "postgresql://h"),
        (f"postgresql://u:{SECRET}@[::1/db", "postgresql://u:***@[::1/db"),
    ],
)  # fmt: skip
def test_the_shown_url_hides_the_password(url: str, shown: str) -> None:
    assert shown_url(url) == shown


# --- each failure, one typed error ----------------------------------------------------------------


def test_a_url_that_is_not_postgres_is_refused() -> None:
    error = refused(f"mysql://u:{ENCODED}@127.0.0.1/db")
    assert type(error) is StoreError and "is not a PostgreSQL URL" in str(error)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u:{ENCODED}@127.0.0.1/db?no_such_option=1",
        f"postgresql://u:{SECRET}@[::1/db",
        "postgresql://u:pa%zz@127.0.0.1/db",
        f"postgresql://u:{ENCODED}@127.0.0.1:notaport/db",
        f"postgresql://u:{ENCODED}@127.0.0.1/db?sslmode=bogus",
    ],
)
def test_a_bad_connection_string_is_one_error_saying_how_to_write_it(url: str) -> None:
    error = refused(url)
    assert type(error) is StoreError and "is not a valid PostgreSQL URL" in str(error), error
    assert "postgresql://user:password@host:port/dbname" in str(error)


@pytest.mark.parametrize("password", ["k9q@zx7w@vy4", "k9q/zx7w@vy4", SECRET])
def test_a_bare_at_in_the_password_is_refused_before_the_driver_quotes_it(password: str) -> None:
    """libpq ends the password at its first '@' and quoted the rest as the host ("failed to
    resolve host 'with@at@127.0.0.1'", issue 55 item 4): refused before connecting, no piece shown."""
    with pytest.raises(StoreError) as caught:
        connect(f"postgresql://muster:{password}@127.0.0.1:1/mem").close()
    message = str(caught.value)
    assert "is not a valid PostgreSQL URL" in message and "%40" in message, message
    assert "postgresql://muster:***@127.0.0.1:1/mem" in message, message
    for piece in {*password.replace("/", "@").split("@"), password} - {"%"}:
        assert piece not in message.replace("postgresql://muster:***@127.0.0.1:1/mem", ""), piece


def test_an_unreachable_server_is_unavailable() -> None:
    error = refused(f"postgresql://u:{ENCODED}@127.0.0.1:{free_port()}/db")
    assert isinstance(error, StoreUnavailable) and "cannot reach the PostgreSQL server" in str(error)
    assert "postgresql://u:***@127.0.0.1:" in str(error)


def test_a_wrong_password_is_a_refused_login(postgres_url: str, postgres_cluster: PostgresCluster) -> None:
    wrong = postgres_url.replace(postgres_cluster.role_password, ENCODED)
    error = refused(wrong)
    assert isinstance(error, StoreUnavailable) and "refused the login" in str(error), error
    assert postgres_cluster.role_password not in str(error)


def test_a_missing_database_is_named(postgres_cluster: PostgresCluster) -> None:
    cluster = postgres_cluster
    error = refused(cluster.url("no_such_database", cluster.role, cluster.role_password))
    assert isinstance(error, StoreUnavailable) and "does not exist" in str(error), error
    assert "no_such_database" in str(error) and "create it" in str(error)
    assert cluster.role_password not in str(error)


def test_a_connection_dropped_mid_query_is_unavailable(table: str) -> None:
    db = connect(table)
    with connect(table, autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", (db.info.backend_pid,))
    for _ in range(2):  # the query the server ended, then the next one on the closed connection
        with pytest.raises(StoreUnavailable, match="was lost mid-request") as caught, typed_errors(table):
            db.execute("SELECT x FROM t").fetchall()
        assert "retry" in str(caught.value) and "muster-test-password" not in str(caught.value)
    db.close()


def test_a_role_whose_transactions_are_read_only_cannot_write(table: str, role: Callable[..., str]) -> None:
    url = role("GRANT ALL ON t TO {role}", "ALTER ROLE {role} SET default_transaction_read_only = on")
    with connect(url) as db:
        assert db.execute("SELECT x FROM t").fetchall() == [(1,)]  # it reads
        with pytest.raises(StoreReadOnly, match="can be read but not written") as caught, typed_errors(url):
            db.execute("INSERT INTO t VALUES (2)")
    assert SECRET not in str(caught.value) and ENCODED not in str(caught.value)


def test_a_role_granted_select_only_cannot_write(table: str, role: Callable[..., str]) -> None:
    url = role("GRANT SELECT ON t TO {role}")
    with connect(url) as db:
        assert db.execute("SELECT x FROM t").fetchall() == [(1,)]
        with pytest.raises(StoreReadOnly, match="may not change the store") as caught, typed_errors(url):
            db.execute("DELETE FROM t")
    assert SECRET not in str(caught.value) and ENCODED not in str(caught.value)


def test_a_read_only_connection_refuses_writes(table: str) -> None:
    with connect(table, read_only=True) as db, pytest.raises(StoreReadOnly), typed_errors(table):
        db.execute("INSERT INTO t VALUES (2)")


# --- what is not mapped, and what the servers answer ----------------------------------------------


def test_a_bug_keeps_its_own_error(table: str) -> None:
    import psycopg

    with connect(table) as db, pytest.raises(psycopg.errors.UndefinedTable), typed_errors(table):
        db.execute("SELECT * FROM no_such_table")
    assert typed_error(ValueError("not psycopg's"), table) is None


def test_the_url_sets_the_defaults_it_names(postgres_url: str) -> None:
    with connect(postgres_url) as db:
        assert db.execute("SHOW application_name").fetchone() == ("muster",)
    with connect(postgres_url + "?application_name=replica-2") as db:
        assert db.execute("SHOW application_name").fetchone() == ("replica-2",)


def test_each_typed_error_is_answered_503() -> None:
    from muster_exact.serve.http import status_of

    for error in (StoreError("bad url"), StoreUnavailable("down"), StoreReadOnly("read-only")):
        assert status_of(error) == 503


def test_a_missing_driver_names_the_extra(tmp_path: Path) -> None:
    """Without psycopg (an unimportable package of that name first on the path), connecting is
    one error naming the extra."""
    (tmp_path / "psycopg").mkdir()
    (tmp_path / "psycopg" / "__init__.py").write_text("raise ImportError('blocked')\n")
    script = (
        "from muster_exact.core.errors import MusterError\n"
        "from muster_exact.store.postgres_connect import connect\n"
        "try:\n    connect('postgresql://u:pw@127.0.0.1/db')\n"
        "except MusterError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.stdout.startswith("MissingExtra psycopg is not installed"), done.stdout + done.stderr
    assert str(Extra("postgres")) in done.stdout, done.stdout
