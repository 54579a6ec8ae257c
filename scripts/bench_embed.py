"""Benchmark what embedding costs when the embedder sees whole units vs pieces (issue 11).

With all-MiniLM-L6-v2 (256 word pieces) a 512-token record-store unit is
read by its start only; the ``records`` piece rule embeds each record (and
windows of a longer one), so more sequences and more word pieces are
embedded. For each store and each piece rule: sequences embedded, word
pieces the model actually reads (each sequence truncated at its window),
seconds with no vector cache, and both rates. Ratios are measured in one
run, on one machine, one rule after the other.

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
from muster_exact.corpora import beam_chat_file, beam_source, locomo_stores
from muster_exact.memory import embedding_pieces, planned
from muster_exact.models import load_embedder, load_window, profile
from muster_exact.rules import EXACT

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
    pieces = embedding_pieces(cut, models, EXACT.replace(pieces=rule))
    window = load_window(models.embedder)
    read = sum(min(n, window.size) for n in window.pieces(list(pieces.texts)))
    embedder = load_embedder(models.embedder)
    embedder.embed(["warm-up"])
    started = time.perf_counter()
    embedder.embed(list(pieces.texts))
    seconds = time.perf_counter() - started
    return {"units": len(cut.units), "sequences": len(pieces.texts), "word_pieces": read, "seconds": seconds}


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
        "Whole units read only the first 254 word pieces of each unit; pieces read every word.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
