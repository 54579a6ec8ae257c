"""Embedding progress in a log or a pipe, through the real CLI and the packaged embedder (issue
31): ``muster query FILE Q`` on a LoCoMo conversation says on stderr what its embedding will take,
then writes a line at each tenth with the rate and the ETA; stdout is the same bytes without them.
``muster add`` calls no model, so the estimate comes with the first read of the store.

Each run has its own empty $MUSTER_HOME, so its vector cache is cold and the embedder runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_muster

QUESTION = "Where did Caroline go for the LGBTQ conference?"
ESTIMATE = re.compile(
    r"embedding (?P<total>[\d,]+) pieces: about \d+ (s|min) on this machine "
    r"\(measured [\d.]+ pieces/s on the first [\d,]+\)"
)
LINE = re.compile(
    r"embedding: (?P<done>\d+)/(?P<total>\d+) pieces \(\d+%\), [\d.]+ pieces/s(?P<eta>, ETA \d+:\d\d)?"
)


@pytest.fixture(scope="module")
def conversation(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LoCoMo's first conversation as a numbered log, a turn per line (``12. Caroline: ...``) and
    a blank line between turns, so ``muster add`` takes each turn as a record: 419 units of one
    piece each, in either path."""
    sessions = json.loads((data / "locomo" / "locomo10.json").read_text())[0]["conversation"]
    turns = [turn for turns in sessions.values() if isinstance(turns, list) for turn in turns]
    path = tmp_path_factory.mktemp("locomo") / "conv-26.txt"
    path.write_text("\n".join(f"{i}. {t['speaker']}: {t['text']}\n" for i, t in enumerate(turns, 1)))
    return path


def _query(*args: str, home: Path) -> tuple[str, list[str]]:
    """stdout and the stderr lines of one ``muster query`` with stderr on a pipe."""
    result = run_muster("query", *args, "--models", "cpu-small", env={"MUSTER_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "\x1b" not in result.stderr  # a log's lines: no redrawing
    return result.stdout, result.stderr.splitlines()


def _embedding_lines(stderr: list[str]) -> tuple[int, list[re.Match[str]]]:
    """Where the estimate is among the stderr lines, and the progress lines after it."""
    estimates = [i for i, line in enumerate(stderr) if ESTIMATE.fullmatch(line)]
    assert len(estimates) == 1, stderr
    lines = [m for line in stderr if (m := LINE.fullmatch(line))]
    first_line = next(i for i, line in enumerate(stderr) if LINE.fullmatch(line))
    assert estimates[0] < first_line, stderr  # the estimate comes first
    return estimates[0], lines


def test_a_large_file_says_its_estimate_then_a_line_per_tenth(conversation: Path, tmp_path: Path) -> None:
    shown, stderr = _query(str(conversation), QUESTION, "--json", home=tmp_path / "shown")
    estimate, lines = _embedding_lines(stderr)
    total = int(lines[0]["total"])
    assert total >= 400 and ESTIMATE.fullmatch(stderr[estimate])["total"] == f"{total:,}"  # type: ignore[index]
    done = [int(m["done"]) for m in lines]
    assert len(lines) >= 5 and done == sorted(done) and done[-1] == total, stderr  # several, in order
    assert all(m["eta"] for m in lines[:-1]) and lines[-1]["eta"] is None  # an ETA until the end
    quiet, quiet_stderr = _query(str(conversation), QUESTION, "--json", "--quiet", home=tmp_path / "quiet")
    assert quiet == shown  # the same bytes on stdout, with progress or without
    assert not any(ESTIMATE.fullmatch(line) or LINE.fullmatch(line) for line in quiet_stderr)


def test_add_calls_no_model_so_the_first_read_says_the_estimate(conversation: Path, tmp_path: Path) -> None:
    store, home = tmp_path / "memory.db", {"MUSTER_HOME": str(tmp_path / "home")}
    added = run_muster("add", str(conversation), "--store", str(store), env=home)
    assert added.returncode == 0 and added.stderr == "", added.stderr  # no model: nothing to estimate
    _, stderr = _query("--store", str(store), QUESTION, home=tmp_path / "home")
    _, lines = _embedding_lines(stderr)
    assert len(lines) >= 5
