"""Pin a harness run's per-question context SHA-256 in muster_exact/manifests/contexts/ (run on purpose).

python scripts/pin_contexts.py results/runs/locomo/locomo.u10/cpu-small/muster/<key>
(a muster run pins the exact rules, a muster_native run the native ones)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import runs
from harness.systems import PINNED
from muster_exact import verify
from muster_exact.verify import contexts as verify_contexts

MANIFESTS = verify.manifest_dir()  # shipped in the package: `muster verify contexts` reads them there


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path, nargs="+", help="run directories of system muster or muster_native")
    parser.add_argument("--pins", type=Path, default=MANIFESTS, help="where (default: the shipped manifests)")
    args = parser.parse_args()
    for run in args.run:
        pin(run, args.pins)


def pin(run: Path, pins: Path = MANIFESTS) -> None:
    identity = json.loads((run / "run.json").read_text())["identity"]
    if identity["system"] not in PINNED:
        raise SystemExit("only MUSTER's own contexts are pinned (systems muster and muster_native)")
    rules = PINNED[identity["system"]]
    benchmark, preset, models = identity["benchmark"]["name"], identity["preset"], identity["models"]
    path = verify_contexts.path_for(pins, benchmark, preset, models, rules)
    n = verify_contexts.write(
        path, benchmark, preset, models, rules, runs.complete_lines(run / runs.CONTEXTS)
    )
    print(f"pinned {n} context hashes in {path}")


if __name__ == "__main__":
    main()
