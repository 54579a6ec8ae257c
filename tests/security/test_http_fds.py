"""One caller naming a thousand namespaces cannot exhaust the server's file descriptors or memory:
reads of a namespace the file does not hold open nothing, and open namespaces are a bounded LRU."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from tests.serve.test_http import Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

FD_LIMIT = 128  # ulimit -n for the server: without a bound, ~40 open namespaces exhaust it
OPEN_BOUND = 8  # --max-open-namespaces: 8 stores of ~3 descriptors each fit well under the limit
NAMES = 1_000
WARM = 100  # enough distinct names to fill the LRU (and every lazily built thing) before measuring


def limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def descriptors_and_rss(pid: int) -> tuple[int, int]:
    """Open descriptors and resident memory (KiB) of a process, from /proc."""
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return fds, rss


def touch(client: httpx.Client, url: str, i: int) -> int:
    """One request naming namespace ``n<i>``: every tenth a write, then a read of one written
    earlier (reopened after eviction), else a read of a namespace that does not exist."""
    name = f"n{i}"
    if i % 10 == 0:
        added = client.post(f"{url}/v1/add", json={"records": [f"note {i}"], "namespace": name})
        if added.status_code != 200:
            return added.status_code
        return client.get(f"{url}/v1/info", params={"namespace": f"n{max(i - 50, 0)}"}).status_code
    if i % 3 == 0:
        return client.post(f"{url}/v1/context", json={"query": "anything?", "namespace": name}).status_code
    return client.get(f"{url}/v1/info", params={"namespace": name}).status_code


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_thousand_namespace_names_keep_descriptors_and_memory_flat(tmp_path: Path) -> None:
    server = Server(
        tmp_path / "agent.muster", "--max-open-namespaces", str(OPEN_BOUND), preexec_fn=limit_descriptors
    )
    try:
        with httpx.Client(timeout=60) as client:
            statuses = [touch(client, server.url, i) for i in range(WARM)]
            fds_warm, rss_warm = descriptors_and_rss(server.process.pid)
            statuses += [touch(client, server.url, i) for i in range(WARM, NAMES)]
            fds_end, rss_end = descriptors_and_rss(server.process.pid)
            default = client.get(f"{server.url}/v1/info")
            unknown = client.post(f"{server.url}/v1/context", json={"query": "anything?", "namespace": "n7"})
    finally:
        server.stop()
    assert sorted(set(statuses)) == [200]
    assert default.status_code == 200 and default.json()["head"]["namespace"] == "default"
    assert unknown.json()["context"] == "" and unknown.json()["head"]["records"] == 0
    # Flat: at most a couple of descriptors of slack (a connection being torn down), and memory
    # within 16 MiB of the warm server (allocator noise; one more open store per name would be
    # hundreds of descriptors and tens of MiB over 900 names).
    assert fds_end <= fds_warm + 2, (fds_warm, fds_end)
    assert rss_end <= rss_warm + 16 * 1024, (rss_warm, rss_end)


# Issue 32: the default bound comes from ulimit -n, not a fixed 64 (64 x 8 descriptors does not
# fit 256: from about the 20th namespace every new one was 503, and the server did not recover).
NAMESPACES = 60


def limit_to_256() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_reads_over_60_namespaces_under_ulimit_256_all_answer(tmp_path: Path) -> None:
    server = Server(tmp_path / "agent.muster", preexec_fn=limit_to_256)
    statuses = []
    try:
        with httpx.Client(timeout=60) as client:
            for i in range(NAMESPACES):
                body = {"records": [f"note {i}: the key is in drawer {i}"], "namespace": f"n{i}"}
                statuses.append(client.post(f"{server.url}/v1/add", json=body).status_code)
                ask = {"query": f"Where is the key of note {i}?", "namespace": f"n{i}"}
                statuses.append(client.post(f"{server.url}/v1/context", json=ask).status_code)
            fds, _ = descriptors_and_rss(server.process.pid)
            # And it keeps answering: the first namespaces again (closed since, reopened), the default.
            again = client.post(f"{server.url}/v1/context", json={"query": "drawer?", "namespace": "n0"})
            info = client.get(f"{server.url}/v1/info")
    finally:
        server.stop()
    assert statuses == [200] * 2 * NAMESPACES, sorted(set(statuses))
    assert again.status_code == 200 and "drawer 0" in again.json()["context"], again.text
    assert info.status_code == 200
    assert fds < 256 * 3 // 4, fds  # the open namespaces' bound leaves room for connections
    assert "Traceback" not in server.stderr, server.stderr[-2000:]


def test_a_read_namespace_holds_no_more_descriptors_than_the_budget_counts(tmp_path: Path) -> None:
    """serve.budget counts FDS_PER_NAMESPACE for each open namespace: measured here on a real one."""
    from muster_exact.serve.backend import Backend
    from muster_exact.serve.budget import FDS_PER_NAMESPACE, descriptors_in_use

    backend = Backend(tmp_path / "agent.muster", models="cpu-small", max_open=4)
    try:
        backend.recall("warm up the default namespace?")
        before = descriptors_in_use()
        backend.remember(["The red mug is on the shelf."], None, "other")
        backend.recall("Where is the mug?", None, "other")
        backend.search("mug", None, "other")
        held = descriptors_in_use() - before
    finally:
        backend.close()
    assert 0 < held <= FDS_PER_NAMESPACE, held
