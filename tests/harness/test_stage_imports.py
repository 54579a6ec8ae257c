"""Stages depend on shared modules, never on each other; no stage names a benchmark.

A helper two stages need lives in a shared harness module (``harness.runs``,
``harness.systems.memories``, ``harness.pinned``, ``harness.llm.judge_calls``...), so a
stage can be read, changed or removed alone. What differs between benchmarks
lives in the benchmark's folder (``harness/benchmarks/<name>/``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harness import benchmarks
from tests.conftest import REPO

STAGES = sorted(p for p in (REPO / "harness" / "stages").glob("*.py") if p.name != "__init__.py")


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, ``from a import b`` counted as both ``a`` and ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_stages_are_found() -> None:
    assert {p.stem for p in STAGES} >= {"contexts", "answer", "judge", "rescore", "tables", "audit"}


@pytest.mark.parametrize("path", STAGES, ids=lambda p: p.stem)
def test_no_stage_imports_another(path: Path) -> None:
    others = {f"harness.stages.{p.stem}" for p in STAGES if p != path}
    assert not imported_modules(path) & others, f"{path.name} imports another stage"


def test_the_check_sees_a_sideways_import(tmp_path: Path) -> None:
    sideways = tmp_path / "judge.py"
    sideways.write_text(
        "from harness.stages.answer import StageOrderError\nfrom harness.stages import contexts\n"
    )
    assert {"harness.stages.answer", "harness.stages.contexts"} <= imported_modules(sideways)


def test_no_benchmark_is_named_outside_its_registration() -> None:
    names = "|".join(map(re.escape, benchmarks.REGISTRY.names()))
    quoted = re.compile(rf"""["']({names})["']|== *["']?({names})\b""")
    places = [
        *STAGES,
        REPO / "harness" / "tables.py",
        REPO / "harness" / "llm" / "judging.py",
        REPO / "scripts" / "reproduce.py",
        REPO / "harness" / "report" / "page.py",
        REPO / "harness" / "report" / "matrix.py",
        REPO / "scripts" / "report.py",
    ]
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in places
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if quoted.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_library_never_imports_the_harness() -> None:
    """``muster verify`` presents benchmark stores from ``muster_exact.verify.corpora`` alone."""
    library = sorted((REPO / "muster_exact").rglob("*.py"))
    found = [
        f"{path.relative_to(REPO)}: {module}"
        for path in library
        for module in imported_modules(path)
        if module == "harness" or module.startswith("harness.")
    ]
    assert library and not found, found
