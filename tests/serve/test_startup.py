"""`muster http` and `muster mcp` refuse settings they cannot serve at start-up: one stderr line,
exit 2, and no store file left behind, instead of starting and failing every read (or a traceback)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from unittest.mock import patch

import pytest

from tests.conftest import run_muster
from tests.serve.test_http import free_port

pytest.importorskip("fastapi")
pytest.importorskip("mcp")


def muster(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI; a server that starts when it should have refused fails the test after 60 s."""
    try:
        with patch.dict(os.environ):
            os.environ.pop("MUSTER_HTTP_TOKEN", None)  # the caller's token is not this test's
            return run_muster(*args, env=env, stdin=b"", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"muster {' '.join(args)} started serving instead of refusing")


def refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[0].startswith("muster: error: ") and all(w in lines[0] for w in words), lines[0]


@pytest.mark.parametrize("command", ["http", "mcp"])
@pytest.mark.parametrize(
    ("setting", "words"),
    [
        (("--models", "nope"), ("unknown model profile 'nope'",)),
        (("--preset", "nope"), ("unknown preset 'nope'",)),
        (("--max-open-namespaces", "0"), ("--max-open-namespaces", "at least 1")),
    ],
)
def test_a_setting_reads_cannot_use_is_refused_at_start(
    tmp_path: Path, command: str, setting: tuple[str, ...], words: tuple[str, ...]
) -> None:
    store = tmp_path / "agent.muster"
    port = ("--port", str(free_port())) if command == "http" else ()
    refused(muster(command, "--store", str(store), *port, *setting), *words)
    assert not store.exists()


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_out_of_range_is_one_line(tmp_path: Path, port: str) -> None:
    store = tmp_path / "agent.muster"
    refused(muster("http", "--store", str(store), "--port", port), port, "1 to 65535")
    assert not store.exists()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        refused(muster("http", "--store", str(tmp_path / "a.muster"), "--port", port), port, "in use")


@pytest.mark.parametrize("token", ["tökén", "two words", "tab\tin"])
def test_a_token_that_cannot_go_in_a_header_is_refused(tmp_path: Path, token: str) -> None:
    store, port = tmp_path / "agent.muster", str(free_port())
    refused(muster("http", "--store", str(store), "--port", port, "--token", token), "--token", "ASCII")
    in_env = muster("http", "--store", str(store), "--port", port, env={"MUSTER_HTTP_TOKEN": token})
    refused(in_env, "$MUSTER_HTTP_TOKEN", "ASCII")
    assert not store.exists()


def test_help_puts_the_environment_variable_first() -> None:
    result = muster("http", "--help")
    text = " ".join(result.stdout.split())
    assert result.returncode == 0
    assert "$MUSTER_HTTP_TOKEN" in text and text.index("$MUSTER_HTTP_TOKEN") < text.index("options:")
    assert "--allow-host" in text and "--allow-origin" in text and "--max-open-namespaces" in text
