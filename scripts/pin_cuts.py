"""Re-pin muster_exact/manifests/cuts.json from the data (run on purpose, review the diff).

python scripts/pin_cuts.py --data ../shared/data
"""

from __future__ import annotations

import argparse
from pathlib import Path

from muster_exact import verify


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--manifest", type=Path, default=verify.default_manifest())
    args = parser.parse_args()
    rows = list(verify.measure(args.data))
    verify.write_manifest(args.manifest, rows)
    print(f"pinned {len(rows)} stores in {args.manifest}")


if __name__ == "__main__":
    main()
