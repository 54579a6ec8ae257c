"""Expected scores: every no-LLM figure ``make reproduce`` writes, checked against a pinned matrix.

In the manner of pyserini's two-click reproductions (2CR): ``manifests/expected.yaml`` holds each
figure of each table ``make reproduce`` produces (a comparison table per benchmark, preset and
model profile; the re-scored published outputs), keyed by the table's path under the tables root,
the row's key and the column. A figure is

* ``OK``: equal to the pinned value as the table prints it;
* ``OKish``: within the column's tolerance (a different CPU or BLAS can move a tie);
* ``FAIL``: further off, or missing (no table, no row, an empty cell);

and a row the pin does not know is ``NEW`` (reported, not a failure: pin it on purpose with
``scripts/pin_expected.py``). Confidence intervals are checked bound by bound.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

OK, OKISH, FAIL, NEW = "OK", "OKish", "FAIL", "NEW"
STATUSES = (OK, OKISH, FAIL, NEW)
KEY_SEPARATOR = "/"
# The columns that name a row, per kind of table; every other column is a figure.
KEY_COLUMNS = ("system", "file", "how", "metric", "source", "category")
# Tolerances when the pin names none: shares (recall, accuracy) by half a point, token means by
# 25 tokens, counts exactly.
DEFAULT_TOLERANCE = {"default": 0.005, "tokens_mean": 25.0, "n": 0.0}
_INTERVAL = re.compile(r"^\[\s*(-?[0-9.eE+-]+|nan),\s*(-?[0-9.eE+-]+|nan)\s*\]$")


class ExpectedError(ValueError):
    """The expected-score file is missing or malformed (names the file and what to do)."""


@dataclass(frozen=True)
class Cell:
    """One checked figure: where it is, what was pinned, what the table holds now, the verdict."""

    table: str
    row: str
    column: str
    expected: float | None
    got: float | None
    status: str

    @property
    def where(self) -> str:
        return f"{self.table} [{self.row}] {self.column}"


# --- reading tables -------------------------------------------------------------------------


def key_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in KEY_COLUMNS if c in frame.columns]


def figures(path: Path) -> dict[str, dict[str, float | None]]:
    """A table's figures: row key -> column -> number (an interval ``[a, b]`` becomes two
    columns, ``<name>_low`` and ``<name>_high``; an empty cell is None)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    keys = key_columns(frame)
    if not keys:
        raise ExpectedError(f"{path}: no key column (one of {', '.join(KEY_COLUMNS)}); not a score table")
    rows: dict[str, dict[str, float | None]] = {}
    for record in frame.to_dict(orient="records"):
        key = KEY_SEPARATOR.join(str(record[k]) for k in keys)
        if key in rows:  # two rows one key: a figure would be checked against the wrong row
            raise ExpectedError(f"{path}: two rows are {key!r} by their key columns ({', '.join(keys)})")
        values: dict[str, float | None] = {}
        for column, raw in record.items():
            if column not in keys:
                values.update(_numbers(column, str(raw)))
        rows[key] = values
    return rows


def parse_interval(raw: str) -> tuple[float, float] | None:
    """A table's interval cell, ``[low, high]``, as two numbers (None if it is not one)."""
    found = _INTERVAL.match(raw)
    return (float(found.group(1)), float(found.group(2))) if found else None


def _numbers(column: str, raw: str) -> dict[str, float | None]:
    if raw == "":
        return {column: None}
    interval = parse_interval(raw)
    if interval:
        return {f"{column}_low": interval[0], f"{column}_high": interval[1]}
    try:
        return {column: float(raw)}
    except ValueError:
        return {}  # a label (a run's path, a note): not a figure


# --- the pin -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """The pinned figures (table -> row -> column -> value) and the tolerance per column."""

    tables: dict[str, dict[str, dict[str, float | None]]]
    tolerance: dict[str, float]

    def tolerance_of(self, column: str) -> float:
        for name in (column, re.sub(r"(_ci)?_(low|high)$", "", column)):
            if name in self.tolerance:
                return self.tolerance[name]
        return self.tolerance["default"]


