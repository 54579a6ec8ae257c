"""The results page (``make report``) in a real headless browser: Debian's chromium, driven by
selenium through chromedriver.

The page is built by ``scripts/report.py`` from the repository's committed tables, bench files
and audit tables (the run records under results/runs when this machine has them), checked against
manifests/expected.yaml. The browser must log no console error; the matrix must hold a row per system per
benchmark with coloured cells; every plot must draw a series per system (checked in the DOM and in
the plot's own screenshot); and the full-page screenshot must not be blank. The test keeps no
file: ``make report`` saves the committed screenshot, results/index.png
(harness/report/screenshot.py).

Without chromium or chromedriver the tests skip, unless MUSTER_BROWSER_REQUIRED=1 (``make test``
sets it, after ``make browser`` installs them): then they fail and say how to install them.
"""

from __future__ import annotations

import csv
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.report import expected, screenshot
from harness.report import page as report
from harness.systems import NATIVE_ABLATIONS, SYSTEMS
from tests.conftest import REPO

WIDTH, INSTALL = screenshot.WIDTH, screenshot.INSTALL


def unavailable(reason: str) -> None:
    if os.environ.get("MUSTER_BROWSER_REQUIRED") == "1":
        pytest.fail(f"{reason}; MUSTER_BROWSER_REQUIRED=1 (make test): {INSTALL}")
    pytest.skip(f"{reason}; {INSTALL}")


# --- the page -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    out = folder / "index.html"
    command = [
        sys.executable, str(REPO / "scripts" / "report.py"),
        "--tables", str(REPO / "results"), "--results", str(REPO / "results" / "runs"),
        "--expected", str(REPO / "manifests" / "expected.yaml"), "--out", str(out),
    ]  # fmt: skip
    built = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return out


def plotted_systems(benchmark: str, family: str) -> set[str]:
    """The systems the benchmark's committed comparison tables hold (read here, not by the page),
    but native's ablations, which the page leaves to the tables."""
    found: set[str] = set()
    for preset in report.presets(family):
        path = REPO / "results" / report.comparison_path(benchmark, preset)
        if path.is_file():
            with path.open(encoding="utf-8") as handle:
                found |= {row["system"] for row in csv.DictReader(handle)}
    return found - set(NATIVE_ABLATIONS)


# --- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(page: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        with screenshot.browser(page, tmp_path_factory.mktemp("chromium-profile")) as driver:
            yield driver
    except screenshot.NoBrowser as missing:
        unavailable(str(missing))


def find(driver: Any, css: str) -> list[Any]:
    return list(driver.find_elements("css selector", css))


# --- PNG decoding (zlib and numpy; no imaging library) ------------------------------------------


def png_pixels(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG (what chromium writes) as a (height, width, channels) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
    assert header is not None, "no IHDR chunk"
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG header {header}"
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), dtype=np.uint8)
    rows = raw.reshape(height, width * channels + 1)
    out = np.zeros((height, width * channels), dtype=np.uint8)
    previous = np.zeros(width * channels, dtype=np.uint8)
    for y in range(height):
        out[y] = unfilter(int(rows[y, 0]), rows[y, 1:], previous, channels)
        previous = out[y]
    pixels: np.ndarray = out.reshape(height, width, channels)
    return pixels


def unfilter(kind: int, line: np.ndarray, previous: np.ndarray, bpp: int) -> np.ndarray:
    """One scanline without its PNG filter (None, Sub, Up vectorised; Average, Paeth per byte)."""
    if kind == 0:
        return line
    if kind == 1:
        summed: np.ndarray = np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        return summed
    if kind == 2:
        added: np.ndarray = line + previous  # uint8: wraps modulo 256, as the filter does
        return added
    current, above = [0] * len(line), previous.tolist()
    for i, value in enumerate(line.tolist()):
        left = current[i - bpp] if i >= bpp else 0
        if kind == 3:
            current[i] = (value + (left + above[i]) // 2) & 0xFF
            continue
        corner = above[i - bpp] if i >= bpp else 0
        estimate = left + above[i] - corner
        a, b, c = abs(estimate - left), abs(estimate - above[i]), abs(estimate - corner)
        predictor = left if a <= b and a <= c else above[i] if b <= c else corner
        current[i] = (value + predictor) & 0xFF
    return np.array(current, dtype=np.uint8)


def distinct_colours(pixels: np.ndarray) -> int:
    rgb = pixels[..., :3].astype(np.uint32)
    return len(np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]))


