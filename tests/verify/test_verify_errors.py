"""``muster verify`` on careless inputs: one line on stderr, exit 2, and no verdict lines before it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_muster

BINARY = bytes(range(256)) * 4  # not UTF-8: byte 0x80 cannot start a character


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("muster: error: "), result.stderr
    return lines[0]


def data_root(tmp_path: Path) -> Path:
    """A data root with one (tiny) LoCoMo file: enough for the data check to pass."""
    locomo = tmp_path / "data/locomo/locomo10.json"
    locomo.parent.mkdir(parents=True)
    locomo.write_text(json.dumps([{"sample_id": "conv-x", "conversation": {}, "qa": []}]))
    return tmp_path / "data"


def test_verify_cuts_with_a_binary_manifest(tmp_path: Path) -> None:
    manifest = tmp_path / "binary.bin"
    manifest.write_bytes(BINARY)
    result = run_muster("verify", "cuts", "--data", str(data_root(tmp_path)), "--manifest", str(manifest))
    line = one_error(result)
    assert str(manifest) in line and "UTF-8" in line and result.stdout == ""


@pytest.mark.parametrize("content", [BINARY, b"[1, 2, 3]", b"[" * 100_000])
def test_verify_contexts_with_a_manifest_that_is_not_one(tmp_path: Path, content: bytes) -> None:
    manifest = tmp_path / "manifests/contexts/locomo/locomo.u10/cpu-small.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_bytes(content)
    result = run_muster(
        "verify", "contexts", "--data", str(data_root(tmp_path)), "--manifests", str(tmp_path / "manifests")
    )
    assert str(manifest) in one_error(result) and result.stdout == ""


@pytest.mark.parametrize("check", ["contexts", "cuts"])
def test_verify_with_no_data_root_says_so_before_any_verdict(tmp_path: Path, check: str) -> None:
    result = run_muster("verify", check, "--data", str(tmp_path / "nosuch"))
    line = one_error(result)
    assert str(tmp_path / "nosuch") in line and "does not exist" in line
    assert result.stdout == ""  # not "0 of 400 identical  FAIL" first


def test_verify_contexts_with_a_data_root_missing_the_benchmark(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = run_muster("verify", "contexts", "--data", str(tmp_path / "empty"), "--preset", "beam.u10")
    assert str(tmp_path / "empty") in one_error(result) and result.stdout == ""