def load(path: Path) -> Expected:
    if not path.is_file():
        raise ExpectedError(f"{path}: no expected-score file; pin one with scripts/pin_expected.py")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ExpectedError(f"{path}: not YAML ({exc}); restore it from git or pin it again") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("tables"), dict):
        raise ExpectedError(f"{path}: expected a mapping with 'tables' (table -> row -> column -> value)")
    tolerance = {**DEFAULT_TOLERANCE, **{str(k): float(v) for k, v in (raw.get("tolerance") or {}).items()}}
    tables: dict[str, dict[str, dict[str, float | None]]] = {}
    for table, rows in raw["tables"].items():
        if not isinstance(rows, dict) or not all(isinstance(r, dict) for r in rows.values()):
            raise ExpectedError(f"{path}: table {table!r} must map each row to its columns")
        tables[str(table)] = {
            str(row): {str(c): None if v is None else float(v) for c, v in columns.items()}
            for row, columns in rows.items()
        }
    return Expected(tables, tolerance)


HEADER = """\
# Expected scores of `make reproduce` (pyserini 2CR style), checked at its end.
# table (path under results/) -> row (its key columns joined by '/') -> column -> value.
# OK: equal as printed; OKish: within `tolerance` (by column, else `default`); FAIL: further off
# or missing. Written by scripts/pin_expected.py from the tables of a reproduction: pin on purpose,
# and say why in the commit.
"""


def dump(path: Path, tables_root: Path, tables: Sequence[Path], tolerance: Mapping[str, float]) -> int:
    """Pin the figures of ``tables`` (paths under ``tables_root``); returns the number of figures."""
    pinned = {str(t.relative_to(tables_root)): figures(t) for t in tables}
    body = {"tolerance": dict(tolerance), "tables": pinned}
    path.write_text(HEADER + yaml.safe_dump(body, sort_keys=False, width=120), encoding="utf-8")
    return sum(len(columns) for rows in pinned.values() for columns in rows.values())


# --- checking ------------------------------------------------------------------------------


def verdict(expected: float | None, got: float | None, tolerance: float) -> str:
    if expected is None and got is None:
        return OK
    if expected is None or got is None or math.isnan(got) != math.isnan(expected):
        return FAIL
    if got == expected or (math.isnan(got) and math.isnan(expected)):
        return OK
    return OKISH if abs(got - expected) <= tolerance + 1e-12 else FAIL


def check(expected: Expected, tables_root: Path, only: Iterable[str] | None = None) -> list[Cell]:
    """Every pinned figure (of the tables named in ``only``, else all) against the table now,
    then the rows the pin does not know (``NEW``)."""
    names = list(expected.tables) if only is None else [t for t in only if t in expected.tables]
    cells: list[Cell] = []
    for table in names:
        path = tables_root / table
        now = figures(path) if path.is_file() else {}
        for row, columns in expected.tables[table].items():
            for column, value in columns.items():
                got = now.get(row, {}).get(column)
                missing = row not in now or column not in now[row]
                status = FAIL if missing else verdict(value, got, expected.tolerance_of(column))
                cells.append(Cell(table, row, column, value, got, status))
        for row in now.keys() - expected.tables[table].keys():
            cells.extend(Cell(table, row, c, None, v, NEW) for c, v in now[row].items())
    return cells


# Context hashes: the vectors and dense scores are computed in float64 and rounded to float32
# (muster_exact.models, channels/dense.py), so a context is the same bytes on any CPU, in any
# process, whatever was embedded with it. The margin is for a float64 value that lands on a float32
# rounding edge (about one in 10^8), which can move one near-tie and so one context: a manifest
# with at most this share of its contexts differing is OKish; beyond it, or with none pinned, FAIL.
# Before that rule (float32 throughout) two fresh-clone runs on an AMD EPYC matched 27,406 and
# 27,407 of 27,408.
HASH_SHARE_OKISH = 0.01


def context_verdict(identical: int, total: int) -> str:
    """A pinned manifest's verdict from how many of its context hashes are identical."""
    if total == 0 or identical < 0 or identical > total:
        return FAIL
    if identical == total:
        return OK
    return OKISH if (total - identical) <= HASH_SHARE_OKISH * total else FAIL


def hash_verdict(entry: dict[str, Any]) -> str:
    """A hash check's verdict (an entry of the reproduction record): FAIL with a problem (nothing
    pinned, no run), else by :func:`context_verdict`."""
    if "problem" in entry:
        return FAIL
    return context_verdict(int(entry.get("identical", -1)), int(entry.get("total", 0)))


def failed(cells: Iterable[Cell]) -> bool:
    return any(c.status == FAIL for c in cells)


def worst(statuses: Iterable[str]) -> str:
    """FAIL over NEW over OKish over OK (an empty set is OK)."""
    found = set(statuses)
    return next((s for s in (FAIL, NEW, OKISH) if s in found), OK)


def summary(cells: Sequence[Cell]) -> dict[str, Any]:
    counts = {s: sum(c.status == s for c in cells) for s in STATUSES}
    return {"figures": len(cells), **counts}