def coloured_pixels(pixels: np.ndarray) -> int:
    """Pixels of a saturated colour (the series' strokes), not the greys of axes, grid and text."""
    rgb = pixels[..., :3].astype(np.int16)
    return int(((rgb.max(axis=-1) - rgb.min(axis=-1)) > 80).sum())


# --- the tests ----------------------------------------------------------------------------------


def test_the_png_decoder_reads_every_filter() -> None:
    """The decoder the screenshot checks rest on, on a PNG written here with each of the five
    filters (zlib only), back to the same pixels."""
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(10, 7, 3), dtype=np.uint8)
    flat = pixels.reshape(10, -1).astype(np.int16)
    lines = []
    for y in range(10):
        kind = y % 5
        above = flat[y - 1] if y else np.zeros_like(flat[0])
        left = np.concatenate([np.zeros(3, dtype=np.int16), flat[y, :-3]])
        corner = np.concatenate([np.zeros(3, dtype=np.int16), above[:-3]])
        estimate = left + above - corner
        paeth = np.where(
            (abs(estimate - left) <= abs(estimate - above))
            & (abs(estimate - left) <= abs(estimate - corner)),
            left,
            np.where(abs(estimate - above) <= abs(estimate - corner), above, corner),
        )
        predictor = [0, left, above, (left + above) // 2, paeth][kind]
        lines.append(bytes([kind]) + ((flat[y] - predictor) % 256).astype(np.uint8).tobytes())

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", 7, 10, 8, 2, 0, 0, 0)
    data = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(lines)))
        + chunk(b"IEND", b"")
    )
    assert np.array_equal(png_pixels(data), pixels)


def test_the_page_logs_no_console_error(browser: Any) -> None:
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not severe, severe
    assert browser.title == "MUSTER results"


def test_the_matrix_has_a_coloured_row_per_system_per_benchmark(browser: Any) -> None:
    benches = report.reproduced_benchmarks()
    grids = find(browser, "table.matrix")
    assert [g.get_attribute("data-benchmark") for g in grids] == [b for b, _ in benches]
    for grid in grids:
        rows = grid.find_elements("css selector", "tbody tr")
        assert [r.get_attribute("data-system") for r in rows] == list(SYSTEMS)
    cells = find(browser, "table.matrix td.status")
    pinned = [c for c in cells if "status-none" not in (c.get_attribute("class") or "")]
    assert pinned, "no cell of the matrix has a verdict"
    transparent = ("rgba(0, 0, 0, 0)", "transparent", "rgb(255, 255, 255)")
    for cell in pinned:
        assert cell.value_of_css_property("background-color") not in transparent, cell.get_attribute(
            "outerHTML"
        )
        assert cell.text in expected.STATUSES


def test_each_plot_draws_a_series_per_system_with_intervals(browser: Any) -> None:
    plotted = 0
    for benchmark, family in report.reproduced_benchmarks():
        systems = plotted_systems(benchmark, family)
        plots = find(browser, f'svg.plot[data-plot="recall-{benchmark}"]')
        if not systems:
            assert not plots
            continue
        (plot,) = plots
        series = plot.find_elements("css selector", "path.series")
        assert {s.get_attribute("data-series") for s in series} == systems
        figure = plot.find_element("xpath", "./ancestor::div[@class='figure']")
        assert "native's ablations are in the tables, not drawn" in figure.text
        assert all(s.get_attribute("d").count("L") >= 1 for s in series), "a system's line has one point"
        assert len(plot.find_elements("css selector", "line.errbar")) >= len(systems)
        assert plot.size["width"] > 300 and plot.size["height"] > 200
        pixels = png_pixels(plot.screenshot_as_png)
        assert coloured_pixels(pixels) > 500, f"recall-{benchmark}: the series drew (almost) nothing"
        plotted += 1
    assert plotted, "no benchmark has committed comparison tables to plot"
    for name in ("bench-build", "bench-query"):
        (plot,) = find(browser, f'svg.plot[data-plot="{name}"]')
        assert plot.find_elements("css selector", "path.series")
        assert coloured_pixels(png_pixels(plot.screenshot_as_png)) > 50, name


def test_the_full_page_screenshot_is_not_blank(browser: Any) -> None:
    data, height = screenshot.full_page_png(browser)
    pixels = png_pixels(data)
    assert pixels.shape[:2] == (height, WIDTH)
    assert distinct_colours(pixels) > 100
    assert coloured_pixels(pixels) > 5000
