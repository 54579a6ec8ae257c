"""The results page's reproduction matrix (:mod:`harness.report.page` draws the rest): the context
hashes of ``reproduce.json`` and every figure of the tables against ``manifests/expected.yaml``
(:mod:`harness.report.expected`), coloured OK / OKish / FAIL / NEW; and the small HTML pieces
every section of the page uses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from harness.report import expected, reproduction
from harness.report.reproduction import RECORD
from harness.systems import SYSTEMS

STATUS_CLASS = {expected.OK: "ok", expected.OKISH: "okish", expected.FAIL: "fail", expected.NEW: "new"}


@dataclass(frozen=True)
class Sources:
    """Where the page reads from: the committed tables (with ``bench/`` and ``audit/``), the run
    records (``reproduce.json``, ``timings.csv``) and the expected-score pin."""

    tables: Path
    results: Path
    expected: Path


def comparison_path(benchmark: str, preset: str) -> str:
    return reproduction.comparison_table(benchmark, preset)


def presets(family: str) -> list[str]:
    return reproduction.family_presets(family)


# --- small HTML pieces --------------------------------------------------------------------------


def note(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def html_table(header: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "data") -> str:
    """A table of already-escaped cells (``rows``) under an escaped ``header``."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def shown(value: float | None) -> str:
    return "missing" if value is None else f"{value:g}"


# --- the reproduction record (context hashes) ---------------------------------------------------


def load_record(results: Path) -> tuple[dict[str, Any] | None, str | None]:
    path = results / RECORD
    if not path.is_file():
        return None, f"no reproduction record here ({RECORD} under the run records): run make reproduce"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"{RECORD} is not JSON ({exc}): run make reproduce again"
    if not isinstance(record, dict):
        return None, f"{RECORD} is not a JSON object: run make reproduce again"
    return record, None


def _objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects of a list in the record (anything else in it is skipped)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _record_summary(record: dict[str, Any]) -> str:
    host = (_objects([record.get("host")]) or [{}])[0]
    git = (_objects([record.get("git")]) or [{}])[0]
    verdict = "passed" if record.get("passed") else "FAILED"
    colour = "ok" if record.get("passed") else "fail"
    machine = f"{host.get('platform', '?')}, {host.get('cpus', '?')} CPUs, Python {host.get('python', '?')}"
    facts = [
        ("verdict", f'<span class="status status-{colour}">{verdict}</span>'),
        ("started", escape(str(record.get("started_utc", "?")))),
        ("ended", escape(str(record.get("ended_utc", "?")))),
        ("total", escape(f"{record.get('total_s', '?')} s")),
        ("host", escape(machine)),
        ("commit", escape(f"{git.get('commit', '?')}{' (dirty)' if git.get('dirty') else ''}")),
    ]
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


def _hash_rows(record: dict[str, Any], replay: tuple[str, ...]) -> str:
    rows = []
    for entry in _objects(record.get("hashes")):
        verdict = expected.hash_verdict(entry)
        problems = (
            [entry["problem"]] if "problem" in entry else [f"differs: {q}" for q in entry.get("differs", [])]
        )
        is_replay = (entry.get("benchmark"), entry.get("preset")) == replay
        badge = ' <span class="badge">the paper\'s CPU replay setting</span>' if is_replay else ""
        cells = [
            escape(str(entry.get("benchmark", "?"))),
            escape(str(entry.get("preset", "?"))) + badge,
            escape(str(entry.get("rules", "?"))),
            escape(f"{entry.get('identical', '?')} of {entry.get('total', '?')}"),
            f'<span class="status status-{STATUS_CLASS[verdict]}">{verdict}</span>',
            escape("; ".join(problems)),
        ]
        row_class = ' class="replay"' if is_replay else ""
        rows.append(f"<tr{row_class}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{h}</th>" for h in ("benchmark", "preset", "rules", "identical", "", "note"))
    return f'<table class="hashes"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _replay_callout(record: dict[str, Any], replay: tuple[str, ...]) -> str:
    if len(replay) != 2:
        return ""
    entries = [e for e in _objects(record.get("hashes")) if (e.get("benchmark"), e.get("preset")) == replay]
    found = ", ".join(
        f"{e.get('rules')}: {e.get('identical')} of {e.get('total')} identical" for e in entries
    )
    return (
        f'<p class="callout">The paper\'s CPU replay setting: <b>{escape(replay[0])}</b> at preset '
        f"<b>{escape(replay[1])}</b> ({escape(found or 'not in this reproduction')}).</p>"
    )


