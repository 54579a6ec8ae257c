from __future__ import annotations

import json

import pytest

from muster_exact.memory import presets
from tests.conftest import REPO

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_nine_presets_pinned_by_sha256() -> None:
    pinned = json.loads((REPO / "manifests/presets.json").read_text())["presets"]
    expected = {f"{b}.u{u}" for b in presets.BENCHMARKS for u in (10, 20, 40)}
    assert set(presets.names()) == expected == set(pinned)
    for name in expected:
        assert presets.sha256(name) == pinned[name], f"{name} was edited; presets are frozen"
        preset = presets.load(name)
        assert preset.name == name and preset.units_read == int(name.split(".u")[1])
        assert preset.mode == "exact" and preset.policy in ("flrs", "flr")


def test_unknown_preset_answers_with_the_closest_names() -> None:
    with pytest.raises(presets.PresetError, match=r"did you mean .*beam\.u20"):
        presets.load("beam.u02")


def test_malformed_preset_is_refused(tmp_path, monkeypatch) -> None:
    (tmp_path / "x.u1.yaml").write_text("name: x.u1\nunits_read: 1\n")
    monkeypatch.setenv("MUSTER_PRESETS", str(tmp_path))
    with pytest.raises(presets.PresetError, match="must set exactly"):
        presets.load("x.u1")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mode", "native", "presets run in exact mode only"),
        ("benchmark", "locomo", "is for benchmark 'locomo'; a preset is named after its benchmark"),
        ("benchmark", "longmemeval", "is for benchmark 'longmemeval'"),
    ],
)
def test_a_preset_not_in_exact_mode_or_for_another_benchmark_is_refused(
    tmp_path, monkeypatch, field: str, value: str, message: str
) -> None:
    frozen = presets.path_of("beam.u10").read_text()
    (tmp_path / "beam.u10.yaml").write_text(frozen.replace(f"\n{field}: ", f"\n{field}: {value} #"))
    monkeypatch.setenv("MUSTER_PRESETS", str(tmp_path))
    with pytest.raises(presets.PresetError, match=message):
        presets.load("beam.u10")
