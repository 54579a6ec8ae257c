"""Settings `muster http` cannot serve with are refused at start-up in one line (exit 2), before
the store is opened: a body limit no body fits, a token set but empty (an open server by
mistake), a timeout or connection cap that is not positive, and a bound on open namespaces that
the process's file descriptors (``ulimit -n``) cannot hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_muster
from tests.serve.test_http import free_port

pytest.importorskip("fastapi")

UNDER_256 = ("sh", "-c", 'ulimit -n 256 && exec "$0" "$@"')  # the command, with ulimit -n 256

REFUSED = {
    "--max-body 0": (("--max-body", "0"), {}, (), "--max-body"),
    "--max-body -1": (("--max-body", "-1"), {}, (), "--max-body"),
    "an empty $MUSTER_HTTP_TOKEN": ((), {"MUSTER_HTTP_TOKEN": ""}, (), "$MUSTER_HTTP_TOKEN is set but empty"),
    "an empty --token": (("--token", ""), {}, (), "--token"),
    "--header-timeout 0": (("--header-timeout", "0"), {}, (), "--header-timeout"),
    "--body-timeout -1": (("--body-timeout", "-1"), {}, (), "--body-timeout"),
    "--max-connections 0": (("--max-connections", "0"), {}, (), "--max-connections"),
    "64 namespaces under ulimit -n 256": (
        ("--max-open-namespaces", "64"),
        {},
        UNDER_256,
        "--max-open-namespaces 64",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_setting_the_server_cannot_serve_with_is_one_line_at_start(tmp_path: Path, case: str) -> None:
    flags, env, prefix, message = REFUSED[case]
    store = tmp_path / "agent.muster"
    result = run_muster(
        "http", "--store", str(store), "--port", str(free_port()), *flags, env=env, prefix=prefix, timeout=60
    )
    one_line_error(result, message)
    assert not store.exists()  # refused before the store was opened (or created)
