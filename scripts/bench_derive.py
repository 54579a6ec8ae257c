"""Benchmark ``derive`` against the tokenizer pass it cannot avoid.

For every benchmark store under --data, and for one ~10M-token store made by
concatenating every real BEAM chat here, measure:

* derive (``analyse``: normalise, detect, cut, plan);
* tiktoken's own ``encode_ordinary`` over the same text, one call.

and, on the big store, why derive counts tokens on one thread: a plain loop
over the records against tiktoken's ``encode_ordinary_batch`` on every core.

Writes a Markdown report (MB/s, tokens/s, ratios). Each timing is the best
of --repeat runs in one process, so ratios compare like with like on a noisy
machine. This is a benchmark, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from muster_exact import __version__, analyse
from muster_exact.text import tokens
from muster_exact.text.records import RECORD_SEPARATOR, from_text
from muster_exact.verify.corpora import BenchmarkStore, beam_stores, find_stores


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(name: str, text: str, repeat: int) -> dict[str, float | str | int]:
    enc = tokens.encoding()
    n_tokens = len(enc.encode_ordinary(text))
    t_encode = best_of(repeat, lambda: enc.encode_ordinary(text))
    t_derive = best_of(repeat, lambda: analyse(text))
    branch = analyse(text).plan.branch
    mb = len(text.encode()) / 1e6
    return {
        "store": name,
        "branch": branch,
        "mb": mb,
        "tokens": n_tokens,
        "encode_s": t_encode,
        "derive_s": t_derive,
    }


def thread_check(text: str) -> str:
    """One-thread loop vs tiktoken's threaded batch, counting the same records."""
    records = [text[r.start : r.end] for r in from_text(text).records]
    enc = tokens.encoding()
    loop = best_of(1, lambda: tokens.count_many(records))
    batch = best_of(1, lambda: enc.encode_ordinary_batch(records, num_threads=os.cpu_count() or 1))
    return (
        f"Counting the {len(records):,} records of the big store: one-thread loop {loop:.2f} s, "
        f"`encode_ordinary_batch` on {os.cpu_count()} threads {batch:.2f} s."
    )


def ten_million_store(data: Path, target_tokens: int) -> str:
    parts: list[str] = []
    total = 0
    for store in beam_stores(data / "beam"):
        parts.append(store.source.text)
        total += sum(tokens.count_many([store.source.text[r.start : r.end] for r in store.source.records]))
        if total >= target_tokens:
            break
    return RECORD_SEPARATOR.join(parts)


def report(rows: list[dict], threads_note: str) -> str:
    def line(r: dict) -> str:
        return (
            f"| {r['store']} | {r['branch']} | {r['mb']:.2f} | {r['tokens']:,} | "
            f"{r['mb'] / r['derive_s']:.1f} | {r['tokens'] / r['derive_s'] / 1e6:.2f} | "
            f"{r['derive_s'] / r['encode_s']:.2f} |"
        )

    total = {
        k: sum(r[k] for r in rows if not r["store"].startswith("BEAM concat"))
        for k in ("mb", "tokens", "encode_s", "derive_s")
    }
    total.update(store="**all benchmark stores**", branch="-")
    return "\n".join(
        [
            "# derive benchmark",
            "",
            f"Measured {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by `scripts/bench_derive.py`; "
            f"muster {__version__}, Python {platform.python_version()}, {os.cpu_count()} cores. "
            "Best of the repeats (the big store: one run); wall clock on a shared machine.",
            "",
            "`ratio` = derive time / tiktoken `encode_ordinary` time on the same text (one call). "
            "Goal: ratio <= 1.5. The last row sums the benchmark stores (not the big one).",
            "",
            "| store | branch | MB | tokens | MB/s | Mtok/s | ratio |",
            "|---|---|---|---|---|---|---|",
            *(line(r) for r in rows),
            line(total),
            "",
            threads_note,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("results/bench/derive.md"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-tokens", type=int, default=10_000_000)
    args = parser.parse_args()
    tokens.encoding()  # load once, outside every timing
    rows = []
    stores: list[BenchmarkStore] = list(find_stores(args.data))
    for i, store in enumerate(stores, 1):
        rows.append(measure(store.name, store.source.text, args.repeat))
        print(
            f"[{i}/{len(stores)}] {store.name}: ratio {rows[-1]['derive_s'] / rows[-1]['encode_s']:.2f}",
            flush=True,
        )
    big = ten_million_store(args.data, args.big_tokens)
    rows.append(measure("BEAM concat (all chats)", big, 1))
    print(f"[big] {rows[-1]['tokens']:,} tokens: ratio {rows[-1]['derive_s'] / rows[-1]['encode_s']:.2f}")
    note = thread_check(big)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(rows, note), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
