"""Benchmark BM25: the vectorised index against rank-bm25, the same scores, in one run.

For each store (LoCoMo conv-26, BEAM-100K chat 1, BEAM-1M chat 6, the 262k
FactConsolidation log), the units as ``derive`` cuts them: build time and
per-query scoring time over the store's own questions (up to 100), for the
vectorised index (``muster_exact.channels.bm25``) and for rank-bm25 0.2.2 on
the same analysed terms. Every score is checked equal on the way. Standard
analyser (native mode). Wall clock on a shared machine; a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import rank_bm25

from muster_exact import __version__, analyse
from muster_exact.channels.bm25 import EMPTY, BM25Channel
from muster_exact.memory import unit_texts
from muster_exact.text.lexical import analyser
from muster_exact.verify.corpora import find_stores

STORES = ("conv-26", "beam-100K-1", "beam-1M-6", "factconsolidation_sh_262k")
ANALYSER = "standard"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--out", default="results/bench/bm25.md")
    args = parser.parse_args()
    terms = analyser(ANALYSER)
    rows = []
    for store in find_stores(Path(args.data)):
        if store.name not in STORES:
            continue
        texts = unit_texts(analyse(store.source).cut)
        questions = [q.text for q in store.questions[:100]]
        started = time.perf_counter()
        channel = BM25Channel(texts, ANALYSER)
        ours_build = time.perf_counter() - started
        started = time.perf_counter()
        reference = rank_bm25.BM25Okapi([terms(t) or [EMPTY] for t in texts])
        theirs_build = time.perf_counter() - started
        ours, theirs = [], []
        for question in questions:
            query_terms = terms(question)
            if not query_terms:
                continue
            started = time.perf_counter()
            got = channel.scores(question)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            expected = reference.get_scores(query_terms)
            theirs.append(time.perf_counter() - started)
            assert np.array_equal(got, expected), (store.name, question)  # type: ignore[arg-type]
        rows.append((store.name, len(texts), ours_build, theirs_build, ours, theirs))
    lines = [
        "# BM25 benchmark: vectorised index vs rank-bm25",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_bm25.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, analyser `{ANALYSER}`. Wall clock on a "
        "shared machine. Build includes analysing every unit text (both sides analyse alike); a query's "
        "time includes analysing it (ours) or is given the analysed terms (rank-bm25). Every score of "
        "every query was checked equal (`np.array_equal`).",
        "",
        "| store | units | build s (ours) | build s (rank-bm25) | query p50 ms (ours) | query p95 ms (ours) "
        "| query p50 ms (rank-bm25) | query p95 ms (rank-bm25) | p50 speed-up |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, units, ours_build, theirs_build, ours, theirs in rows:
        lines.append(
            f"| {name} | {units:,} | {ours_build:.2f} | {theirs_build:.2f} | "
            f"{percentile(ours, 0.5) * 1000:.2f} | {percentile(ours, 0.95) * 1000:.2f} | "
            f"{percentile(theirs, 0.5) * 1000:.2f} | {percentile(theirs, 0.95) * 1000:.2f} | "
            f"{percentile(theirs, 0.5) / percentile(ours, 0.5):.1f}x |"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
