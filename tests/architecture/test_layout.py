"""The tree stays readable: no module of the library or the harness over 500 lines, no folder
with more than 15 Python modules, and each of the library's folders says in its ``__init__``
docstring what its stage takes and gives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import REPO

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

MAX_LINES = 500
MAX_MODULES = 15
PACKAGES = ("muster_exact", "harness")


def python_files() -> list[Path]:
    return sorted(
        p for package in PACKAGES for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts
    )


def test_no_module_is_over_the_line_limit() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in python_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"


def test_no_folder_holds_too_many_modules() -> None:
    folders = {p.parent for p in python_files()}
    crowded = {str(f.relative_to(REPO)): n for f in folders if (n := len(list(f.glob("*.py")))) > MAX_MODULES}
    assert not crowded, f"folders with more than {MAX_MODULES} modules: {crowded}"


def test_each_library_folder_says_what_it_is() -> None:
    silent = [
        str(init.relative_to(REPO))
        for init in sorted((REPO / "muster_exact").glob("*/__init__.py"))
        if not ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    ]
    assert not silent, f"package docstrings missing: {silent}"
