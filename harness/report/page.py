"""The results page, ``results/index.html`` (``make report``, the last step of ``make reproduce``).

One static file with what a reader of the reproduction looks for, from the files the reproduction
and the benchmarks leave behind:

* the reproduction matrix: the context hashes of ``reproduce.json`` and every figure of the tables
  against ``manifests/expected.yaml`` (:mod:`harness.report.expected`), coloured OK / OKish / FAIL / NEW;
* per benchmark, the headline metric against U for every system with its 95% bootstrap interval;
* per benchmark and U, each MUSTER row minus the best baseline with its paired interval;
* the peers' evidence recall at MUSTER native's token budget, per category (``make peers``:
  ``results/<benchmark>/peers.csv``);
* the run timings measured on this machine (``timings.csv`` beside the runs);
* build time and query latency against store size (``results/bench/query.md`` and ``scale.md``);
* the judge-audit tables (``results/audit/published*.csv``).

Inline CSS and inline SVG only: no script, nothing fetched, so the page opens from a file on a
machine with no network. Every input is optional: a missing or unreadable one leaves a note in
its section that says what writes it. :func:`page` reads files and returns the HTML; it prints
nothing and reads no clock, so the same inputs give the same bytes (the only times shown are the
ones the inputs carry).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path

from harness import benchmarks
from harness.benchmarks.metrics import HEADLINE
from harness.report import reproduction
from harness.report.figures import StoreSizes, interval, number, read_bench, read_csv
from harness.report.matrix import (
    Sources,
    comparison_path,
    hashes_section,
    html_table,
    matrix_section,
    note,
    presets,
)
from harness.report.plots import (
    PALETTE,
    SYSTEM_COLOUR,
    Plot,
    Point,
    Series,
    decades_axis,
    magnitude,
    share_axis,
    svg,
    units_axis,
)
from harness.report.reproduction import MODELS, PUBLISHED_TABLES
from harness.systems import ABLATIONS, MUSTER_ROWS, PLOTTED_SYSTEMS

# The metric plotted against U: the first of the headline metrics a benchmark's tables hold.
PLOTTED = HEADLINE
NOT_DRAWN = "native's ablations are in the tables, not drawn (ten more lines would hide the rest)"
_UNITS_OF = re.compile(r"\.u(\d+)$")


def reproduced_benchmarks() -> list[tuple[str, str]]:
    """(benchmark, preset family) of every benchmark ``make reproduce`` runs, in its order."""
    return [(name, benchmarks.load(name).preset_family) for name in reproduction.reproduced()]


def load_comparisons(
    tables: Path, benchmark: str, family: str
) -> tuple[dict[str, list[dict[str, str]]], list[str]]:
    """The benchmark's comparison rows per preset, and a note per preset without a readable table."""
    found, missing = {}, []
    for preset in presets(family):
        path = tables / comparison_path(benchmark, preset)
        try:
            found[preset] = read_csv(path)
        except (OSError, UnicodeDecodeError, csv.Error):
            missing.append(comparison_path(benchmark, preset))
    return found, missing


def recall_plot(benchmark: str, by_preset: dict[str, list[dict[str, str]]]) -> Plot | None:
    columns = {c for rows in by_preset.values() for row in rows for c in row}
    metric = next((m for m in PLOTTED if m in columns), None)
    if metric is None:
        return None
    series = []
    for system in PLOTTED_SYSTEMS:
        points = []
        for preset, rows in by_preset.items():
            row = next((r for r in rows if r.get("system") == system), None)
            units = _UNITS_OF.search(preset)
            y = number(row.get(metric)) if row else None
            if row and units and y is not None:
                points.append(Point(float(units.group(1)), y, interval(row.get(f"{metric}_ci"))))
        if points:
            colour = SYSTEM_COLOUR.get(system, PALETTE[-1])
            series.append(Series(system, tuple(points), colour, dashed=system in ABLATIONS))
    if not series:
        return None
    title = f"{benchmark}: {metric} ({MODELS}), 95% intervals"
    return Plot(f"recall-{benchmark}", title, units_axis(), share_axis(metric), tuple(series), dodge=True)


