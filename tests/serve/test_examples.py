"""The examples run as written: the robot log against the real HTTP server, the agent loop against
the loopback OpenAI-compatible test server, the MCP configuration against the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact.cli import build_parser
from muster_exact.store import Store
from tests.conftest import REPO
from tests.harness.fake_llm import Behaviour, FakeLLM
from tests.serve.test_http import Server

pytestmark = pytest.mark.slow
EXAMPLES = REPO / "examples"


def test_robot_log_over_http(tmp_path: Path) -> None:
    server = Server(tmp_path / "robot.muster")
    try:
        out = subprocess.run(
            [sys.executable, str(EXAMPLES / "robot_log_http.py"), "--url", server.url],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert "Red mug moved to the dish rack" in out.stdout
        # Resent posts (same request ids, same records) change nothing; a changed body would be 409.
        again = subprocess.run(
            [sys.executable, str(EXAMPLES / "robot_log_http.py"), "--url", server.url],
            capture_output=True,
            timeout=300,
        )
        assert again.returncode == 0
    finally:
        server.stop()
    with Store.open(tmp_path / "robot.muster") as store:
        assert store.head().records == 4


def test_agent_loop_recalls_and_remembers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import agent_loop
    finally:
        sys.path.remove(str(EXAMPLES))
    from openai import OpenAI

    seen: list[str] = []

    def reply(body: dict) -> str:
        seen.append(body["messages"][-1]["content"])
        return "Noted."

    with (
        FakeLLM(Behaviour(reader_reply=reply)) as fake,
        Store.open(tmp_path / "a.muster", models="cpu-small") as store,
    ):
        client = OpenAI(base_url=fake.base_url, api_key="test-key")
        agent_loop.turn(store, client, "fake", "My sister's name is Ines.")
        agent_loop.turn(store, client, "fake", "What is my sister's name?")
        assert "(empty)" in seen[0] and "My sister's name is Ines." in seen[1]
        assert store.head().records == 4


def test_the_mcp_configuration_matches_the_cli() -> None:
    config = json.loads((EXAMPLES / "mcp_client_config.json").read_text())["mcpServers"]["muster"]
    assert config["command"] == "muster"
    args = build_parser().parse_args(config["args"])
    assert args.store == "/path/to/agent.muster" and args.run.__name__ == "_cmd_mcp"
