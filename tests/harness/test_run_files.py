"""A run's files are never counted twice: run locks, and one checked reader for every JSON-lines file.

Real processes throughout: the harness as users run it (``python -m harness``), two of them at
once against the loopback reader (tests/harness/fake_llm.py), a holder killed with SIGKILL, and
run files damaged the ways a careless user or a crash damages them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness import runs
from tests.conftest import REPO
from tests.harness.conftest import (
    contexts_path,
    error_line,
    fresh,
    harness_args,
    harness_env,
    reader,
    run_harness,
)
from tests.harness.fake_llm import Behaviour, FakeLLM

pytestmark = pytest.mark.slow

DEAD_READER = reader("http://127.0.0.1:9/v1", "fake-never-asked")  # refused before any request
KILLED_HOLDER = """
import os, signal, sys
from pathlib import Path
from harness import runs
with runs.locked(Path(sys.argv[1])):
    os.kill(os.getpid(), signal.SIGKILL)
"""


def answers_path(root: Path, results: str, model: str) -> Path:
    found = sorted((root / results).glob(f"mab/mab.u10/cpu-small/muster/*/answers/{model}-*/answers.jsonl"))
    assert len(found) == 1, found
    return found[0]


def test_two_runs_of_one_configuration_one_stops_naming_the_holder(mab_run: Path) -> None:
    results = fresh(mab_run, "concurrent")
    # The reader answers two questions, then holds the third: the first run is mid-way, holding its lock.
    with FakeLLM(Behaviour(hold_after=2)) as fake:
        args = harness_args(mab_run, results, "stage=answer", *reader(fake.base_url, "fake-race"))
        first = subprocess.Popen(
            args, cwd=REPO, env=harness_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert fake.wait_for_arrivals(3, timeout=300), "the first run never reached its held request"
            second = subprocess.Popen(
                args, cwd=REPO, env=harness_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            try:
                second_out, second_err = second.communicate(timeout=60)
            except subprocess.TimeoutExpired:  # it was not stopped: it is appending the same answers
                fake.behaviour.hold_after = None
                fake.release.set()
                second_out, second_err = second.communicate(timeout=300)
        finally:
            fake.behaviour.hold_after = None
            fake.release.set()
            _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err[-3000:]
    line = error_line(subprocess.CompletedProcess(args, second.returncode, second_out, second_err))
    assert f"pid {first.pid}" in line and socket.gethostname() in line and "since" in line
    answers = [json.loads(x) for x in answers_path(mab_run, results, "fake-race").read_text().splitlines()]
    assert len(answers) == len({a["qid"] for a in answers}) == 6  # every question once


def test_a_run_file_held_by_a_live_process_is_refused(mab_run: Path) -> None:
    results = fresh(mab_run, "held")
    path = contexts_path(mab_run, results)
    with runs.locked(path):
        held = run_harness(mab_run, results)
    line = error_line(held)
    assert str(path) in line and f"pid {os.getpid()}" in line and socket.gethostname() in line


def test_a_killed_holders_lock_is_taken_over_with_a_log_line(mab_run: Path) -> None:
    results = fresh(mab_run, "stale")
    path = contexts_path(mab_run, results)
    holder = subprocess.Popen([sys.executable, "-c", KILLED_HOLDER, str(path)], cwd=REPO)
    assert holder.wait(timeout=60) == -signal.SIGKILL
    resumed = run_harness(mab_run, results)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "took over" in resumed.stderr and f"pid {holder.pid}" in resumed.stderr
    again = run_harness(mab_run, results)  # released cleanly this time: nothing to take over
    assert again.returncode == 0 and "took over" not in again.stderr


def test_duplicated_question_ids_are_refused_by_every_reader(mab_run: Path) -> None:
    results = fresh(mab_run, "duplicated")
    path = contexts_path(mab_run, results)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines) + lines[1])  # the second question again, as two runs appending leave it
    damaged, scores = path.read_bytes(), (path.parent / "scores.csv").read_bytes()
    qid = json.loads(lines[1])["qid"]
    for stage in ("contexts", "tables", "answer"):
        line = error_line(run_harness(mab_run, results, f"stage={stage}", *DEAD_READER))
        assert f"{path}:{len(lines) + 1}" in line and repr(qid) in line and "line 2" in line, (stage, line)
    assert path.read_bytes() == damaged and (path.parent / "scores.csv").read_bytes() == scores


def test_a_question_id_of_another_selection_is_refused(mab_run: Path) -> None:
    results = fresh(mab_run, "unknown")
    path = contexts_path(mab_run, results)
    lines = path.read_text().splitlines(keepends=True)
    foreign = json.loads(lines[0])
    foreign["qid"] = "fc_other_no0"
    lines[0] = json.dumps(foreign) + "\n"
    path.write_text("".join(lines))
    for stage in ("contexts", "answer"):
        line = error_line(run_harness(mab_run, results, f"stage={stage}", *DEAD_READER))
        assert f"{path}:1" in line and "'fc_other_no0'" in line and "not a question" in line, (stage, line)


def test_a_damaged_middle_line_stops_the_run_with_its_line_number(mab_run: Path) -> None:
    results = fresh(mab_run, "corrupt")
    path = contexts_path(mab_run, results)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2][:30] + b"\n"  # a write cut short, then appended after: a broken line mid-file
    path.write_bytes(b"".join(lines))
    damaged = path.read_bytes()
    for stage in ("contexts", "tables"):
        line = error_line(run_harness(mab_run, results, f"stage={stage}"))
        assert f"{path}:3" in line and "not a JSON object" in line, (stage, line)
    assert path.read_bytes() == damaged  # nothing cut, nothing appended


def test_a_cut_off_last_line_is_recomputed_and_a_reader_never_cuts_it(mab_run: Path) -> None:
    results = fresh(mab_run, "cut")
    path = contexts_path(mab_run, results)
    timings = path.parent / runs.TIMINGS
    complete = path.read_bytes()
    lines = complete.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # what a kill mid-write leaves
    timing_lines = timings.read_bytes().splitlines(keepends=True)
    timings.write_bytes(b"".join(timing_lines[:-1]) + timing_lines[-1][:12])
    cut = path.read_bytes()
    # A reader (the tables stage) leaves the cut line alone: a run may be writing it this moment.
    tables = run_harness(mab_run, results, "stage=tables")
    assert tables.returncode == 0, tables.stderr[-3000:]
    assert path.read_bytes() == cut
    resumed = run_harness(mab_run, results, "stage.save_text=true")  # as the run it resumes
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{path}:{len(lines)}" in resumed.stderr and "cut off" in resumed.stderr
    assert path.read_bytes() == complete  # the cut question recomputed, byte for byte
    assert all(json.loads(x) for x in timings.read_text().splitlines())
    again = run_harness(mab_run, results, "stage=tables")
    assert again.returncode == 0, again.stderr[-3000:]
