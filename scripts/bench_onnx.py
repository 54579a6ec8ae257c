"""Benchmark the embedder's runtimes: torch, ONNX Runtime fp32, ONNX Runtime int8 (issue 13).

The same packaged all-MiniLM-L6-v2 under the three model profiles
(``cpu-small``, ``cpu-small-onnx``, ``cpu-small-onnx-int8``), in one run:

* speed: every piece of the LoCoMo stores embedded afresh (no cache), one
  runtime after the other: pieces/s and cl100k tokens/s;
* quality: MUSTER (native rules, the CPU default) over every LoCoMo
  conversation with each runtime's vectors, evidence recall at U = 10 and 20
  with a 95% bootstrap interval (``make reproduce``'s metric), and how far
  each runtime's vectors lie from torch's (the lowest cosine).

Wall clock on a shared machine; a benchmark, not a test.

    python scripts/bench_onnx.py --data ../shared/data --out results/bench/onnx.md
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import benchmarks  # noqa: E402
from harness.benchmarks.metrics import question_scores  # noqa: E402
from harness.config import BenchmarkConfig  # noqa: E402
from harness.data import DataRoot  # noqa: E402
from harness.tables import bootstrap_ci  # noqa: E402
from muster_exact import __version__  # noqa: E402
from muster_exact.cache.vectors import VectorCache, text_key  # noqa: E402
from muster_exact.memory import build, embedding_pieces, planned, rules_of  # noqa: E402
from muster_exact.models import load_embedder, profile  # noqa: E402
from muster_exact.text import tokens  # noqa: E402

PROFILES = ("cpu-small", "cpu-small-onnx", "cpu-small-onnx-int8")
UNITS = (10, 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--out", default="results/bench/onnx.md")
    args = parser.parse_args()
    data = DataRoot.open(args.data, REPO / "manifests" / "data.json")
    stores = list(benchmarks.load("locomo").stores(data, BenchmarkConfig(name="locomo")))
    pieces = []
    for store in stores:
        plan, cut, models, _ = planned(store.source, models="cpu-small")
        pieces += list(embedding_pieces(cut, models, rules_of(plan).pieces).texts)
    n_tokens = sum(tokens.count_many(pieces))
    embedders = {name: load_embedder(profile(name).embedder) for name in PROFILES}
    seconds, vectors, caches = {}, {}, {}
    for name, embedder in embedders.items():
        embedder.embed(pieces[:8])  # the first call loads what it loads
        started = time.perf_counter()
        vectors[name] = embedder.embed(pieces)
        seconds[name] = time.perf_counter() - started
        print(f"{name}: {len(pieces):,} pieces in {seconds[name]:.1f} s", file=sys.stderr, flush=True)
        # The recall builds below read these vectors instead of embedding again.
        caches[name] = VectorCache(None)
        key = profile(name).embedder.key
        rows = [(text_key(t), v.tobytes(), len(v)) for t, v in zip(pieces, vectors[name], strict=True)]
        caches[name].put(key, rows)
    recall: dict[str, dict[int, list[float]]] = {name: {u: [] for u in UNITS} for name in PROFILES}
    for store in stores:
        for name in PROFILES:
            memory = build(store.source, models=name, cache=caches[name])
            for u in UNITS:
                for question in store.questions:
                    if not question.evidence:
                        continue
                    context = memory.context(question.text, u)
                    score = question_scores(question, context.text, context.record_ids)["evidence_recall"]
                    recall[name][u].append(float(score))  # type: ignore[arg-type]
        print(f"{store.name}: recall measured", file=sys.stderr, flush=True)
    Path(args.out).write_text(report(pieces, n_tokens, seconds, vectors, recall), encoding="utf-8")


def report(pieces, n_tokens, seconds, vectors, recall) -> str:  # type: ignore[no-untyped-def]
    torch = vectors["cpu-small"]
    lines = [
        "# Embedder runtimes: torch and ONNX Runtime (the packaged all-MiniLM-L6-v2)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_onnx.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores. Wall clock on a shared machine, "
        "one runtime after the other, one pass each.",
        "",
        f"Speed: the {len(pieces):,} pieces ({n_tokens:,} cl100k tokens) of the 10 LoCoMo conversations, "
        "embedded afresh. Quality: MUSTER with the native rules over each conversation with that "
        "runtime's vectors, evidence recall (mean and 95% bootstrap interval over the questions).",
        "",
        "| profile | seconds | pieces/s | tokens/s | speed vs torch | lowest cosine to torch | "
        + " | ".join(f"evidence recall U={u}" for u in UNITS)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(UNITS),
    ]
    for name in PROFILES:
        cosine = float((vectors[name] * torch).sum(axis=1).min())
        cells = []
        for u in UNITS:
            values = recall[name][u]
            low, high = bootstrap_ci(values)
            cells.append(f"{sum(values) / len(values):.4f} [{low:.4f}, {high:.4f}]")
        lines.append(
            f"| {name} | {seconds[name]:.1f} | {len(pieces) / seconds[name]:.1f} | "
            f"{n_tokens / seconds[name]:,.0f} | {seconds['cpu-small'] / seconds[name]:.2f}x | {cosine:.6f} | "
            + " | ".join(cells)
            + " |"
        )
    n_questions = len(recall["cpu-small"][UNITS[0]])
    lines += [
        "",
        f"{n_questions:,} questions with evidence. The ONNX profiles key their vectors apart from torch's "
        "(`ModelRef.key`), so a cache never mixes them; the default profile and its pinned context "
        "hashes are unchanged.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
