"""``make report``: the results page, one static HTML file (``results/index.html``).

python scripts/report.py                     # the committed tables, the runs under results/runs
python scripts/report.py --tables T --results R --expected E --out page.html

Reads the comparison tables, the expected-score pin, the reproduction record
(``reproduce.json``), the run timings, ``results/bench/`` and the judge-audit tables, each
optional (a missing one is a note on the page), and writes the page (harness/report.py).
``make reproduce`` runs this as its last step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import report  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tables", type=Path, default=Path("results"), help="committed tables, bench/, audit/"
    )
    parser.add_argument(
        "--results", type=Path, default=Path("results/runs"), help="run records (git-ignored)"
    )
    parser.add_argument("--expected", type=Path, default=Path("manifests/expected.yaml"))
    parser.add_argument("--out", type=Path, default=None, help="default: <tables>/index.html")
    args = parser.parse_args()
    out = args.out or args.tables / "index.html"
    html = report.page(report.Sources(args.tables, args.results, args.expected))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    print(f"results page: {out} ({len(html.encode('utf-8')):,} bytes)")


if __name__ == "__main__":
    main()
