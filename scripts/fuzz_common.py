"""What every ``make fuzz`` campaign shares: the tally, the servers started in subprocesses, the
count of records a store holds at the end, and Hypothesis settings that replay the same inputs."""

from __future__ import annotations

import json
import os
import resource
import select
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, settings

from muster_exact.store import Store

REPO = Path(__file__).resolve().parent.parent

TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DEADLINE_S = 120.0  # a reply slower than this counts as unanswered


@dataclass
class Tally:
    """What one campaign saw."""

    name: str
    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    acknowledged: int = 0
    stored: int | None = None
    linked: int = 0  # stateful steps that followed a link of the OpenAPI document
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)  # what a campaign checks beyond the replies
    notes: list[str] = field(default_factory=list)  # what it measured, for the report

    def saw(self, status: int, what: str) -> None:
        self.requests += 1
        self.statuses[f"{status // 100}xx"] += 1
        if status >= 500:
            self.server_errors.append(f"{status} {what[:200]}")

    @property
    def ok(self) -> bool:
        counts_match = self.stored is None or self.stored == self.acknowledged
        return not self.server_errors and not self.unanswered and not self.problems and counts_match


# --- the servers ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_log(store: Path) -> Path:
    """Where the HTTP server on ``store`` writes its stderr (a file: a pipe nobody reads would fill
    and stall a server that logs a lot, which is one of the things a campaign looks for)."""
    return store.with_suffix(".log")


def start_http(
    store: Path | str, *, nofile: int | None = None, wait: bool = True, log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``muster http`` on ``store`` (a file, or a PostgreSQL URL with ``log`` naming where its stderr
    goes) with a token, optionally under ``ulimit -n nofile``; with ``wait``, returned once
    ``/healthz`` answers (else at once, to meet its cold start)."""
    log = server_log(Path(store)) if log is None else log
    port = free_port()
    env = {**os.environ, "MUSTER_MODELS": "cpu-small", "MUSTER_HTTP_TOKEN": TOKEN}

    def limit_descriptors() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    with log.open("ab") as written:
        process = subprocess.Popen(
            [sys.executable, "-m", "muster_exact", "http", "--store", str(store), "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=written,
            preexec_fn=limit_descriptors,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while wait and time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    if not wait:
        return process, url
    process.kill()
    said = log.read_text(errors="replace")[-2000:]
    raise SystemExit(f"the HTTP server did not start: {said}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def stored_records(store: Path) -> int:
    """Records in every namespace of the store, read from the file after the server stopped."""
    with Store.open(store, create=False) as opened:
        names = opened.namespaces()
    total = 0
    for name in names:
        with Store.open(store, name, create=False) as opened:
            total += opened.head().records
    return total


class RawMCP:
    """JSON-RPC lines to ``muster mcp`` over its stdin; replies read with a deadline."""

    def __init__(self, store: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "muster_exact", "mcp", "--store", str(store), "--models", "cpu-small"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.buffer = b""
        reply = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "1"},
            },
        )
        if reply is None or "result" not in reply:
            raise SystemExit(f"the MCP server did not initialise: {reply!r}")
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], raw: bytes | None = None) -> dict[str, Any] | None:
        """Send one request (or ``raw`` bytes standing for its params) and wait for the reply to its id."""
        self.next_id += 1
        if raw is None:
            self.send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
                    ensure_ascii=True,
                ).encode("ascii")
            )
        else:
            head = f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"{method}","params":'.encode()
            self.send(head + raw + b"}")
        return self.reply(self.next_id)

    def reply(self, wanted: int) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == wanted:
                    return dict(message)
            ready, _, _ = select.select([self.process.stdout], [], [], deadline - time.monotonic())
            if not ready:
                break
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
            if not chunk:
                break
            self.buffer += chunk
        return None

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def add_bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=True).encode("ascii")


def hypothesis_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# --- the CLI and the library, run as a user would ----------------------------------------

TRACEBACK = b"Traceback (most recent call last)"

# A library call in a process of its own: a typed refusal is one line on stderr and exit 2; any other
# exception leaves Python's traceback, which :func:`ran` counts as a crash.
_LIBRARY = """
import sys
from muster_exact.core.errors import MusterError
try:
{body}
except MusterError as exc:
    print(f"{{type(exc).__name__}}: {{exc}}", file=sys.stderr)
    sys.exit(2)
"""


def muster(
    *args: str | bytes,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = DEADLINE_S,
) -> subprocess.CompletedProcess[bytes] | None:
    """``muster ARGS`` (arguments may be bytes: an argv that is not UTF-8); None past ``timeout``."""
    return _run([sys.executable, "-m", "muster_exact", *args], env, stdin, timeout)


def library(body: str, env: dict[str, str] | None = None, timeout: float = DEADLINE_S) -> Any:
    """Python lines calling the library, run in a process of their own; None past ``timeout``."""
    code = _LIBRARY.format(body="\n".join("    " + line for line in body.strip().splitlines()))
    return _run([sys.executable, "-c", code], env, None, timeout)


def _run(
    argv: list[Any], env: dict[str, str] | None, stdin: bytes | None, timeout: float
) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            argv,
            cwd=REPO,
            env={**os.environ, "MUSTER_MODELS": "cpu-small", **(env or {})},
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None


def raw_output(output: bytes) -> list[str]:
    """What in ``output`` is not text for a terminal: bytes that are not UTF-8, control characters."""
    text = output.decode("utf-8", "replace")
    found = {f"U+{ord(c):04X}" for c in text if (ord(c) < 32 and c not in "\t\n\r") or ord(c) == 127}
    return sorted(found | ({"bytes that are not UTF-8"} if "\ufffd" in text else set()))


def ran(
    tally: Tally,
    what: str,
    done: subprocess.CompletedProcess[bytes] | None,
    *,
    refused: bool,
    says: tuple[str, ...] = (),
    hidden: tuple[bytes, ...] = (),
    one_line: bool = False,
) -> str:
    """Tally one CLI or library run (exit 0 as a 200, a refusal as a 400, a traceback as a 500) and
    check it: refused or not as expected, its message saying each of ``says``, none of ``hidden``
    shown, nothing raw printed. The last line of its stderr."""
    if done is None:
        tally.unanswered.append(f"{what}: no exit within the deadline")
        return ""
    said = done.stderr.decode("utf-8", "replace").strip()
    last = said.splitlines()[-1] if said else ""
    crashed = TRACEBACK in done.stderr
    tally.saw(500 if crashed else 200 if done.returncode == 0 else 400, f"{what}: {last}")
    if crashed:
        return last  # counted as a 5xx: a crash, with the traceback's last line
    if refused and done.returncode == 0:
        tally.problems.append(f"{what}: exit 0 where a refusal was expected")
    if not refused and done.returncode != 0:
        tally.problems.append(f"{what}: exit {done.returncode}: {last[:200]}")
    missing = [s for s in says if s.lower() not in said.lower()]
    if missing:
        tally.problems.append(f"{what}: the message does not say {missing}: {said[:200]!r}")
    shown = [h for h in hidden if h in done.stdout or h in done.stderr]
    if shown:
        tally.problems.append(f"{what}: printed {shown[0][:60]!r}")
    if one_line and len([line for line in said.splitlines() if line.strip()]) != 1:
        tally.problems.append(f"{what}: {len(said.splitlines())} lines on stderr, not one: {said[:300]!r}")
    if raw := raw_output(done.stdout + done.stderr):
        tally.problems.append(f"{what}: printed raw {', '.join(raw)}")
    return last
