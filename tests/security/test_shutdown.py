"""SIGTERM stops `muster http` and `muster mcp` as SIGINT does: the store is closed (issue 32, item 5).

`systemctl stop`, `docker stop` and `kill` send SIGTERM. Before, uvicorn took the signal, shut down,
then raised it again with the default handler restored, which ended the process before the store
was closed (exit 143, the store's -wal left behind with whatever a pending erase had not yet
overwritten); `muster mcp` had no handler at all, and on SIGINT it waited for its client's next
line. Here each server writes a record, gets the signal while its client is still connected, and
must exit at once with the store closed: SQLite removes the -wal and -shm files when the last
connection closes, so none may be left beside the store.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import beside
from tests.security.test_mcp_stdio import RawClient, tool_call
from tests.serve.test_http import Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("mcp")
pytestmark = pytest.mark.slow

STOP_TIMEOUT = 30  # seconds: a server that does not stop fails the test instead of hanging it
EXIT = {signal.SIGTERM: 0, signal.SIGINT: 130}  # a stop asked for is a clean exit; ^C as before
SAID = {signal.SIGTERM: "stopped by SIGTERM", signal.SIGINT: "muster: interrupted"}


def as_from_a_terminal() -> None:
    """The server's SIGINT as a terminal's ^C finds it. A test run started in the background
    (``make test &``, ``nohup``) starts every child with SIGINT ignored; uvicorn still stops on it,
    then restores "ignored" and raises it again into nothing, so the exit would be 0, not 130."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stopped(process: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    process.send_signal(sig)
    try:
        return process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"still running {STOP_TIMEOUT} s after {sig.name}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_http_closes_the_store_on_a_stop_signal(tmp_path: Path, sig: signal.Signals) -> None:
    (tmp_path / "store").mkdir()
    store = tmp_path / "store" / "agent.muster"
    server = Server(store, preexec_fn=as_from_a_terminal)
    try:
        record = {"records": ["The key is in the drawer."]}
        reply = httpx.post(f"{server.url}/v1/add", json=record, timeout=60)
        assert reply.status_code == 200, reply.text
        assert f"{store.name}-wal" in beside(store)  # open, with a write in its log
        code = stopped(server.process, sig)
    finally:
        server.stop()
    assert code == EXIT[sig], (code, server.stderr)
    assert beside(store) == [store.name], beside(store)  # closed: no -wal, no -shm
    assert SAID[sig] in server.stderr and "Traceback" not in server.stderr, server.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_mcp_closes_the_store_on_a_stop_signal_while_its_client_is_connected(
    tmp_path: Path, sig: signal.Signals
) -> None:
    (tmp_path / "store").mkdir()
    store = tmp_path / "store" / "agent.muster"
    client = RawClient(store, stderr=tmp_path / "stderr.log")
    try:
        client.send(tool_call(1, "remember", '{"text":"The key is in the drawer."}'))
        reply = client.reply()
        assert reply is not None and reply["result"]["isError"] is False, reply
        assert f"{store.name}-wal" in beside(store)
        code = stopped(client.process, sig)  # stdin still open: the client has not gone away
    finally:
        client.close()
    log = (tmp_path / "stderr.log").read_text()
    assert code == EXIT[sig], (code, log)
    assert beside(store) == [store.name], beside(store)
    assert SAID[sig] in log and "Traceback" not in log, log
