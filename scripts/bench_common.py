"""What the benchmark scripts share: writing a report, waiting for a server to answer."""

from __future__ import annotations

import time
from pathlib import Path


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
