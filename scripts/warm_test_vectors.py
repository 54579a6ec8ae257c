"""The test session's vector cache, filled before pytest starts its workers (``make test``).

Tests that read benchmark stores without testing a cold cache read the session's cache
(``$MUSTER_HOME/vectors.sqlite``). Two workers asking for the same texts at once would each embed
them, and a test that fills the cache alone runs long at the end of the session; embedding them
here first, once, with both cores, leaves every such test reading. The stores are the ones those
tests build: the determinism golden's (every preset family, both rule sets: its own builds) and
the eight FactConsolidation stores under ``mab.u10`` (tests/memory/test_supersession.py).
Vectors depend on the text alone (not the CPU, the batch or the process: tests/integration/
test_determinism.py), so reading them changes no context. Without the data it does nothing.

    python scripts/warm_test_vectors.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_contexts import compute

from muster_exact.cache.vectors import default_path
from muster_exact.memory import build
from muster_exact.rules import EXACT
from muster_exact.verify.corpora import mab_stores


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"warm_test_vectors: no data at {args.data}; the tests that read it skip", file=sys.stderr)
        return
    started = time.perf_counter()
    cache = default_path()
    compute(args.data, None, str(cache))
    for store in mab_stores(args.data / "memoryagentbench/data/Conflict_Resolution.json"):
        build(store.source, preset="mab.u10", models="cpu-small", rules=EXACT, cache=cache)
    print(f"warm_test_vectors: {cache} filled in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
