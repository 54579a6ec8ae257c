"""The store from the environment: every command that takes ``--store`` reads ``$MUSTER_STORE``
when it is not given, so a PostgreSQL URL with a password never reaches a command line (``ps``
shows command lines to every user). Real commands, a real server, a real throw-away cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from muster_exact.cli.parser import build_parser
from tests.conftest import one_line_error, run_muster
from tests.postgres import PostgresCluster
from tests.serve.test_http import Server, httpx

MODELS = "cpu-small"


def test_every_command_with_a_store_names_the_variable_in_its_help() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    with_store = {name: sub for name, sub in commands.items() if any(a.dest == "store" for a in sub._actions)}
    assert {"add", "query", "forget", "update", "list", "export", "import", "info", "http", "mcp"} <= set(
        with_store
    )
    for name, sub in with_store.items():
        store = next(a for a in sub._actions if a.dest == "store")
        assert not store.required and "$MUSTER_STORE" in (store.help or ""), name


def test_the_cli_writes_and_reads_the_store_the_variable_names(tmp_path: Path) -> None:
    store = tmp_path / "env.muster"
    notes = tmp_path / "notes.txt"
    notes.write_text("The red mug is on the table.\n")
    env = {"MUSTER_STORE": str(store), "MUSTER_MODELS": MODELS}
    added = run_muster("add", str(notes), env=env)
    assert added.returncode == 0 and "1 record" in added.stdout, added.stderr
    asked = run_muster("query", "Where is the mug?", env=env)  # the question alone: the store
    assert asked.returncode == 0 and "red mug" in asked.stdout, asked.stderr
    listed = run_muster("list", env=env)
    assert listed.returncode == 0 and "The red mug" in listed.stdout, listed.stderr
    # A FILE and a question read the file, with or without the variable.
    other = tmp_path / "other.txt"
    other.write_text("The blue kettle is in the sink.\n")
    from_file = run_muster("query", str(other), "Where is the kettle?", env=env)
    assert from_file.returncode == 0 and "blue kettle" in from_file.stdout, from_file.stderr
    # --store wins over the variable.
    given = run_muster("list", "--store", str(tmp_path / "nothing.muster"), env=env)
    assert given.returncode == 2 and "no store" in given.stderr


def test_no_store_and_no_variable_is_one_error_naming_both(tmp_path: Path) -> None:
    env = {"MUSTER_STORE": "", "MUSTER_MODELS": MODELS}
    for args in (("list",), ("info",), ("export",), ("forget", "--id", "r1"), ("update", "r1", "x")):
        one_line_error(run_muster(*args, env=env, cwd=tmp_path), "pass --store")
        refused = run_muster(*args, env=env, cwd=tmp_path)
        assert "MUSTER_STORE" in refused.stderr, refused.stderr
    assert not list(tmp_path.iterdir())  # nothing created


@pytest.mark.slow
def test_a_server_given_a_postgres_url_in_the_variable_keeps_it_off_its_command_line(
    postgres_url: str, postgres_cluster: PostgresCluster
) -> None:
    assert postgres_cluster.role_password in postgres_url
    env = {**os.environ, "MUSTER_MODELS": MODELS, "MUSTER_STORE": postgres_url}
    server = Server(None, env=env)
    try:
        argv = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().decode()
        assert postgres_url not in argv and postgres_cluster.role_password not in argv, argv
        added = httpx.post(
            f"{server.url}/v1/add", json={"records": ["The red mug is on the table."]}, timeout=60
        )
        assert added.status_code == 200, added.text
        context = httpx.post(f"{server.url}/v1/context", json={"query": "Where is the mug?"}, timeout=120)
        assert "red mug" in context.json()["context"], context.text
    finally:
        server.stop()
