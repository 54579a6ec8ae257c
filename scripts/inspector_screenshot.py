"""``make inspector``: the inspector page's screenshot, ``results/inspector.png``.

python scripts/inspector_screenshot.py --data ../shared/data --out results/inspector.png

Builds a store of the first LoCoMo conversation's first turns in a temporary folder, serves it with
``muster http`` and a token on a free port of 127.0.0.1, opens the inspector in headless chromium
(harness/report/screenshot.py), enters the token, asks a question (harness/report/inspector.py) and
saves the page, full length. tests/serve/test_inspector_page.py takes the same steps and checks
them; it writes no file.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.report import inspector, screenshot  # noqa: E402
from muster_exact.store import Store  # noqa: E402

UNITS = 3  # a short read: the page fits a screen or two


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="the benchmark data (locomo/locomo10.json)")
    parser.add_argument("--out", type=Path, default=Path("results/inspector.png"))
    args = parser.parse_args()
    token = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "locomo.muster"
        with Store.open(store, models="cpu-small") as opened:
            opened.add(inspector.locomo_records(args.data))
        with served(store, token) as url:
            try:
                with screenshot.browser(url, Path(folder) / "profile") as driver:
                    inspector.enter_token(driver, token)
                    inspector.ask(driver, inspector.QUESTION, UNITS)
                    data, height = screenshot.full_page_png(driver)
            except screenshot.NoBrowser as missing:
                sys.exit(f"{args.out} not updated: {missing}; {screenshot.INSTALL}")
    args.out.write_bytes(data)
    print(f"screenshot: {args.out} ({screenshot.WIDTH} x {height} px)")


@contextmanager
def served(store: Path, token: str) -> Iterator[str]:
    """``muster http`` over ``store`` with ``token``, on a free port of 127.0.0.1: its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MUSTER_HTTP_TOKEN": token, "MUSTER_MODELS": "cpu-small"}
    command = [sys.executable, "-m", "muster_exact", "http", "--store", str(store), "--port", str(port)]
    process = subprocess.Popen(command, cwd=REPO, env=env)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}healthz", timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"muster http did not start (exit {process.poll()})")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
