"""The CPU profile's vectors on numpy against the torch float64 path's, on every benchmark store.

Issue 29: the numpy forward pass (``muster_exact.models.numpy_bert``) must give the vectors the torch
float64 path gave, after the float32 rounding, on every piece ``make reproduce`` embeds. Those
vectors are in the vector cache (``$MUSTER_HOME/vectors.sqlite``), computed by the torch path
before the numpy one existed and keyed by the same ``model_id``. For every reproduced benchmark
store, in exact mode (the family's preset) and native mode, this lists the pieces a build embeds
(``planned()`` and ``embedding_pieces()``, the build's own functions), computes them afresh on numpy, and
counts the rows that differ from the cached ones (the goal: 0), and the pieces the cache lacks.

    python scripts/check_numpy_vectors.py --data ../shared/data --out results/bench/vectors.md
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import benchmarks  # noqa: E402
from harness.report import reproduction  # noqa: E402
from muster_exact import __version__  # noqa: E402
from muster_exact.cache.memo import Memo  # noqa: E402
from muster_exact.cache.vectors import VectorCache, default_path, text_key  # noqa: E402
from muster_exact.core import progress  # noqa: E402
from muster_exact.core.shipped import shipped  # noqa: E402
from muster_exact.memory import embedding_pieces, planned, rules_of  # noqa: E402
from muster_exact.models import load_embedder, profile  # noqa: E402
from muster_exact.models.numpy_bert import NumpyEmbedder  # noqa: E402
from muster_exact.text import tokens  # noqa: E402
from muster_exact.verify.contexts import load, manifest_paths  # noqa: E402
from muster_exact.verify.corpora import benchmark_stores  # noqa: E402

MODELS = "cpu-small"
BATCH = 2_000  # pieces compared per step (bounded memory, progress between steps)
DIFFERING: dict[str, tuple[Any, Any]] = {}  # key -> (numpy vector, cached torch vector)


def pinned_stores(benchmark: str) -> set[str]:
    """The stores the benchmark's shipped context manifests cover (what `make reproduce` reads)."""
    root = Path(str(shipped("manifests")))
    return {
        name for path in manifest_paths(root) for name in load(path)["stores"] if path.parts[-3] == benchmark
    }


def pieces_of(benchmark: str, data: Path) -> dict[str, str]:
    """Every piece text a build of the benchmark's pinned stores embeds, in exact and native mode,
    by key."""
    preset = reproduction.presets_of(benchmark)[0]  # the cut and the pieces do not depend on U
    pinned = pinned_stores(benchmark)
    found: dict[str, str] = {}
    memo = Memo()
    for store in (s for s in benchmark_stores(benchmark, data) if s.name in pinned):
        for mode_preset in (preset, None):
            plan, cut, models, _ = planned(store.source, mode_preset, models=MODELS, memo=memo)
            pieces = embedding_pieces(cut, models, rules_of(plan).pieces, memo)
            found.update((text_key(text), text) for text in pieces.texts)
    return found


def compare(
    texts: dict[str, str], embedder: NumpyEmbedder, cache: VectorCache, every: int, seen: dict[str, bool]
) -> dict[str, int]:
    """Counts for one benchmark's pieces: every ``every``-th (in key order) is compared, once per
    run (``seen``: whether a key compared for an earlier benchmark differed)."""
    import numpy as np

    chosen = sorted(texts)[::every]
    counts = {"pieces": len(texts), "compared": len(chosen), "differ": 0, "not_cached": 0}
    counts["differ"] = sum(seen[k] for k in chosen if k in seen)
    keys = [k for k in chosen if k not in seen]
    bar = progress.bar(len(keys), "pieces compared", "pieces")
    try:
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]
            cached = cache.get(embedder.model_id, chunk)
            present = [k for k in chunk if k in cached]
            counts["not_cached"] += len(chunk) - len(present)
            if present:
                ours = embedder.embed([texts[k] for k in present])
                theirs = np.vstack([np.frombuffer(cached[k], dtype=np.float32) for k in present])
                differs = (ours != theirs).any(axis=1)
                seen.update(zip(present, map(bool, differs), strict=True))
                counts["differ"] += int(differs.sum())
                for row in np.nonzero(differs)[0]:
                    DIFFERING[present[row]] = (ours[row], theirs[row])
            bar.update(len(chunk))
    finally:
        bar.close()
    return counts


