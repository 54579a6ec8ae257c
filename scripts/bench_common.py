"""What the benchmark scripts share: their parser, writing a report, waiting for a server."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def parser(doc: str, out: str) -> argparse.ArgumentParser:
    """A bench script's parser: ``--data`` (the benchmark data) and ``--out`` (its report)."""
    found = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--data", type=Path, default=Path(os.environ.get("MUSTER_DATA", "../shared/data")))
    found.add_argument("--out", type=Path, default=Path(out))
    return found


def write_report(out: Path, lines: list[str]) -> None:
    """The report's lines to ``out`` (its folder made) and to stdout."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


def wait_until_healthy(url: str, tries: int = 600) -> None:
    """Until ``url``'s ``/healthz`` answers 200 (a tenth of a second between tries)."""
    import httpx

    for _ in range(tries):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer /healthz")
