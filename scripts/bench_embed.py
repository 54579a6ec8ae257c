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

import argparse
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

from muster_exact import __version__
from muster_exact.memory import embedding_pieces, planned
from muster_exact.models import SentenceTransformerEmbedder, load_embedder, load_window, profile
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
    """The numpy and the torch float64 path on the same pieces (native rule): seconds, rate, and
    the vectors that differ after the float32 rounding."""
    models = profile(MODELS)
    _, cut, _, _ = planned(source, preset, MODELS)
    texts = list(embedding_pieces(cut, models, "records").texts)
    window = load_window(models.embedder)
    read = sum(min(n, window.size) for n in window.pieces(texts))
    out: list[dict[str, float | str]] = []
    vectors = []
    for name, embedder in (("numpy", load_embedder(models.embedder)),
                           ("torch float64", SentenceTransformerEmbedder(models.embedder))):  # fmt: skip
        embedder.embed(["warm-up"])
        started = time.perf_counter()
        vectors.append(embedder.embed(texts))
        seconds = time.perf_counter() - started
        out.append({"path": name, "sequences": len(texts), "word_pieces": read, "seconds": seconds})
    differ = int((vectors[0] != vectors[1]).any(axis=1).sum())
    for row in out:
        row["differ"] = differ
    return out


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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("MUSTER_DATA", "../shared/data")))
    parser.add_argument("--out", type=Path, default=Path("results/bench/embed.md"))
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
        "## numpy against torch float64, the same pieces (issue 29)",
        "",
        "| store | path | sequences | word pieces read | seconds | word pieces/s | x numpy "
        "| vectors that differ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, source, preset in stores(args.data):
        both = paths(source, preset)
        for m in both:
            lines.append(
                f"| {label} | {m['path']} | {m['sequences']:,} | {m['word_pieces']:,} | {m['seconds']:.1f} | "
                f"{float(m['word_pieces']) / float(m['seconds']):,.0f} | "
                f"{float(m['seconds']) / float(both[0]['seconds']):.2f} | "
                f"{m['differ']} of {m['sequences']:,} |"
            )
    lines += [
        "",
        f"One query ({len(QUERY.split())} words) embedded alone, {QUERY_REPEATS} times after a warm-up:",
        "",
        "| path | median ms | p95 ms |",
        "|---|---|---|",
        *(f"| {name} | {median:.1f} | {p95:.1f} |" for name, median, p95 in query_times()),
        "",
        "Reads (a query, a read after an add, a server's requests) use the numpy path, so they never "
        "import torch; a large build does too, at the rate above (one rule for every build).",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
