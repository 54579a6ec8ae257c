"""harness.report.expected: a table's figures, the verdicts, and the pin's errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.report import expected
from harness.report.expected import FAIL, NEW, OK, OKISH, ExpectedError

TABLE = "b/p/m/comparison.csv"


def table(root: Path, *rows: str) -> Path:
    path = root / TABLE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("system,n,tokens_mean,recall,recall_ci,note\n" + "\n".join(rows) + "\n")
    return path


def pinned(root: Path) -> expected.Expected:
    path = root / "expected.yaml"
    expected.dump(path, root, [root / TABLE], expected.DEFAULT_TOLERANCE)
    return expected.load(path)


def test_figures_split_intervals_keep_empty_cells_and_skip_labels(tmp_path: Path) -> None:
    table(tmp_path, 'a,10,99.5,0.5,"[0.4000, 0.6000]",x', "b,10,99.5,,,y")
    rows = expected.figures(tmp_path / TABLE)
    assert rows["a"] == {
        "n": 10,
        "tokens_mean": 99.5,
        "recall": 0.5,
        "recall_ci_low": 0.4,
        "recall_ci_high": 0.6,
    }
    assert rows["b"]["recall"] is None and "note" not in rows["b"]


def test_each_figure_is_ok_okish_or_fail_and_an_unknown_row_is_new(tmp_path: Path) -> None:
    table(tmp_path, 'a,10,99.5,0.5,"[0.4000, 0.6000]",x')
    pin = pinned(tmp_path)
    table(tmp_path, 'a,10,130.0,0.503,"[0.4000, 0.7000]",x', 'c,1,1.0,1.0,"[1.0, 1.0]",z')
    cells = {(c.row, c.column): c.status for c in expected.check(pin, tmp_path)}
    assert cells[("a", "n")] == OK and cells[("a", "recall")] == OKISH  # 0.003 <= 0.005
    assert cells[("a", "tokens_mean")] == FAIL  # 30.5 tokens > 25
    assert cells[("a", "recall_ci_high")] == FAIL and cells[("a", "recall_ci_low")] == OK
    assert cells[("c", "recall")] == NEW
    assert expected.failed(expected.check(pin, tmp_path))


def test_a_missing_table_row_or_cell_fails(tmp_path: Path) -> None:
    table(tmp_path, 'a,10,99.5,0.5,"[0.4000, 0.6000]",x', 'b,10,99.5,0.5,"[0.4000, 0.6000]",y')
    pin = pinned(tmp_path)
    table(tmp_path, 'a,10,99.5,,"[0.4000, 0.6000]",x')
    cells = {(c.row, c.column): c.status for c in expected.check(pin, tmp_path)}
    assert cells[("a", "recall")] == FAIL and cells[("b", "n")] == FAIL
    (tmp_path / TABLE).unlink()
    assert {c.status for c in expected.check(pin, tmp_path)} == {FAIL}


def test_a_bad_pin_or_table_is_one_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ExpectedError, match="no expected-score file; pin one"):
        expected.load(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("tables: [1, 2")
    with pytest.raises(ExpectedError, match=r"bad\.yaml: not YAML"):
        expected.load(bad)
    bad.write_text("tables: 3\n")
    with pytest.raises(ExpectedError, match="a mapping with 'tables'"):
        expected.load(bad)
    table(tmp_path, 'a,10,99.5,0.5,"[0.4000, 0.6000]",x', 'a,11,99.5,0.5,"[0.4000, 0.6000]",y')
    with pytest.raises(ExpectedError, match="two rows are 'a'"):
        expected.figures(tmp_path / TABLE)


def test_the_pinned_matrix_holds_every_table_reproduce_writes() -> None:
    from harness.report.reproduction import PUBLISHED_TABLES, comparison_table, presets_of, reproduced
    from tests.conftest import REPO

    pin = expected.load(REPO / "manifests" / "expected.yaml")
    wanted = [comparison_table(b, p) for b in reproduced() for p in presets_of(b)] + list(PUBLISHED_TABLES)
    assert sorted(pin.tables) == sorted(wanted)
    cells = expected.check(pin, REPO / "results")
    assert cells and {c.status for c in cells} == {OK}  # the committed tables are the pinned ones


def test_a_manifest_is_ok_with_every_hash_okish_with_at_most_one_in_a_hundred_else_fail() -> None:
    assert expected.context_verdict(400, 400) == OK
    assert expected.context_verdict(396, 400) == OKISH  # 4 of 400: 1%
    assert expected.context_verdict(395, 400) == FAIL
    assert expected.context_verdict(5, 6) == FAIL  # one of a tiny manifest's six is 17%
    assert expected.context_verdict(0, 0) == FAIL  # nothing pinned is not a pass