def differing_rows() -> list[str]:
    """Each differing row: which of its components differ, and by how many float32 steps."""
    import numpy as np

    if not DIFFERING:
        return []
    out = [
        "The rows that differ (text SHA-256, the components that differ, the largest difference in "
        "float32 steps (ulp) and the component's value):",
        "",
        "| text | components | largest difference, ulp | value |",
        "|---|---|---|---|",
    ]
    for key, (ours, theirs) in sorted(DIFFERING.items()):
        components = np.nonzero(ours != theirs)[0]
        steps = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64))
        value = float(theirs[components[0]])
        out.append(f"| {key[:12]} | {', '.join(map(str, components))} | {int(steps.max())} | {value:.3g} |")
    return out


def replace(path: Path, model_id: str) -> None:
    """Write each differing row's numpy vector over the cached one in ``path`` (a copy of the cache)."""
    import sqlite3

    db = sqlite3.connect(path)
    with db:
        db.executemany(
            "UPDATE vectors SET vector = ? WHERE model = ? AND sha256 = ?",
            [(ours.tobytes(), model_id, key) for key, (ours, _) in DIFFERING.items()],
        )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--benchmarks", nargs="+", default=None, help="default: every reproduced benchmark")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--replace-in",
        type=Path,
        help="a copy of the vector cache in which each differing row is replaced by the numpy "
        "vector, so that `muster verify contexts` over it counts the contexts that move",
    )
    parser.add_argument(
        "--every",
        default="",
        help="benchmark=N,...: compare every N-th piece of that benchmark (in text-hash order, so "
        "spread over its stores), e.g. beam=10 where all would take hours; default: every piece",
    )
    args = parser.parse_args()
    tokens.prepare()
    embedder = load_embedder(profile(MODELS).embedder)
    if not isinstance(embedder, NumpyEmbedder):
        raise SystemExit(
            f"check_numpy_vectors: the CPU profile's embedder is {type(embedder).__name__}, not numpy"
        )
    cache = VectorCache(default_path(), access="ro")
    every = {name: int(n) for name, n in (part.split("=") for part in args.every.split(",") if part)}
    seen: dict[str, bool] = {}
    rows = []
    with progress.shown(True):
        for name in args.benchmarks or reproduction.reproduced():
            benchmarks.load(name)  # an unknown name fails here, with the registry's message
            started = time.perf_counter()
            counts = compare(pieces_of(name, Path(args.data)), embedder, cache, every.get(name, 1), seen)
            rows.append((name, counts, time.perf_counter() - started))
            print(f"{name}: {counts}", file=sys.stderr)
    lines = [
        "# The CPU profile's vectors: numpy against the torch float64 path (issue 29)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/check_numpy_vectors.py`; "
        f"muster {__version__}, Python {platform.python_version()}, {os.cpu_count()} cores.",
        "",
        "Every piece a build of each reproduced benchmark store (those its context manifests pin) "
        "embeds (exact mode with the family's "
        "preset and native mode), computed afresh on numpy (`muster_exact.models.numpy_bert`) and compared "
        "with the vector the torch float64 path cached for it under the same model id. A row differs "
        "if any of its 384 float32 values does. A piece two benchmarks share (LoCoMo-Refined's are "
        "LoCoMo's) is computed once; where fewer pieces were compared than there are, every N-th "
        "in text-hash order was (`--every`), spread over all of that benchmark's stores.",
        "",
        "| benchmark | pieces | chosen | differing rows | chosen but not in the cache | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for name, counts, seconds in rows:
        lines.append(
            f"| {name} | {counts['pieces']:,} | {counts['compared']:,} | {counts['differ']:,} "
            f"| {counts['not_cached']:,} "
            f"| {seconds:,.0f} |"
        )
    lines.append(f"| all: compared, distinct | | {len(seen):,} | {sum(seen.values()):,} | | |")
    lines += ["", *differing_rows()]
    if args.replace_in is not None:
        replace(args.replace_in, embedder.model_id)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
