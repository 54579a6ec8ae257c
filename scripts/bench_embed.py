"""Benchmark what embedding costs: whole units vs pieces (issue 11), numpy vs torch (issue 29).

With all-MiniLM-L6-v2 (256 word pieces) a 512-token record-store unit is
read by its start only; the ``records`` piece rule embeds each record (and
windows of a longer one), so more sequences and more word pieces are
embedded. For each store and each piece rule: sequences embedded, word
pieces the model actually reads (each sequence truncated at its window),
seconds with no vector cache, and both rates. Ratios are measured in one
run, on one machine, one rule after the other.

The CPU profile embeds on numpy (``muster_exact.models.numpy_bert``); the torch float64 path computes
the same vectors (``models.SentenceTransformerEmbedder``). The second table runs both on the same
pieces, one after the other in this process, and counts the vectors that differ (the goal: 0);
the third times one short query, as a read embeds it.

    python scripts/bench_embed.py --data ../shared/data --out results/bench/embed.md
"""

from __future__ import annotations

import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

from bench_common import parser as bench_parser
from bench_common import write_report
from threadpoolctl import threadpool_limits

from muster_exact import __version__
from muster_exact.memory import embedding_pieces, planned
from muster_exact.models import SentenceTransformerEmbedder, lanes, load_embedder, load_window, profile
from muster_exact.verify.corpora import beam_chat_file, beam_source, locomo_stores

MODELS = "cpu-small"


def stores(data: Path) -> list[tuple[str, object, str]]:
    import json

    locomo = next(locomo_stores(data / "locomo/locomo10.json"))
    chat = beam_chat_file(data / "beam/100K/1")
    assert chat is not None
    beam = beam_source(json.loads(chat.read_text(encoding="utf-8")))
    return [("LoCoMo conv-26", locomo.source, "locomo.u10"), ("BEAM-100K chat 1", beam, "beam.u10")]


def measure(source: object, preset: str, rule: str) -> dict[str, float]:
    models = profile(MODELS)
    _, cut, _, _ = planned(source, preset, MODELS)
    pieces = embedding_pieces(cut, models, rule)
    window = load_window(models.embedder)
    read = sum(min(n, window.size) for n in window.pieces(list(pieces.texts)))
    embedder = load_embedder(models.embedder)
    embedder.embed(["warm-up"])
    started = time.perf_counter()
    embedder.embed(list(pieces.texts))
    seconds = time.perf_counter() - started
    return {"units": len(cut.units), "sequences": len(pieces.texts), "word_pieces": read, "seconds": seconds}


QUERY = "When did Caroline go to the LGBTQ support group?"
QUERY_REPEATS = 50


def paths(source: object, preset: str) -> list[dict[str, float | str]]:
    """The numpy path on every lane (the library's rule), on one lane, and the torch float64 path,
    on the same pieces (native rule), one after the other: seconds, rate, floating-point work, and
    the vectors that differ from the numpy ones after the float32 rounding."""
    import numpy as np

    models = profile(MODELS)
    _, cut, _, _ = planned(source, preset, MODELS)
    texts = list(embedding_pieces(cut, models, "records").texts)
    window = load_window(models.embedder)
    read = sum(min(n, window.size) for n in window.pieces(texts))
    numpy_embedder = load_embedder(models.embedder)
    flops = forward_flops(numpy_embedder, texts)
    all_lanes = lanes.LANES
    runs = (
        (f"numpy, {all_lanes.count} lanes (the rule)", numpy_embedder, all_lanes),
        ("numpy, one lane", numpy_embedder, lanes.Lanes(1)),
        ("torch float64", SentenceTransformerEmbedder(models.embedder), all_lanes),
    )
    out: list[dict[str, float | str]] = []
    vectors = []
    for name, embedder, chosen in runs:
        lanes.LANES = chosen
        try:
            embedder.embed(["warm-up"])
            started = time.perf_counter()
            vectors.append(embedder.embed(texts))
            seconds = time.perf_counter() - started
        finally:
            lanes.LANES = all_lanes
        out.append({"path": name, "sequences": len(texts), "word_pieces": read, "seconds": seconds,
                    "flops": flops})  # fmt: skip
    for row, v in zip(out, vectors, strict=True):
        row["differ"] = int((v.view(np.uint32) != vectors[0].view(np.uint32)).any(axis=1).sum())
    return out


def forward_flops(embedder: object, texts: list[str]) -> float:
    """Floating-point operations of the forward passes over ``texts`` (a multiply-add is two):
    the six products of each layer, attention's two included, from the model's shapes and each
    text's word pieces; the element-wise work (GELU, softmax, norms) is left out."""
    bert = embedder._bert  # type: ignore[attr-defined]
    hidden, inner = bert.dimension, bert._w["encoder.layer.0.intermediate.dense.weight"].shape[1]
    total = 0.0
    for ids in bert.token_ids(texts):
        n = len(ids)
        per_layer = 2 * n * hidden * (3 * hidden + hidden + 2 * inner) + 2 * 2 * n * n * hidden
        total += bert.layers * per_layer
    return total


