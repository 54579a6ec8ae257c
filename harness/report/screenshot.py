"""The results page in a headless browser: Debian's chromium driven by selenium through
chromedriver (``make browser`` installs them). The browser test opens the page with
:func:`browser`; ``make report`` saves the committed screenshot, ``results/index.png``, with
:func:`full_page_png` (a test never writes it: ``make test`` leaves the clone as it found it)."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

WIDTH = 1400
INSTALL = "install them with `make browser` (apt-get install chromium chromium-driver, as root)"


class NoBrowser(RuntimeError):
    """chromium, chromedriver or selenium is missing."""


@contextmanager
def browser(page: Path | str, profile: Path) -> Iterator[Any]:
    """A headless chromium showing ``page`` (a file, or a URL), its profile under ``profile``;
    NoBrowser without one."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        raise NoBrowser("no chromium or chromedriver on PATH")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise NoBrowser("selenium is not installed (the dev extra)") from None
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for argument in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", f"--window-size={WIDTH},1000", "--hide-scrollbars",
    ):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(driver_path)))
    try:
        driver.get(page if isinstance(page, str) else page.as_uri())
        yield driver
    finally:
        driver.quit()


def full_page_png(driver: Any) -> tuple[bytes, int]:
    """The whole page, ``WIDTH`` wide, as PNG bytes, and its height in CSS pixels."""
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    height = int(metrics["cssContentSize"]["height"])
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1},
        },
    )
    return base64.b64decode(shot["data"]), height
