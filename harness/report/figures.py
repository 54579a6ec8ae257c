"""Reading the figures the results page shows (:mod:`harness.report.page`) from the files the
reproduction and the benchmarks leave: CSV tables, numbers and intervals in their cells, Markdown
pipe tables, and the bench files' points against store size. A cell that does not parse reads
as None (the page then says what is missing); nothing here writes HTML."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

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


# --- the bench files (results/bench/query.md, scale.md) ---------------------------------------


@dataclass(frozen=True)
class MarkdownTable:
    header: tuple[str, ...]
    rows: tuple[dict[str, str], ...]


def markdown_tables(text: str) -> list[MarkdownTable]:
    """Every pipe table of a Markdown text (its first row the header, its second the rule)."""
    found: list[MarkdownTable] = []
    block: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if len(block) >= 2:
            header = tuple(block[0])
            rows = tuple(dict(zip(header, cells, strict=False)) for cells in block[2:])
            found.append(MarkdownTable(header, rows))
        block = []
    return found


def measured_line(text: str) -> str:
    """The file's provenance line (``Measured ... by ...``), if it has one."""
    return next((line for line in text.splitlines() if line.startswith("Measured")), "")


def _bench_number(raw: str) -> float | None:
    cleaned = raw.replace(",", "").replace("*", "").strip()
    return number(cleaned.split()[0]) if cleaned else None


@dataclass
class StoreSizes:
    """Points read from the bench files: series name -> [(tokens, value)], with what was skipped."""

    build: dict[str, list[tuple[float, float]]]
    query: dict[str, list[tuple[float, float]]]
    skipped: list[str]


def parse_query_bench(text: str, into: StoreSizes) -> None:
    """results/bench/query.md: per store a ``###`` section with its tokens and build seconds
    (embedding included, and everything but the embedder) and a query-stage table with ``total``."""
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        name = section.splitlines()[0].strip()
        tokens = re.search(r"^([\d,]+) tokens", section, flags=re.M)
        if not tokens:
            into.skipped.append(f"query.md, {name}: no token count")
            continue
        size = float(tokens.group(1).replace(",", ""))
        build = re.search(r"Build ([\d.]+) s", section)
        rest = re.search(r"everything but the embedder: ([\d.]+) s", section)
        if build:
            into.build.setdefault("with embedding (query.md)", []).append((size, float(build.group(1))))
        if rest:
            into.build.setdefault("without embedder (query.md)", []).append((size, float(rest.group(1))))
        total = next(
            (
                r
                for t in markdown_tables(section)
                if "p50 ms" in t.header
                for r in t.rows
                if r.get(t.header[0]) == "total"
            ),
            None,
        )
        for column, series in (("p50 ms", "query p50 (query.md)"), ("p95 ms", "query p95 (query.md)")):
            value = _bench_number(total.get(column, "")) if total else None
            if value is None:
                into.skipped.append(f"query.md, {name}: no total {column}")
            else:
                into.query.setdefault(series, []).append((size, value))


def _column(table: MarkdownTable, start: str) -> str | None:
    return next((h for h in table.header if h.startswith(start)), None)


def parse_scale_bench(text: str, into: StoreSizes) -> None:
    """results/bench/scale.md: the stores' tokens per level, the build stages (``all but
    embedding`` of each ``build()`` row) and the queries' ``total p50 / p95 ms`` per level."""
    tables = markdown_tables(text)
    sizes: dict[str, float] = {}
    for table in tables:
        if "tokens" in table.header and "level" in table.header:
            for row in table.rows:
                size = _bench_number(row.get("tokens", ""))
                if size is not None:
                    sizes[row.get("level", "")] = size
    for table in tables:
        rest = _column(table, "all but embedding")
        total = _column(table, "total p50")
        for row in table.rows:
            label = row.get(table.header[0], "")
            level = label.split()[0] if label else ""
            if rest and label.endswith("build()"):
                _scale_point(into, into.build, "without embedding (scale.md)", sizes, level, row[rest])
            if total and level:
                p50, _, p95 = row[total].partition("/")
                p95 = p95 or p50  # a bare "-": neither was measured
                _scale_point(into, into.query, "query p50 (scale.md)", sizes, level, p50)
                _scale_point(into, into.query, "query p95 (scale.md)", sizes, level, p95)


def _scale_point(
    into: StoreSizes,
    target: dict[str, list[tuple[float, float]]],
    series: str,
    sizes: dict[str, float],
    level: str,
    raw: str,
) -> None:
    value = _bench_number(raw)
    if level not in sizes or value is None:
        into.skipped.append(f"scale.md, {level or '?'}: {series} not measured ({raw.strip() or 'empty'})")
        return
    target.setdefault(series, []).append((sizes[level], value))