def recall_section(tables: Path, benchmark: str, family: str) -> str:
    by_preset, missing = load_comparisons(tables, benchmark, family)
    parts = [f'<div class="figure"><h3 id="recall-{escape(benchmark)}">{escape(benchmark)}</h3>']
    plot = recall_plot(benchmark, by_preset)
    if not by_preset:
        parts.append(note(f"not available: run make reproduce (no comparison tables for {benchmark})"))
    elif plot is None:
        parts.append(note(f"not available: no {' or '.join(PLOTTED)} figure in {benchmark}'s tables"))
    else:
        parts.append(svg(plot))
        parts.append(note(NOT_DRAWN))
        if missing:
            parts.append(note(f"not available: run make reproduce (no {', '.join(missing)})"))
    return "".join(parts) + "</div>"


# --- the lead over the best baseline -----------------------------------------------------------

LEAD_HEADER = ("preset", "system", "metric", "value", "best baseline", "minus best", "95% paired interval")


def lead_section(tables: Path, benches: Sequence[tuple[str, str]]) -> str:
    """Per benchmark and U, each MUSTER row's headline figure, the best budgeted baseline and the
    paired difference with its 95% interval (the comparison tables' ``minus_best`` columns)."""
    parts = []
    for benchmark, family in benches:
        by_preset, _ = load_comparisons(tables, benchmark, family)
        rows = []
        for preset, records in by_preset.items():
            for record in records:
                if record.get("system") not in MUSTER_ROWS or not record.get("minus_best"):
                    continue
                metric = next((m for m in PLOTTED if record.get(m)), "")
                cells = (preset, record["system"], metric, record.get(metric), record.get("best_baseline"),
                         record.get("minus_best"), record.get("minus_best_ci"))  # fmt: skip
                rows.append(tuple(escape(c or "") for c in cells))
        if rows:
            parts.append(f"<h3>{escape(benchmark)}</h3>")
            parts.append(html_table(LEAD_HEADER, rows, "lead"))
    if not parts:
        return note("not available: run make reproduce (no minus_best column in the comparison tables)")
    intro = (
        "Each MUSTER row minus the best budgeted baseline at the same token budget, on the same "
        "questions; the interval resamples the questions together, so it is of the difference itself."
    )
    return f"<p>{escape(intro)}</p>" + "".join(parts)


# --- run timings --------------------------------------------------------------------------------


def timings_section(results: Path, benches: Sequence[tuple[str, str]]) -> str:
    parts = []
    for benchmark, family in benches:
        rows = []
        for preset in presets(family):
            path = results / benchmark / preset / MODELS / "timings.csv"
            try:
                records = read_csv(path)
            except (OSError, UnicodeDecodeError, csv.Error):
                continue
            columns = ("system", "build_s", "query_ms_p50")
            rows += [(escape(preset), *(escape(r.get(c) or "") for c in columns)) for r in records]
        if rows:
            parts.append(f"<h3>{escape(benchmark)}</h3>")
            parts.append(html_table(("preset", "system", "build s", "query p50 ms"), rows, "timings"))
    if not parts:
        return note("not available: run make reproduce (no timings.csv beside the runs)")
    intro = "Measured on this machine (build seconds summed over the stores; wall clock, so they vary)."
    return f"<p>{intro}</p>" + "".join(parts)


# --- build time and query latency against store size --------------------------------------------


