"""docs/architecture.md names files that exist, so its recipes cannot drift from the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
# A path in backticks: a top-level folder of the repo, then more path characters.
FOLDERS = "muster_exact|muster|harness|conf|scripts|tests|manifests|docs|results"
PATH = re.compile(rf"`((?:{FOLDERS})/[\w./<>*-]*)`")


def named_paths() -> list[str]:
    return sorted(set(PATH.findall(DOC.read_text(encoding="utf-8"))))


def exists(path: str) -> bool:
    """A plain path must exist; a pattern (``<name>``, ``*``) must match at least one file."""
    if "<" in path or "*" in path:
        pattern = re.sub(r"<[^>]+>", "*", path)
        return any(REPO.glob(pattern))
    return (REPO / path.rstrip("/")).exists()


def test_the_architecture_page_names_only_files_that_exist() -> None:
    paths = named_paths()
    assert len(paths) >= 20, "the page should name the modules it describes"
    missing = [path for path in paths if not exists(path)]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_each_recipe_is_on_the_page() -> None:
    text = DOC.read_text(encoding="utf-8")
    for recipe in ("How to add a benchmark", "How to add a channel", "How to add a model profile"):
        assert f"## {recipe}" in text, recipe


def test_the_names_the_recipes_use_exist() -> None:
    """Each recipe step names a thing in a file; the thing must be there."""
    import importlib

    text = DOC.read_text(encoding="utf-8")
    steps = {
        "harness.benchmark": ("BenchmarkBase",),
        "muster_exact.verify.corpora": ("READERS", "BenchmarkStore"),
        "muster_exact.channels": ("CHANNELS", "Proposals"),
        "muster_exact.memory": ("build", "Memory"),
        "muster_exact.derive": ("FLOORS",),
        "muster_exact.models": ("PROFILES", "ModelRef"),
    }
    for module, names in steps.items():
        loaded = importlib.import_module(module)
        for name in names:
            assert re.search(rf"\b{name}\b", text), f"the page no longer names {name}; update this test"
            assert hasattr(loaded, name), f"{module}.{name} is named by docs/architecture.md"
    assert hasattr(importlib.import_module("muster_exact.memory").Memory, "channels")
