"""Careless harness inputs get one line and exit 2: a shard outside the shards, a foreign LLM cache."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.harness.conftest import error_line, fresh, reader, run_harness
from tests.harness.tiny_data import write_manifest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("stage.shard=5", "stage.shards=2"), "stage.shard must be in [0, 2), not 5"),
        (("stage.shard=-1", "stage.shards=2"), "stage.shard must be in [0, 2), not -1"),
        (("stage.shards=0",), "stage.shards must be at least 1, not 0"),
    ],
)
def test_a_shard_outside_the_shards_is_one_line_before_anything_is_written(
    tmp_path: Path, overrides: tuple[str, ...], message: str
) -> None:
    write_manifest(tmp_path / "data", tmp_path / "manifests")
    line = error_line(run_harness(tmp_path, "runs", *overrides))
    assert message in line
    assert not (tmp_path / "runs").exists()


def test_another_applications_database_as_the_llm_cache_is_refused_and_left_unchanged(
    mab_run: Path,
) -> None:
    results = fresh(mab_run, "foreign-cache")
    foreign = mab_run / results / "llm.sqlite"  # where paths.llm_cache points (tests/harness/conftest.py)
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes (body) VALUES ('an unrelated app keeps its notes here')")
    db.close()
    before = hashlib.sha256(foreign.read_bytes()).hexdigest()
    line = error_line(run_harness(mab_run, results, "stage=answer", *reader("http://127.0.0.1:9/v1", "fake")))
    assert str(foreign) in line and "not an LLM response cache" in line
    assert hashlib.sha256(foreign.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in foreign.parent.glob("llm.sqlite*")) == ["llm.sqlite"]


def test_the_tables_stage_with_no_run_to_tabulate(tmp_path: Path) -> None:
    write_manifest(tmp_path / "data", tmp_path / "manifests")
    line = error_line(run_harness(tmp_path, "runs", "stage=tables"))
    assert "run stage=contexts first" in line