def store_size_plots(sizes: StoreSizes) -> list[Plot]:
    tokens = [x for points in (*sizes.build.values(), *sizes.query.values()) for x, _ in points]
    x_axis = decades_axis("store size (cl100k tokens)", tokens, magnitude)
    plots = []
    for name, title, label, by_series in (
        ("bench-build", "build time against store size", "build s", sizes.build),
        ("bench-query", "query latency against store size", "query ms", sizes.query),
    ):
        if not by_series:
            continue
        # A colour per bench file; dashed, its second figure (p95, or the build without embedding).
        series = tuple(
            Series(
                s,
                tuple(Point(x, y) for x, y in sorted(points)),
                PALETTE["scale.md" in s],
                "p95" in s or "without" in s,
            )
            for s, points in by_series.items()
        )
        values = [p.y for s in series for p in s.points]
        plots.append(
            Plot(name, f"{title} (log-log)", x_axis, decades_axis(label, values, lambda v: f"{v:g}"), series)
        )
    return plots


def bench_section(bench: Path) -> str:
    sizes = StoreSizes({}, {}, [])
    provenance = []
    for name, make in (("query.json", "bench"), ("scale.json", "bench-scale")):
        try:
            measured = read_bench(bench / name, sizes)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            sizes.skipped.append(f"{name} not read ({type(exc).__name__}): run make {make}")
            continue
        provenance.append(f"<li><code>{name}</code>: {escape(measured or 'no provenance line')}</li>")
    plots = store_size_plots(sizes)
    if not plots:
        return note("not available: run make bench and make bench-scale (nothing read under results/bench/)")
    parts = [f"<ul>{''.join(provenance)}</ul>", '<div class="plots">', *map(svg, plots), "</div>"]
    if sizes.skipped:
        parts.append(
            '<ul class="skipped">' + "".join(f"<li>{escape(s)}</li>" for s in sizes.skipped) + "</ul>"
        )
    return "".join(parts)


# --- the peers (make peers) ---------------------------------------------------------------------

PEERS_TABLE = "peers.csv"


def peers_section(tables: Path, benches: Sequence[tuple[str, str]]) -> str:
    """Each benchmark's ``peers.csv`` (``make peers``: two peers that keep text verbatim against
    MUSTER native at its token budget), per category, under its Markdown twin's first paragraph."""
    sets = [*dict.fromkeys(b for b, _ in benches), "beam_dev"]  # and the BEAM development chats
    found = (captioned_table(tables / s / PEERS_TABLE, s, "peers", _peer_columns) for s in sets)
    parts = [html for html in found if html is not None]
    if not parts:
        return note(
            f"not available: make peers writes <benchmark>/{PEERS_TABLE} (LoCoMo, LoCoMo-Refined, "
            "BEAM-100K, beam_dev: the BEAM development chats)"
        )
    return "".join(parts)


def _peer_columns(header: list[str], rows: list[dict[str, str]]) -> tuple[list[str], list[dict[str, str]]]:
    """The peers CSV as its Markdown twin reads (32 columns are too wide for a page): each value
    beside its interval (``x`` and ``x_ci`` in one cell), ``native − x`` for ``native_minus_x``,
    and no better / worse / equal counts (peers.md has them)."""
    kept = [h for h in header if not h.endswith("_ci") and not h.startswith("native_better_worse_equal_")]
    shown = [h.replace("native_minus_", "native − ", 1) for h in kept]

    def cell(row: dict[str, str], column: str) -> str:
        return " ".join(v for v in (row.get(column), row.get(f"{column}_ci")) if v)

    merged = [{new: cell(row, old) for old, new in zip(kept, shown, strict=True)} for row in rows]
    return shown, merged


# --- the judge audit ----------------------------------------------------------------------------


def audit_section(tables: Path) -> str:
    parts = []
    for name in PUBLISHED_TABLES:
        table = captioned_table(tables / name, name, "audit")
        missing = f"not available: {name} (run make reproduce: the published step writes it)"
        parts.append(note(missing) if table is None else table)
    return "".join(parts)


Columns = Callable[[list[str], list[dict[str, str]]], tuple[list[str], list[dict[str, str]]]]


def captioned_table(path: Path, title: str, cls: str, columns: Columns | None = None) -> str | None:
    """A CSV as a table under its title and its Markdown twin's first paragraph (``columns``
    reshapes it first); None if unreadable."""
    try:
        rows = read_csv(path)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    header = list(rows[0]) if rows else []
    if columns is not None:
        header, rows = columns(header, rows)
    caption = _markdown_caption(path.with_suffix(".md"))
    body = html_table(header, ([escape(r.get(h) or "") for h in header] for r in rows), cls)
    return f"<h3>{escape(title)}</h3>{caption}{body}"


