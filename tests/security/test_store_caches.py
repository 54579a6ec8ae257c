"""A damaged cache row costs a recomputation, never an answer.

Real damage to a real store file: a cached vector cut to one byte, or 4 bytes too long, written
with the ``sqlite3`` module as another program (or a torn disk) would leave it. The read through
the library and the real CLI equals the read before the damage, and the row is written again.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from muster_exact.store import Store
from tests.conftest import run_muster

MODELS = "cpu-small"
NOTES = [f"Note {i}: the blue bike in shed {i} has a flat tyre." for i in range(30)]
QUESTION = "Which bike has a flat tyre in shed 7?"
DAMAGE = {
    "one byte": "x'00'",
    "4 bytes too long": "CAST(vector || x'00000000' AS BLOB)",
}


def _damaged(path: Path, damage: str) -> list[str]:
    """Damage every other cached vector; the keys damaged."""
    db = sqlite3.connect(path)
    keys = [row[0] for row in db.execute("SELECT sha256 FROM vectors ORDER BY sha256")][::2]
    db.executemany(f"UPDATE vectors SET vector = {damage} WHERE sha256 = ?", [(k,) for k in keys])
    db.commit()
    db.close()
    return keys


def _intact(path: Path, keys: list[str]) -> bool:
    db = sqlite3.connect(path)
    marks = ",".join("?" * len(keys))
    rows = db.execute(f"SELECT dim, length(vector) FROM vectors WHERE sha256 IN ({marks})", keys).fetchall()
    db.close()
    return len(rows) == len(keys) and all(length == 4 * dim for dim, length in rows)


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_cached_vector_is_embedded_again(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "vectors.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(NOTES)
        before = store.context(QUESTION)
    assert "shed 7 has a flat tyre" in before.text
    keys = _damaged(path, damage)
    with caplog.at_level(logging.WARNING), Store.open(path, models=MODELS) as store:
        assert store.context(QUESTION) == before
    damaged = [r for r in caplog.records if "vector" in r.getMessage() and "damaged" in r.getMessage()]
    assert len(damaged) == 1, [r.getMessage() for r in caplog.records]  # one line, not one per row
    assert _intact(path, keys)  # written again
    _damaged(path, damage)
    answer = run_muster("query", "--store", str(path), QUESTION, "--json", env={"MUSTER_MODELS": MODELS})
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["context"] == before.to_dict()
    assert "Traceback" not in answer.stderr