def hashes_section(results: Path) -> str:
    record, problem = load_record(results)
    if record is None:
        return note(problem or "")
    replay = tuple(map(str, record.get("cpu_replay") or ()))
    steps = _objects(record.get("steps"))
    step_rows = [(escape(str(s.get("step", "?"))), escape(str(s.get("seconds", "?")))) for s in steps]
    parts = [
        _record_summary(record),
        _replay_callout(record, replay),
        "<h3>Context hashes (MUSTER, exact and native rules)</h3>",
        _hash_rows(record, replay)
        if _objects(record.get("hashes"))
        else note("the record holds no context hashes"),
    ]
    breakdown = record.get("breakdown")
    if isinstance(breakdown, dict) and breakdown:
        total = sum(float(v) for v in breakdown.values() if isinstance(v, (int, float)))
        rows = [
            (escape(str(kind)), f"{float(v):.0f}", f"{float(v) / total:.0%}" if total else "-")
            for kind, v in sorted(breakdown.items(), key=lambda kv: -float(kv[1]))
            if isinstance(v, (int, float))
        ]
        parts.append("<h3>Where the reproduction's time went</h3>")
        parts.append(html_table(("spent on", "seconds", "share"), rows))
    if step_rows:
        parts.append("<details><summary>Steps and their seconds</summary>")
        parts.append(html_table(("step", "seconds"), step_rows) + "</details>")
    return "".join(parts)


# --- the expected-score matrix ------------------------------------------------------------------


def status_cell(statuses: Sequence[str]) -> str:
    """A matrix cell: the worst verdict over its figures, coloured, with the counts as its title."""
    if not statuses:
        return '<td class="status status-none" title="not pinned">-</td>'
    worst = expected.worst(statuses)
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in expected.STATUSES if s in statuses)
    return f'<td class="status status-{STATUS_CLASS[worst]}" title="{escape(counts)}">{worst}</td>'


def _grid(benchmark: str, family: str, verdicts: dict[str, dict[str, list[str]]]) -> str:
    columns = presets(family)
    head = "<th>system</th>" + "".join(f"<th>{escape(p)}</th>" for p in columns)
    rows = []
    for system in SYSTEMS:
        cells = "".join(
            status_cell(verdicts.get(comparison_path(benchmark, p), {}).get(system, [])) for p in columns
        )
        rows.append(f'<tr data-system="{system}"><th>{system}</th>{cells}</tr>')
    return (
        f'<table class="matrix" data-benchmark="{escape(benchmark)}"><caption>{escape(benchmark)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _other_tables(verdicts: dict[str, dict[str, list[str]]], grids: set[str]) -> str:
    rows = [
        f"<tr><td>{escape(table)}</td><td>{escape(row)}</td>{status_cell(statuses)}</tr>"
        for table, by_row in verdicts.items()
        if table not in grids
        for row, statuses in by_row.items()
    ]
    if not rows:
        return ""
    head = "<th>table</th><th>row</th><th>verdict</th>"
    return (
        "<h3>Published tables, re-scored</h3>"
        f'<table class="matrix-rows"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _not_ok(cells: Sequence[expected.Cell]) -> str:
    off = [c for c in cells if c.status != expected.OK]
    if not off:
        return '<p class="all-ok">every pinned figure is OK</p>'
    rows = [
        (
            f'<span class="status status-{STATUS_CLASS[c.status]}">{c.status}</span>',
            escape(c.table), escape(c.row), escape(c.column), shown(c.expected), shown(c.got),
        )
        for c in off
    ]  # fmt: skip
    header = ("verdict", "table", "row", "column", "expected", "got")
    return f"<h3>Every figure that is not OK ({len(off)})</h3>" + html_table(header, rows, "figures")


def matrix_section(sources: Sources, benches: Sequence[tuple[str, str]]) -> str:
    try:
        cells = expected.check(expected.load(sources.expected), sources.tables)
    except (ValueError, OSError) as exc:  # ExpectedError (a ValueError) names the file and the fix
        return note(f"not available: {exc}")
    verdicts: dict[str, dict[str, list[str]]] = {}
    for cell in cells:
        verdicts.setdefault(cell.table, {}).setdefault(cell.row, []).append(cell.status)
    counts = expected.summary(cells)
    legend = " ".join(
        f'<span class="status status-{STATUS_CLASS[s]}">{counts[s]} {s}</span>' for s in expected.STATUSES
    )
    grids = {comparison_path(b, p) for b, family in benches for p in presets(family)}
    return (
        f'<p class="legend-line">{counts["figures"]} figures checked against '
        f"<code>{escape(sources.expected.name)}</code>: {legend} "
        "(OK: equal as printed; OKish: within tolerance; FAIL: further off or missing; NEW: not "
        "pinned). Each cell is the worst verdict over the row's figures; hover for the counts.</p>"
        '<div class="grids">'
        + "".join(_grid(b, f, verdicts) for b, f in benches)
        + "</div>"
        + _other_tables(verdicts, grids)
        + _not_ok(cells)
    )


# --- recall against U ---------------------------------------------------------------------------
