"""``scripts/reproduce.py`` on a tiny benchmark: hashes and expected scores checked, a changed
expected value printed as FAIL with a non-zero exit, one within tolerance as OKish."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.harness.tiny_data import write_manifest

TABLE = "mab/mab.u10/cpu-small/comparison.csv"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reproduce")
    write_manifest(root / "data", root / "manifests")
    return root


def script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}  # the harness sets it itself
    command = [sys.executable, str(REPO / "scripts" / name), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)


def reproduce(
    root: Path, skip: tuple[str, ...] = ("cuts", "published", "report")
) -> subprocess.CompletedProcess[str]:
    return script(
        "reproduce.py",
        f"--data={root / 'data'}",
        f"--manifests={root / 'manifests'}",
        f"--results={root / 'runs'}",
        f"--tables={root / 'tables'}",
        f"--expected={root / 'expected.yaml'}",
        f"--pins={root / 'pins'}",
        "--benchmarks=mab",
        "--units=10",
        "--skip",
        *skip,
    )


def edit_expected(path: Path, change: float) -> tuple[str, float]:
    """Move the first share figure of muster's row by ``change``; returns (column, new value)."""
    pinned = yaml.safe_load(path.read_text())
    row = pinned["tables"][TABLE]["muster"]
    column = next(c for c in row if c not in ("n", "tokens_mean"))
    row[column] = round(row[column] + change, 6)
    path.write_text(yaml.safe_dump(pinned, sort_keys=False))
    return column, row[column]


def test_reproduce_checks_hashes_and_expected_scores_and_fails_on_a_changed_value(tiny: Path) -> None:
    first = reproduce(tiny)
    assert first.returncode == 1, first.stderr[-3000:]
    assert "no pinned hashes at" in first.stdout and "no expected-score file" in first.stdout
    assert (tiny / "tables" / TABLE).is_file()

    runs = [
        next((tiny / "runs/mab/mab.u10/cpu-small" / system).glob("*/"))
        for system in ("muster", "muster_native")
    ]
    pinned = script("pin_contexts.py", f"--pins={tiny / 'pins'}", *map(str, runs))
    assert pinned.returncode == 0, pinned.stderr[-3000:]
    expected = tiny / "expected.yaml"
    pinned = script(
        "pin_expected.py", f"--tables={tiny / 'tables'}", "--benchmarks=mab", "--units=10",
        "--no-published", f"--out={expected}",
    )  # fmt: skip
    assert pinned.returncode == 0, pinned.stderr[-3000:]

    passed = reproduce(tiny)
    assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-3000:]
    assert " 0 FAIL" in passed.stdout and "PASSED" in passed.stdout
    record = json.loads((tiny / "runs" / "reproduce.json").read_text())
    assert record["passed"] and all(e["identical"] == e["total"] > 0 for e in record["hashes"])
    assert {e["verdict"] for e in record["hashes"]} == {"OK"}
    # Where the time went (issue 53): each step's kind, and seconds by kind.
    kinds = {step["kind"] for step in record["steps"]}
    assert {"embedding: mab (with muster's contexts at mab.u10)", "tables"} <= kinds
    assert set(record["breakdown"]) == kinds | {"hashes and figures checked"}
    assert all(seconds >= 0 for seconds in record["breakdown"].values())

    column, _ = edit_expected(expected, 0.001)  # within the default tolerance (0.005)
    okish = reproduce(tiny)
    assert okish.returncode == 0, okish.stdout[-3000:]
    assert f"OKish {TABLE} [muster] {column}" in okish.stdout

    manifest = next((tiny / "pins").rglob("cpu-small.json"))  # the exact rules' hashes
    saved = manifest.read_text()
    pins = json.loads(saved)
    first = next(iter(pins["hashes"]))
    pins["hashes"][first] = "0" * 64
    manifest.write_text(json.dumps(pins))
    changed = reproduce(tiny)
    assert changed.returncode == 1 and "5 of 6 identical  FAIL" in changed.stdout, changed.stdout[-2000:]
    assert f"differs: {first}" in changed.stdout
    manifest.write_text(saved)

    column, value = edit_expected(expected, 0.1)
    failed = reproduce(tiny, skip=("cuts", "published"))  # and the page, which shows the FAIL
    assert failed.returncode == 1
    assert f"FAIL  {TABLE} [muster] {column}: expected {value}" in failed.stdout
    assert "FAILED" in failed.stdout
    assert not json.loads((tiny / "runs" / "reproduce.json").read_text())["passed"]
    page = (tiny / "tables" / "index.html").read_text()
    assert "status-fail" in page and column in page
