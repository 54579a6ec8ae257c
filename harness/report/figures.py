"""Reading the figures the results page shows (:mod:`harness.report.page`) from the files the
reproduction and the benchmarks leave: CSV tables, numbers and intervals in their cells, and the
bench files' points against store size (JSON the bench scripts write beside their Markdown, by
:func:`write_bench`). A cell that does not parse reads as None (the page then says what is
missing); nothing here writes HTML."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.report import expected


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def number(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw not in (None, "") else None
    except ValueError:
        return None
    return None if value is None or math.isnan(value) else value


def interval(raw: str | None) -> tuple[float, float] | None:
    found = expected.parse_interval(raw or "")
    return None if found is None or math.isnan(found[0]) or math.isnan(found[1]) else found


# --- the bench files' points (results/bench/query.json, scale.json) -----------------------------

BENCH_SCHEMA = 1
Points = dict[str, list[tuple[float, float]]]  # series name -> [(store tokens, value)]


@dataclass
class StoreSizes:
    """Points against store size: series name -> [(tokens, value)], with what was skipped."""

    build: Points
    query: Points
    skipped: list[str]


def bench_json(markdown: Path) -> Path:
    """The JSON a bench script writes beside its Markdown."""
    return markdown.with_suffix(".json")


def write_bench(markdown: Path, text: str, data: Any, points: StoreSizes | None = None) -> None:
    """A bench's Markdown ``text``, and beside it the same run as JSON: its provenance line (the
    text's ``Measured ...`` line), the script's raw ``data``, and the points against store size
    the results page plots (none for most benches). The page reads the JSON, never the Markdown."""
    points = points or StoreSizes({}, {}, [])
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(text, encoding="utf-8")
    record = {
        "schema": BENCH_SCHEMA,
        "markdown": markdown.name,
        "measured": next((line for line in text.splitlines() if line.startswith("Measured")), ""),
        "build": points.build,
        "query": points.query,
        "skipped": points.skipped,
        "data": data,
    }
    bench_json(markdown).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_bench(path: Path, into: StoreSizes) -> str:
    """Add a bench JSON's points to ``into``; its provenance line. A file of another schema is
    :class:`ValueError` (the page says so instead of plotting it)."""
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or record.get("schema") != BENCH_SCHEMA:
        raise ValueError(f"{path.name}: not a bench file of schema {BENCH_SCHEMA}")
    for target, key in ((into.build, "build"), (into.query, "query")):
        for series, points in record[key].items():
            target.setdefault(series, []).extend((float(x), float(y)) for x, y in points)
    into.skipped.extend(record["skipped"])
    return str(record["measured"])
