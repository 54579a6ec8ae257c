"""The file-descriptor budget of the servers (:mod:`muster_exact.serve.budget`), the bound on open
namespaces it feeds (:class:`Backend`), and the rate-limited refusal log
(:class:`muster_exact.serve.connections.Refusals`)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from muster_exact.serve.backend import Backend, ServeError
from muster_exact.serve.budget import Budget, Limits, budget
from muster_exact.store import Store


@pytest.mark.parametrize(
    ("limit", "max_open", "max_connections", "expected"),
    [
        (256, None, None, Budget(13, 54)),  # ulimit -n 256: before, a fixed 64 namespaces
        (1024, None, None, Budget(64, 200)),
        (1 << 20, None, None, Budget(64, 200)),
        (128, 8, None, Budget(8, 12)),  # a bound given is kept, connections take the rest
        (256, None, 20, Budget(22, 20)),
    ],
)
def test_the_shares_of_the_descriptors(
    limit: int, max_open: int | None, max_connections: int | None, expected: Budget
) -> None:
    assert budget(max_open, max_connections, limit=limit, in_use=7) == expected


def test_a_stdio_server_gives_every_share_to_namespaces() -> None:
    assert budget(None, serves_connections=False, limit=256, in_use=7) == Budget(27, 0)


@pytest.mark.parametrize(
    ("max_open", "max_connections", "limit", "said"),
    [
        (64, None, 256, "--max-open-namespaces 64 needs about 512 file descriptors"),
        (None, 500, 256, "--max-connections 500 needs about 1,000 file descriptors"),
        (None, None, 64, "too few file descriptors to serve"),
    ],
)
def test_a_bound_that_cannot_fit_is_refused_naming_it(
    max_open: int | None, max_connections: int | None, limit: int, said: str
) -> None:
    with pytest.raises(ServeError, match=said) as refused:
        budget(max_open, max_connections, limit=limit, in_use=7)
    assert "ulimit -n" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("field", "value"), [("header_timeout", 0), ("body_timeout", -1.0), ("max_connections", 0)]
)
def test_limits_refuse_what_cannot_serve(field: str, value: float) -> None:
    with pytest.raises(ServeError, match=field.replace("_", "-")):
        Limits(**{field: value})


def test_more_namespaces_in_use_than_places_wait_for_a_place(tmp_path: Path) -> None:
    """Calls over more namespaces than ``max_open`` at once wait for a place (none is opened past the
    bound, so the budget holds), and every call is answered (no call waits for ever)."""
    backend = Backend(tmp_path / "agent.muster", models="cpu-small", max_open=2)
    opened: list[int] = []
    others = backend._others
    real = others.opener

    def counted(name: str) -> Store:
        opened.append(others.held())  # this one's place included
        return real(name)

    others.opener = counted
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            added = list(pool.map(lambda i: backend.remember([f"note {i}"], None, f"n{i % 5}"), range(30)))
        assert sorted({a["head"]["namespace"] for a in added}) == [f"n{i}" for i in range(5)]
        assert backend.records("n3")["total"] == 6
    finally:
        backend.close()
    assert max(opened) <= 1, opened  # the default namespace holds the other place


def test_refusals_are_one_line_per_kind_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    from muster_exact.serve.connections import Refusals

    now = [0.0]
    refusals = Refusals(interval=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="muster_exact.serve.connections"):
        for _ in range(1000):
            refusals.note("head-timeout", "closed slow ones")
        refusals.note("busy", "refused new ones")
        now[0] = 61.0
        refusals.note("head-timeout", "closed slow ones")
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 3, lines
    assert lines[0].startswith("closed slow ones (") and lines[1].startswith("refused new ones (")
    assert lines[2] == "closed slow ones: 1,000 since the last such line"


def test_asyncio_s_accept_failures_are_counted_not_logged_each(caplog: pytest.LogCaptureFixture) -> None:
    """Out of descriptors, Python 3.11's accept loop logs a traceback for every connection in the
    backlog; while the server runs they are one counted line."""
    from muster_exact.serve.connections import Refusals, collapsed_logs

    failure = OSError(24, "Too many open files")
    with caplog.at_level(logging.WARNING), collapsed_logs(Refusals()):
        for _ in range(500):
            logging.getLogger("asyncio").error(
                "socket.accept() out of system resource\nsocket: <fd=3>", exc_info=failure
            )
        logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
        logging.getLogger("asyncio").error("something else")  # not a flood: as it is
    lines = [(record.name, record.getMessage().splitlines()[0]) for record in caplog.records]
    assert lines == [
        ("muster_exact.serve.connections", lines[0][1]),
        ("muster_exact.serve.connections", lines[1][1]),
        ("asyncio", "something else"),
    ], lines
    assert "out of file descriptors" in lines[0][1] and "not HTTP" in lines[1][1]
    assert not any(record.exc_info for record in caplog.records if record.name != "asyncio")