def _markdown_caption(path: Path) -> str:
    """The first paragraph of the table's Markdown twin (it says what the figures are)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    paragraph = next((line for line in lines if line.strip() and not line.startswith(("#", "|"))), "")
    return f"<p>{escape(paragraph)}</p>" if paragraph else ""


# --- the page -----------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1320px; color: #222; }
h1 { margin-bottom: 4px; } h2 { border-bottom: 1px solid #ccc; margin-top: 36px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-variant-numeric: tabular-nums; }
thead th { background: #f2f2f2; }
caption { font-weight: 600; text-align: left; padding: 4px 0; }
.grids, .plots { display: flex; flex-wrap: wrap; gap: 0 24px; }
.figure h3 { margin-bottom: 0; }
.status { font-weight: 600; text-align: center; }
.status-ok { background: #b9e4bf; } .status-okish { background: #fff09a; }
.status-fail { background: #f4a3a3; } .status-new { background: #d5d5d5; }
.status-none { background: #ffffff; color: #999; }
span.status { padding: 1px 6px; border-radius: 3px; }
tr.replay td { background: #eef5fb; }
.badge { background: #1f77b4; color: #fff; border-radius: 3px; padding: 0 5px; font-size: 12px; }
.callout { border-left: 4px solid #1f77b4; padding: 4px 10px; background: #eef5fb; }
.all-ok { background: #e9f6eb; border-left: 4px solid #3c9a4a; padding: 4px 10px; }
.note { color: #8a5a00; background: #fff8e6; border-left: 4px solid #e0a800; padding: 4px 10px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
svg.plot { display: block; margin: 8px 0 20px; background: #fff; }
svg.plot .frame { fill: none; stroke: #444; } svg.plot .grid { stroke: #e6e6e6; }
svg.plot .tick, svg.plot .legend text { font-size: 11px; fill: #333; }
svg.plot .axis-label { font-size: 12px; fill: #222; }
svg.plot .plot-title { font-size: 13px; font-weight: 600; }
svg.plot .series { fill: none; stroke-width: 2; } svg.plot .errbar { stroke-width: 1.2; }
"""


def page(sources: Sources, benches: Sequence[tuple[str, str]] | None = None) -> str:
    """The whole page as HTML (``benches``: (benchmark, preset family); default: every benchmark
    ``make reproduce`` runs)."""
    chosen = list(reproduced_benchmarks() if benches is None else benches)
    sections = [
        ("matrix", "Reproduction matrix", hashes_section(sources.results) + "<h3>Expected scores</h3>"
         + matrix_section(sources, chosen)),
        ("recall", "Recall against U", '<div class="plots">'
         + "".join(recall_section(sources.tables, b, f) for b, f in chosen) + "</div>"),
        ("lead", "Lead over the best baseline", lead_section(sources.tables, chosen)),
        ("peers", "Peers at native's token budget", peers_section(sources.tables, chosen)),
        ("timings", "Run timings", timings_section(sources.results, chosen)),
        ("bench", "Build time and query latency against store size", bench_section(sources.tables / "bench")),
        ("audit", "Judge audit", audit_section(sources.tables)),
    ]  # fmt: skip
    nav = "".join(f'<a href="#{key}">{escape(title)}</a>' for key, title, _ in sections)
    body = "".join(
        f'<section id="{key}"><h2>{escape(title)}</h2>{html}</section>' for key, title, html in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,"><title>MUSTER results</title>'
        f"<style>{CSS}</style></head><body><h1>MUSTER results</h1>"
        f"<p>The reproduction on CPU (<code>make reproduce</code>, models {MODELS}) and the "
        f"benchmarks, on one page.</p><nav>{nav}</nav>{body}</body></html>\n"
    )
