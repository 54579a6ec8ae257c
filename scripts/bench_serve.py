"""Benchmark the HTTP API: requests/s and p50/p95 latency of /v1/add and /v1/context.

The server (`muster http`, cpu-small) runs in its own process on 127.0.0.1
over a LoCoMo-sized store: conv-26's 419 turns, added first. Then, each phase
with --clients concurrent clients:

* /v1/add: one new record per request (with a request id);
* /v1/context on the unchanged store (the built memory is reused);
* mixed: alternating add and context, so most reads follow a write and
  rebuild (re-derive, embed the new unit texts).

Wall clock on a shared machine; a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx
from bench_common import wait_until_healthy
from bench_replicas import free_port, replica_rows

from muster_exact import __version__
from muster_exact.verify.corpora import locomo_sessions


def locomo_turns(data: Path) -> tuple[list[dict[str, str]], list[str]]:
    sample = json.loads((data / "locomo/locomo10.json").read_text(encoding="utf-8"))[0]
    turns = [
        {"id": t["dia_id"], "speaker": t["speaker"], "time": date, "text": t["text"]}
        for _, date, session in locomo_sessions(sample["conversation"])
        for t in session
    ]
    return turns, [qa["question"] for qa in sample["qa"]]


def phase(url: str, requests: list[tuple[str, dict]], clients: int) -> dict[str, float]:
    latencies: list[float] = []
    statuses: list[int] = []

    def one(item: tuple[str, dict], client: httpx.Client) -> None:
        path, body = item
        started = time.perf_counter()
        reply = client.post(f"{url}{path}", json=body)
        latencies.append(1000 * (time.perf_counter() - started))
        statuses.append(reply.status_code)

    with httpx.Client(timeout=600) as client, ThreadPoolExecutor(max_workers=clients) as pool:
        started = time.perf_counter()
        list(pool.map(lambda item: one(item, client), requests))
        seconds = time.perf_counter() - started
    ordered = sorted(latencies)
    bad = sum(s != 200 for s in statuses)
    return {
        "requests": len(requests),
        "seconds": seconds,
        "rps": len(requests) / seconds,
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "errors": bad,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--out", default="results/bench/serve.md")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--replica-requests", type=int, default=200, help="requests per row of the replica table"
    )
    args = parser.parse_args()
    turns, questions = locomo_turns(Path(args.data))
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "MUSTER_MODELS": "cpu-small"}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "muster_exact",
                "http",
                "--store",
                str(Path(tmp) / "bench.muster"),
                "--port",
                str(port),
            ],
            env=env,
        )
        try:
            wait_until_healthy(url)
            httpx.post(f"{url}/v1/add", json={"records": turns}, timeout=600).raise_for_status()
            httpx.post(
                f"{url}/v1/context", json={"query": questions[0]}, timeout=600
            ).raise_for_status()  # build
            adds = [
                (
                    "/v1/add",
                    {
                        "records": [
                            {"speaker": "bench", "text": f"Note {i}: the parcel went to locker {i % 97}."}
                        ],
                        "request_id": f"bench-{i}",
                    },
                )
                for i in range(500)
            ]
            contexts = [("/v1/context", {"query": questions[i % len(questions)]}) for i in range(300)]
            mixed = [
                adds_or_query
                for i in range(100)
                for adds_or_query in (
                    (
                        "/v1/add",
                        {
                            "records": [f"Mixed note {i}: meeting room {i % 9} is free."],
                            "request_id": f"mix-{i}",
                        },
                    ),
                    ("/v1/context", {"query": questions[i % len(questions)]}),
                )
            ]
            results = {
                "/v1/add (one record each)": phase(url, adds, args.clients),
                "/v1/context (store unchanged)": phase(url, contexts, args.clients),
                "mixed add + context (reads rebuild)": phase(url, mixed, args.clients),
            }
            info = httpx.get(f"{url}/v1/info", timeout=60).json()
        finally:
            server.terminate()
            server.wait(timeout=30)
    lines = [
        "# HTTP API benchmark (cpu-small)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_serve.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, {args.clients} concurrent clients, "
        "server and clients on one machine. Wall clock on a shared machine.",
        "",
        f"Store: LoCoMo conv-26 ({len(turns)} turns) added first; "
        f"{info['head']['records']:,} records at the end.",
        "",
        "| phase | requests | requests/s | p50 ms | p95 ms | non-200 |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['requests']} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} | {r['errors']} |"
        )
    lines += ["", *replica_rows(turns, questions, args.replica_requests, args.clients), ""]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
