"""The one registry: names in order, lazy entries imported on first use, one typed error."""

from __future__ import annotations

import sys

import pytest

from muster_exact.core.errors import InputError
from muster_exact.core.registry import Registry, import_target
from muster_exact.memory.presets import PresetError

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_lazy_entries_are_imported_only_when_asked_for() -> None:
    sys.modules.pop("json.tool", None)
    registry: Registry[object] = Registry("thing", {"tool": "json.tool:main", "dumps": "json:dumps"})
    assert registry.names() == ["tool", "dumps"]
    assert "tool" in registry and "other" not in registry and len(registry) == 2
    assert "json.tool" not in sys.modules
    import json

    assert registry.get("dumps") is json.dumps
    assert registry.target("dumps") == "json:dumps"


def test_an_unknown_name_is_one_typed_error_with_the_closest_names() -> None:
    registry: Registry[int] = Registry("benchmark", {"locomo": 1, "locomo_refined": 2, "beam": 3})
    with pytest.raises(InputError, match=r"unknown benchmark 'lokomo'; did you mean locomo"):
        registry.check("lokomo")
    with pytest.raises(InputError, match=r"choose one of locomo, locomo_refined, beam"):
        registry.get("zzz")


def test_the_error_class_is_the_registrys_own() -> None:
    registry: Registry[int] = Registry("preset", lambda: {"mab.u10": 1}, error=PresetError)
    with pytest.raises(PresetError, match=r"did you mean mab\.u10"):
        registry.check("mab.u1")
    with pytest.raises(TypeError):
        registry.register("x", 2)


def test_registering_a_name_twice_is_refused() -> None:
    registry: Registry[int] = Registry("system", {"muster": 1})
    with pytest.raises(ValueError, match="twice"):
        registry.register("muster", 2)


def test_a_malformed_lazy_target_is_a_bug() -> None:
    with pytest.raises(ValueError, match="module:attr"):
        import_target("json.dumps")
