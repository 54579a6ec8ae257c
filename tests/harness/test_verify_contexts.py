"""``muster verify contexts`` on a manifest pinned from a harness run of the tiny stores."""

from __future__ import annotations

import json

import pytest

from muster_exact.verify import contexts as verify_contexts
from tests.conftest import run_muster
from tests.harness.test_stages import contexts_file, harness, tiny  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow


def test_verify_contexts_recomputes_and_compares(tiny, tmp_path) -> None:  # noqa: F811
    assert harness(tiny, "benchmark=locomo", "preset=locomo.u10", results="runs-verify").returncode == 0
    lines = map(json.loads, contexts_file(tiny, "locomo", results="runs-verify").read_text().splitlines())
    manifest = tmp_path / "manifests/contexts/locomo/locomo.u10/cpu-small.json"
    assert verify_contexts.write(manifest, "locomo", "locomo.u10", "cpu-small", "exact", lines) == 22

    ok = run_muster(
        "verify", "contexts", "--data", str(tiny / "data"), "--manifests", str(tmp_path / "manifests")
    )
    assert ok.returncode == 0, ok.stderr
    assert "locomo locomo.u10 cpu-small: 22 of 22 identical" in ok.stdout
    # The count of questions checked, on stderr only, in lines (stderr is a pipe), and -q silences it.
    assert "\r" not in ok.stderr and "locomo locomo.u10 cpu-small: 22/22 questions (100%), " in ok.stderr
    assert "questions" not in ok.stdout
    quiet = run_muster(
        "-q", "verify", "contexts", "--data", str(tiny / "data"), "--manifests", str(tmp_path / "manifests")
    )
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ok.stdout, quiet.stderr

    # The same preset under native rules is pinned beside it and checked the same way.
    native_run = ("benchmark=locomo", "preset=locomo.u10", "system=muster_native")
    assert harness(tiny, *native_run, results="runs-verify").returncode == 0
    native_file = contexts_file(tiny, "locomo", results="runs-verify", system="muster_native")
    native_lines = map(json.loads, native_file.read_text().splitlines())
    native = verify_contexts.path_for(tmp_path / "manifests", "locomo", "locomo.u10", "cpu-small", "native")
    assert verify_contexts.write(native, "locomo", "locomo.u10", "cpu-small", "native", native_lines) == 22
    both = run_muster(
        "verify", "contexts", "--data", str(tiny / "data"), "--manifests", str(tmp_path / "manifests")
    )
    assert both.returncode == 0, both.stderr
    assert "locomo locomo.u10 cpu-small (native rules): 22 of 22 identical" in both.stdout
    native.unlink()

    pinned = json.loads(manifest.read_text())
    first = next(iter(pinned["hashes"]))
    pinned["hashes"][first] = "0" * 64
    manifest.write_text(json.dumps(pinned))
    bad = run_muster(
        "verify", "contexts", "--data", str(tiny / "data"), "--manifests", str(tmp_path / "manifests")
    )
    assert bad.returncode == 1
    assert "21 of 22 identical  FAIL" in bad.stdout and f"differs: {first}" in bad.stdout


def test_no_manifests_is_a_clear_error(tmp_path) -> None:
    result = run_muster("verify", "contexts", "--data", str(tmp_path), "--manifests", str(tmp_path))
    assert result.returncode == 2 and "no context manifests" in result.stderr


def test_a_manifest_from_before_pieces_is_refused_with_a_word_to_repin(tmp_path) -> None:
    old = tmp_path / "contexts/locomo/locomo.u10/cpu-small.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"schema_version": 1, "hashes": {}, "stores": []}))
    result = run_muster("verify", "contexts", "--data", str(tmp_path), "--manifests", str(tmp_path))
    assert result.returncode == 2 and "re-pin" in result.stderr and "Traceback" not in result.stderr
