"""How long an add takes while a first read of the same namespace embeds its units (issue 55,
item 11; docs/decisions/0218-add-does-not-wait-for-a-read.md).

A store of ``--records`` synthetic notes (enough that the first read embeds for about ten seconds
with ``cpu-small`` on two cores), read once through the library's Store and once through a real
``muster http`` server; while each first read runs, one add a second, each timed. The read is
real (no hook): the adds compete with the embedding for the CPU and the GIL.

    .venv/bin/python scripts/bench_add_during_read.py --records 1500 --out results/bench/add_during_read.md
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

MODELS = "cpu-small"
QUESTION = "Which shelf needs water on Mondays?"


def notes(n: int, start: int = 0) -> list[str]:
    words = ["fern", "cactus", "orchid", "basil", "ivy", "palm", "moss", "tulip", "sage", "mint"]
    return [
        f"Note {i}: the {words[i % 10]} on shelf {i} of room {i % 37} needs water every "
        f"{1 + i % 6} days; {words[(i * 7) % 10]} seeds were planted there in week {i % 52}."
        for i in range(start, start + n)
    ]


def timed_adds(
    read: Callable[[], object], add: Callable[[int], object]
) -> tuple[list[float], float, list[float], int]:
    """The seconds of adds with no read running, the read's seconds, the seconds of the adds made
    while it ran, and how many of those ended before it did."""
    idle = []
    for k in range(5):
        t = time.perf_counter()
        add(-1 - k)
        idle.append(time.perf_counter() - t)
    done = threading.Event()
    began = time.perf_counter()
    read_s: list[float] = []

    def reader() -> None:
        read()
        read_s.append(time.perf_counter() - began)
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    done.wait(1.0)  # the read has taken its snapshot and is embedding
    latencies, during = [], 0
    k = 0
    while not done.is_set():
        t = time.perf_counter()
        add(k)
        latencies.append(time.perf_counter() - t)
        during += not done.is_set()
        k += 1
        done.wait(1.0)
    done.wait()
    return idle, read_s[0], latencies, during


def library(records: int, folder: Path) -> tuple[list[float], float, list[float], int]:
    from muster_exact.store import Store

    with Store.open(folder / "library.muster", models=MODELS) as store:
        store.add(notes(records))
        return timed_adds(lambda: store.context(QUESTION), lambda k: store.add(notes(1, 10**6 + k)))


def http(records: int, folder: Path) -> tuple[list[float], float, list[float], int]:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MUSTER_MODELS": MODELS}
    env.pop("MUSTER_HTTP_TOKEN", None)
    command = [sys.executable, "-m", "muster_exact", "http", "--store", str(folder / "http.muster")]
    server = subprocess.Popen([*command, "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # One client each for the writer and the reader, kept open as an agent keeps its client:
        # httpx.post makes a new client per call, whose set-up (an SSL context) is most of an
        # idle add's time and none of the server's.
        with (
            httpx.Client(base_url=url, timeout=300) as writer,
            httpx.Client(base_url=url, timeout=600) as reader,
        ):
            writer.post("/v1/add", json={"records": notes(records)}).raise_for_status()

            def add(k: int) -> None:
                writer.post("/v1/add", json={"records": notes(1, 10**6 + k)}).raise_for_status()

            def read() -> None:
                reader.post("/v1/context", json={"query": QUESTION}).raise_for_status()

            return timed_adds(read, add)
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, run in (("library Store", library), ("muster http", http)):
            idle, read_s, adds, during = run(args.records, Path(folder))
            ms = [1000 * s for s in adds]
            rows.append(
                f"| {name} | {args.records} | {1000 * statistics.median(idle):.1f} | {read_s:.1f} | "
                f"{len(ms)} | {during} | {statistics.median(ms):.1f} | {max(ms):.1f} |"
            )
    table = "\n".join(
        [
            "| surface | records | add, no read (median ms) | first read (s) | adds during it | "
            "ended before the read | median add (ms) | max add (ms) |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"# Adds during a first read\n\n`{' '.join(sys.argv)}`\n\n{table}\n")


if __name__ == "__main__":
    main()
