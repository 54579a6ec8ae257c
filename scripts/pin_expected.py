"""Pin the expected scores of ``make reproduce`` in manifests/expected.yaml (run on purpose).

python scripts/pin_expected.py                 # the tables of the whole reproduction
python scripts/pin_expected.py --tables T --benchmarks mab --units 10 --out E   # a subset

Reads the tables a reproduction wrote (every benchmark's comparison table per preset, and the
re-scored published outputs) and writes each figure with the default tolerances. Pin after a
change that is meant to move a score, and say why in the commit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.report import expected  # noqa: E402
from harness.report.reproduction import PUBLISHED_TABLES, UNITS, comparison_table, presets_of, reproduced  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", type=Path, default=REPO / "results")
    parser.add_argument("--out", type=Path, default=REPO / "manifests" / "expected.yaml")
    parser.add_argument("--benchmarks", nargs="+", default=None)
    parser.add_argument("--units", nargs="+", type=int, default=list(UNITS))
    parser.add_argument("--no-published", action="store_true", help="leave the published tables out")
    args = parser.parse_args()
    tables = [
        args.tables / comparison_table(benchmark, preset)
        for benchmark in args.benchmarks or reproduced()
        for preset in presets_of(benchmark, tuple(args.units))
    ]
    if not args.no_published:
        tables += [args.tables / t for t in PUBLISHED_TABLES]
    missing = [str(t) for t in tables if not t.is_file()]
    if missing:
        raise SystemExit(f"pin_expected: no table at {', '.join(missing)}; run make reproduce first")
    n = expected.dump(args.out, args.tables, tables, expected.DEFAULT_TOLERANCE)
    print(f"pinned {n} figures of {len(tables)} tables in {args.out}")


if __name__ == "__main__":
    main()
