"""``muster verify cuts``: detection over every benchmark store, against a pinned manifest.

The manifest (``manifests/cuts.json``, shipped in the package) pins, per store, the branch, the two
shares (rounded to 4 decimals, compared exactly at that precision), token,
unit, parent and oversize counts. A store that differs, is not pinned, or is
pinned but missing from the data is a FAIL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from muster_exact.core.errors import ManifestError
from muster_exact.core.shipped import shipped
from muster_exact.derive import derive
from muster_exact.verify.corpora import find_stores

SCHEMA_VERSION = 1
SHARE_DECIMALS = 4
FIELDS = ("branch", "serial_share", "record_share", "tokens", "units", "parents", "oversize_records")


@dataclass(frozen=True)
class CutRow:
    store: str
    benchmark: str
    branch: str
    serial_share: float
    record_share: float
    tokens: int
    units: int
    parents: int
    oversize_records: int

    def pinned(self) -> dict[str, Any]:
        data = asdict(self)
        del data["store"]
        return data


@dataclass(frozen=True)
class Verdict:
    store: str
    row: CutRow | None
    differences: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.differences


def measure(data_dir: Path) -> Iterator[CutRow]:
    for store in find_stores(data_dir):
        plan = derive(store.source)
        yield CutRow(
            store=store.name,
            benchmark=store.benchmark,
            branch=plan.branch,
            serial_share=round(plan.serial_share, SHARE_DECIMALS),
            record_share=round(plan.record_share, SHARE_DECIMALS),
            tokens=plan.stats.tokens,
            units=plan.stats.units,
            parents=plan.stats.parents,
            oversize_records=plan.stats.oversize_records,
        )


def manifest_dir() -> Path:
    """The manifests the library ships (``cuts.json``, ``contexts/``), read wherever it is installed."""
    return shipped("manifests")


def default_manifest() -> Path:
    return manifest_dir() / "cuts.json"


def read_json(path: Path) -> Any:
    """A pinned manifest's JSON; anything that is not one (missing, a directory, not UTF-8, not
    JSON, nested past the parser's depth) is one ManifestError line naming the file."""
    if not path.exists():
        raise ManifestError(f"manifest {path} not found; pass --manifest PATH")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise ManifestError(f"manifest {path} is not a regular file; pass a manifest JSON file")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"manifest {path} is not UTF-8 text (byte {exc.start}); pass a manifest JSON file"
        ) from None
    except (OSError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ManifestError(f"cannot read manifest {path}: {reason}") from None


def require_data_root(data_dir: Path) -> None:
    """Fail before any verdict is printed when the data root is missing or holds no benchmark.

    ``corpora.find_stores`` owns that rule; asking it for its first store applies it.
    """
    next(find_stores(data_dir), None)


def load_manifest(path: Path) -> dict[str, dict[str, Any]]:
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise ManifestError(f"{path}: expected a cuts manifest with schema_version {SCHEMA_VERSION}")
    stores = data.get("stores")
    if not isinstance(stores, dict):
        raise ManifestError(f"{path}: 'stores' must map store names to expected values")
    return stores


def write_manifest(path: Path, rows: list[CutRow]) -> None:
    data = {
        "schema_version": SCHEMA_VERSION,
        "note": "Pinned by scripts/pin_cuts.py; shares rounded to 4 decimals.",
        "stores": {row.store: row.pinned() for row in rows},
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def judge(row: CutRow, expected: dict[str, Any] | None) -> Verdict:
    if expected is None:
        return Verdict(row.store, row, ("not pinned in the manifest",))
    measured = row.pinned()
    diffs = tuple(
        f"{name}: expected {expected.get(name)!r}, measured {measured[name]!r}"
        for name in FIELDS
        if expected.get(name) != measured[name]
    )
    return Verdict(row.store, row, diffs)


def verify_cuts(data_dir: Path, manifest: dict[str, dict[str, Any]]) -> Iterator[Verdict]:
    """Verdicts store by store as they are measured, then the pinned stores never seen."""
    seen: set[str] = set()
    for row in measure(data_dir):
        seen.add(row.store)
        yield judge(row, manifest.get(row.store))
    for name in sorted(set(manifest) - seen):
        yield Verdict(name, None, (f"pinned but not found under {data_dir}",))


HEADER = (
    f"{'store':<28} {'branch':<13} {'serial':>7} {'record':>7} {'tokens':>9} "
    f"{'units':>6} {'parents':>7} {'oversize':>8}  verdict"
)


def format_row(verdict: Verdict) -> str:
    row = verdict.row
    status = "OK" if verdict.ok else "FAIL"
    if row is None:
        body = f"{verdict.store:<28} {'-':<13} {'-':>7} {'-':>7} {'-':>9} {'-':>6} {'-':>7} {'-':>8}"
    else:
        body = (
            f"{row.store:<28} {row.branch:<13} {row.serial_share:>7.4f} {row.record_share:>7.4f} "
            f"{row.tokens:>9} {row.units:>6} {row.parents:>7} {row.oversize_records:>8}"
        )
    line = f"{body}  {status}"
    if not verdict.ok:
        line += "  (" + "; ".join(verdict.differences) + ")"
    return line
