"""One rule for an optional dependency that is missing: the models extra and the agent
frameworks both raise MissingExtra naming the module and the install to run."""

from __future__ import annotations

import pytest

from muster_exact import integrations, models
from muster_exact.core import optional
from muster_exact.core.errors import MusterError

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
    with pytest.raises(optional.MissingExtra, match=r"run pip install 'muster-memory\[models\]'"):
        models.require("no_such_module_x")
    with pytest.raises(optional.MissingExtra, match=r"; run pip install no-such-package$"):
        integrations.require("no_such_module_x", "no-such-package")
