"""``make report``: the results page, one static HTML file (``results/index.html``).

python scripts/report.py                     # the committed tables, the runs under results/runs
python scripts/report.py --tables T --results R --expected E --out page.html
python scripts/report.py --screenshot results/index.png   # also the page in chromium, as a PNG

Reads the comparison tables, the expected-score pin, the reproduction record
(``reproduce.json``), the run timings, ``results/bench/`` and the judge-audit tables, each
optional (a missing one is a note on the page), and writes the page (harness/report/page.py).
``make reproduce`` runs this as its last step.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.report import page as report  # noqa: E402
from harness.report import screenshot  # noqa: E402


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
    parser.add_argument(
        "--screenshot", type=Path, default=None, help="also save the page, full length, as this PNG"
    )
    args = parser.parse_args()
    out = args.out or args.tables / "index.html"
    html = report.page(report.Sources(args.tables, args.results, args.expected))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    print(f"results page: {out} ({len(html.encode('utf-8')):,} bytes)")
    if args.screenshot is not None:
        save_screenshot(out, args.screenshot)


def save_screenshot(page: Path, target: Path) -> None:
    """The page in headless chromium, saved as ``target``; without a browser, a line saying so
    (the page itself is written either way)."""
    with tempfile.TemporaryDirectory() as profile:
        try:
            with screenshot.browser(page.resolve(), Path(profile)) as driver:
                data, height = screenshot.full_page_png(driver)
        except screenshot.NoBrowser as missing:
            print(f"{target} not updated: {missing}; {screenshot.INSTALL}", file=sys.stderr)
            return
    target.write_bytes(data)
    print(f"screenshot: {target} ({screenshot.WIDTH} x {height} px)")


if __name__ == "__main__":
    main()
