"""``import muster`` is :mod:`muster_exact` under the documented name: the same objects, no copies."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import muster
import muster_exact
from tests.conftest import REPO

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_the_public_api_is_muster_exact_s_own_objects() -> None:
    assert muster.__all__ == muster_exact.__all__
    for name in muster_exact.__all__:
        assert getattr(muster, name) is getattr(muster_exact, name), name
    assert muster.__version__ == muster_exact.__version__


def test_the_version_is_the_package_s_own() -> None:
    """``muster_exact.core.version`` (a leaf, so the store can read it without a circle) says what
    the installed package says."""
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert muster_exact.__version__ == declared


@pytest.mark.parametrize(
    "name", ["integrations", "integrations.openai_tools", "serve.backend", "memory.presets", "store"]
)
def test_a_submodule_is_the_same_module_object_under_both_names(name: str) -> None:
    aliased = importlib.import_module(f"muster.{name}")
    assert aliased is importlib.import_module(f"muster_exact.{name}")
    assert sys.modules[f"muster.{name}"] is aliased


def test_a_submodule_is_an_attribute_and_a_from_import_too() -> None:
    from muster.integrations import langchain_tools

    assert muster.integrations is muster_exact.integrations
    assert langchain_tools is importlib.import_module("muster_exact.integrations.langchain_tools")


def test_a_name_muster_exact_lacks_is_an_error_under_muster_too() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("muster.no_such_module")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = muster.no_such_name


def test_python_dash_m_muster_is_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "muster", "--version"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0 and result.stdout.strip() == f"muster {muster_exact.__version__}"
