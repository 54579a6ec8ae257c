"""Pin a harness run's per-question context SHA-256 in manifests/contexts/ (run on purpose).

python scripts/pin_contexts.py results/runs/locomo/locomo.u10/cpu-small/muster/<key>
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness import runs
from muster_exact import verify_contexts

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path, help="a run directory of system muster")
    args = parser.parse_args()
    identity = json.loads((args.run / "run.json").read_text())["identity"]
    if identity["system"] != "muster":
        raise SystemExit("only MUSTER's own contexts are pinned")
    benchmark, preset, models = identity["benchmark"]["name"], identity["preset"], identity["models"]
    path = MANIFESTS / "contexts" / benchmark / preset / f"{models}.json"
    n = verify_contexts.write(path, benchmark, preset, models, runs.complete_lines(args.run / runs.CONTEXTS))
    print(f"pinned {n} context hashes in {path}")


if __name__ == "__main__":
    main()