def float64_peak() -> dict[str, float]:
    """What these cores' float64 products reach: GFLOP/s of one 2,048-square matrix product on
    one BLAS thread and on every core, best of three (OpenBLAS's own kernel: the practical peak)."""
    import numpy as np

    a = np.random.default_rng(0).standard_normal((2048, 2048))
    flops = 2 * 2048**3
    found = {}
    for label, threads in (("one core", 1), ("every core", lanes.cores())):
        with threadpool_limits(limits=threads, user_api="blas"):
            best = min(_timed(lambda: a @ a) for _ in range(3))
        found[label] = flops / best / 1e9
    return found


def _timed(call) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def query_times() -> list[tuple[str, float, float]]:
    """Median and p95 milliseconds to embed one short query, per path."""
    import numpy as np

    models = profile(MODELS)
    rows = []
    for name, embedder in (("numpy", load_embedder(models.embedder)),
                           ("torch float64", SentenceTransformerEmbedder(models.embedder))):  # fmt: skip
        embedder.embed([QUERY])
        times = []
        for _ in range(QUERY_REPEATS):
            started = time.perf_counter()
            embedder.embed([QUERY])
            times.append((time.perf_counter() - started) * 1000)
        rows.append((name, float(np.median(times)), float(np.percentile(times, 95))))
    return rows


def main() -> None:
    parser = bench_parser(__doc__, "results/bench/embed.md")
    args = parser.parse_args()
    lines = [
        "# embedding cost: whole units vs pieces (cpu-small)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_embed.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, packaged all-MiniLM-L6-v2 "
        "(window 256 word pieces), no vector cache. Wall clock on a shared machine.",
        "",
        "| store | rule | units | sequences | word pieces read | seconds | word pieces/s | x whole units |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, source, preset in stores(args.data):
        whole = measure(source, preset, "unit")
        pieces = measure(source, preset, "records")
        for rule, m in (("whole units", whole), ("pieces (records)", pieces)):
            lines.append(
                f"| {label} | {rule} | {m['units']:,} | {m['sequences']:,} | {m['word_pieces']:,} | "
                f"{m['seconds']:.1f} | {m['word_pieces'] / m['seconds']:,.0f} | "
                f"{m['seconds'] / whole['seconds']:.2f} |"
            )
    lines += [
        "",
        "Word pieces read: each sequence's word pieces up to the window, what the model computes over. "
        "Whole units read only the first 254 word pieces of each unit; pieces read every word. "
        "The CPU profile's embedder here is the numpy one.",
        "",
        "## numpy against torch float64, the same pieces (issues 29, 53)",
        "",
        "The library's rule (decision 0208): the forward passes spread over lanes, one per core, "
        "each on one BLAS thread. One lane is the same arithmetic on one core; torch float64 runs "
        "with its own threads. Goal: the rule at >= 90% of torch float64's rate.",
        "",
        "| store | path | sequences | word pieces read | seconds | word pieces/s | x torch float64 rate "
        "| GFLOP/s | share of the cores' peak | vectors that differ from the rule's |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    peak = float64_peak()
    for label, source, preset in stores(args.data):
        both = paths(source, preset)
        torch_rate = float(both[-1]["word_pieces"]) / float(both[-1]["seconds"])
        for m in both:
            rate = float(m["word_pieces"]) / float(m["seconds"])
            gflops = float(m["flops"]) / float(m["seconds"]) / 1e9
            lines.append(
                f"| {label} | {m['path']} | {m['sequences']:,} | {m['word_pieces']:,} | {m['seconds']:.1f} | "
                f"{rate:,.0f} | {rate / torch_rate:.2f} | {gflops:.1f} | {gflops / peak['every core']:.0%} | "
                f"{m['differ']} of {m['sequences']:,} |"
            )
    lines += [
        "",
        f"The float64 peak, measured here as OpenBLAS's own 2,048-square product (best of three): "
        f"{peak['one core']:.1f} GFLOP/s on one core, {peak['every core']:.1f} GFLOP/s on "
        f"{lanes.cores()} cores. GFLOP/s counts the forward passes' products (the six of each "
        "layer, attention's two included, from each text's word pieces); the element-wise work "
        "(the exact GELU's erf, softmax, norms) is not counted, so the share understates the work done.",
        "",
    ]
    lines += [
        "",
        f"One query ({len(QUERY.split())} words) embedded alone, {QUERY_REPEATS} times after a warm-up:",
        "",
        "| path | median ms | p95 ms |",
        "|---|---|---|",
        *(f"| {name} | {median:.1f} | {p95:.1f} |" for name, median, p95 in query_times()),
        "",
        "Reads (a query, a read after an add, a server's requests) use the numpy path, so they never "
        "import torch; a build does too, on every lane (one rule for every build and read).",
        "",
    ]
    write_report(args.out, lines)


if __name__ == "__main__":
    main()
