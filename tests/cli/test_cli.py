from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact import Plan
from muster_exact.cli import build_parser
from muster_exact.core.pipes import EXIT_CLOSED_PIPE
from tests.conftest import REPO, no_hub_env, run_muster


def test_derive_text_file_explains(tmp_path) -> None:
    path = tmp_path / "log.txt"
    facts = "".join(f"{i}. The CEO of Acme is Person {i}.\n" for i in range(6))
    path.write_text("Here is a list of facts:\n" + facts)
    result = run_muster("derive", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("branch: numbered log")
    assert "why:" in result.stdout


def test_derive_jsonl_as_json(tmp_path) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [
        {"speaker": "Caroline", "time": "2023-05-08", "text": f"message {i} about Lisbon"} for i in range(30)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    result = run_muster("derive", str(path), "--json")
    assert result.returncode == 0, result.stderr
    plan = Plan.from_json(result.stdout)
    assert plan.layout == "records" and plan.branch == "record_store" and plan.stats.records == 30


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.txt", b"", "empty input"),
        ("blank.txt", b"\n \n\t\n", "empty input"),
        ("latin1.txt", "caf\xe9".encode("latin-1"), "not UTF-8 text"),
        ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
        ("records.json", b'[{"speaker": "a", "time": "t"}]', "record 0 has no text"),
        ("records.jsonl", b'{"text": "x"}\n{"speaker": "b"}\n', "record 1 has no text"),
        ("broken.json", b"[{", "not valid JSON"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run_muster("derive", str(path))
    _assert_one_line_error(result, message)


def test_directory_and_missing_file(tmp_path) -> None:
    _assert_one_line_error(run_muster("derive", str(tmp_path)), "is a directory")
    _assert_one_line_error(run_muster("derive", str(tmp_path / "nope.txt")), "no such file")


def _assert_one_line_error(result, message: str) -> None:
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("muster: error: ") and message in lines[0]
    assert "Traceback" not in result.stderr


def test_verify_cuts_missing_data_dir(tmp_path) -> None:
    result = run_muster("verify", "cuts", "--data", str(tmp_path / "none"))
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_verify_cuts_bad_manifest(tmp_path, data) -> None:
    bad = tmp_path / "cuts.json"
    bad.write_text("{}")
    result = run_muster("verify", "cuts", "--data", str(data), "--manifest", str(bad))
    assert result.returncode == 2 and "schema_version" in result.stderr


def test_forget_by_id_and_by_request_id(tmp_path) -> None:
    store = str(tmp_path / "agent.muster")
    env = {"MUSTER_MODELS": "cpu-small"}
    notes = '[{"id": "n1", "text": "The demo moved to Friday."}, "Lunch is at noon."]'
    assert run_muster("add", "--store", store, "-", stdin=notes).returncode == 0
    added = run_muster("add", "--store", store, "-", "--request-id", "b7", stdin="The code is 4417.")
    assert added.returncode == 0, added.stderr
    by_id = run_muster("forget", "--store", store, "--id", "n1", "--id", "n1", env=env)
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.startswith("1 records deleted (namespace default: 2 records, head ")
    by_request = run_muster("forget", "--store", store, "--request-id", "b7", "--json", env=env)
    assert by_request.returncode == 0, by_request.stderr
    result = json.loads(by_request.stdout)
    assert result["deleted"] == ["r3"] and result["head"]["records"] == 1 and result["erase_pending"] is False
    # An id the namespace does not hold is refused, and nothing is deleted (r2 stays).
    _assert_one_line_error(
        run_muster("forget", "--store", store, "--id", "r2", "--id", "n1", env=env), "no record 'n1'"
    )
    listed = run_muster("query", "--store", store, "When is lunch?", env=env)
    assert "Lunch is at noon." in listed.stdout and "Friday" not in listed.stdout


def test_forget_never_creates_a_store_and_wants_ids_or_a_request_id(tmp_path) -> None:
    missing = tmp_path / "none.muster"
    _assert_one_line_error(run_muster("forget", "--store", str(missing), "--id", "r1"), "no store at")
    assert list(tmp_path.iterdir()) == []
    # Neither is refused; both are a delete with its own request id (issue 55: safe to retry).
    refused = run_muster("forget", "--store", str(missing))
    assert refused.returncode == 2 and "--id" in refused.stderr and "Traceback" not in refused.stderr
    (tmp_path / "a.txt").write_text("one note")
    assert run_muster("add", "--store", str(missing), str(tmp_path / "a.txt")).returncode == 0
    _assert_one_line_error(run_muster("forget", "--store", str(missing), "--id", " "), "id 0 must be 1 to")


def _records(tmp_path: Path, count: int, words: int = 8) -> Path:
    path = tmp_path / f"records-{count}.jsonl"
    rows = [
        {
            "speaker": "Ana" if i % 2 else "Bo",
            "time": f"2023-05-{1 + i % 28:02d}",
            "text": f"Message {i}: the dog Rex{i % 11} was in city {i % 37}. " + "and then " * words,
        }
        for i in range(count)
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows))
    return path


def _fresh_home(tmp_path: Path, name: str) -> dict[str, str]:
    """An empty vector cache: every piece is embedded, so the build has progress to show."""
    return {"MUSTER_MODELS": "cpu-small", "MUSTER_HOME": str(tmp_path / name)}


QUESTION = "Where was Rex3?"


@pytest.mark.parametrize(
    "argv",
    [
        ["-q", "query", "F", "Q"],
        ["query", "F", "Q", "-q"],
        ["-q", "verify", "contexts", "--data", "D"],
        ["verify", "contexts", "--data", "D", "--quiet"],
    ],
)
def test_quiet_before_the_command_or_after_it(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).quiet
    assert not build_parser().parse_args([a for a in argv if a not in ("-q", "--quiet")]).quiet


def _muster(*args: str, stdout: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "muster_exact", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", ["presets", "--help", "query"])
def test_a_closed_pipe_ends_the_cli_quietly(tmp_path, command: str, unbuffered: str) -> None:
    """The reader is gone before the first write (deterministic): no "Broken pipe", no traceback,
    and the exit status of a tool SIGPIPE stopped (141), as `yes | head -1` gives. Unbuffered
    (PYTHONUNBUFFERED=1), a print meets the closed pipe; buffered, the flush at the end does
    (after argparse's exit, for --help)."""
    # -q: a slow build on a busy machine says what it does on stderr (by time); this is about pipes.
    args = ("-q", "query", str(_records(tmp_path, 30)), QUESTION) if command == "query" else (command,)
    read, write = os.pipe()
    os.close(read)
    env = {**_fresh_home(tmp_path, "home"), "PYTHONUNBUFFERED": unbuffered}
    process = _muster(*args, stdout=write, env=env)
    os.close(write)
    _, stderr = process.communicate(timeout=600)
    # Unbuffered, argparse's own write of --help ignores the error (and exits 0): nothing is left.
    expected = 0 if command == "--help" and unbuffered else EXIT_CLOSED_PIPE
    assert process.returncode == expected, stderr
    assert stderr == b""


def test_a_reader_that_stops_after_one_line(tmp_path) -> None:
    """`muster query F Q --json --explain | head -1` with an output far larger than the pipe."""
    path = _records(tmp_path, 60, words=40)
    args = ("-q", "query", str(path), QUESTION, "--json", "--explain", "--units", "40")
    process = _muster(*args, stdout=subprocess.PIPE, env=_fresh_home(tmp_path, "home"))
    assert process.stdout is not None and process.stderr is not None
    fcntl.fcntl(process.stdout, fcntl.F_SETPIPE_SZ, 4096)  # the smallest pipe: the writer must wait
    assert process.stdout.readline() == b"{\n"
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=600) == EXIT_CLOSED_PIPE, stderr
    assert b"Broken pipe" not in stderr and b"Traceback" not in stderr and stderr == b""


def test_derive_with_models_gives_the_plan_a_build_uses(tmp_path) -> None:
    """Without --models the plan is model-free (units up to the record budget); with them, native
    record-store units are cut at the embedder's window, as `muster query --explain` reads them."""
    path = _records(tmp_path, 120)
    alone = json.loads(run_muster("derive", str(path), "--json").stdout)
    built = run_muster("derive", str(path), "--json", "--models", "cpu-small")
    assert built.returncode == 0, built.stderr
    plan = json.loads(built.stdout)
    assert plan["branch"] == alone["branch"] == "record_store"
    assert (alone["unit_budget"], plan["unit_budget"]) == (512, 256)
    assert plan["stats"]["units"] > alone["stats"]["units"] and plan["retrieval"]["unit_size"] == "window"
    exact = run_muster("derive", str(path), "--json", "--models", "cpu-small", "--mode", "exact")
    assert json.loads(exact.stdout)["unit_budget"] == 512


def test_the_auto_fallback_is_one_short_line_and_naming_the_models_silences_it(tmp_path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Caroline moved to Lisbon.\n\nMelanie stayed in Porto.\n", encoding="utf-8")
    env = {**no_hub_env(tmp_path), "HF_HUB_OFFLINE": "1"}
    # -q: a busy machine's build says its progress after 2 s; the warning stays.
    done = run_muster("-q", "query", str(notes), "Where does Caroline live?", env=env)
    assert done.returncode == 0 and "Lisbon" in done.stdout, done.stderr
    (line,) = done.stderr.splitlines()  # one line: no file, line number or source line of Python's
    assert line == (
        "muster: warning: models: cpu-small (MiniLM), not the paper's (HF_HUB_OFFLINE is set); "
        "choose with --models cpu-small|paper|DIR or $MUSTER_MODELS"
    )
    assert len(line) < 150
    for named in (("--models", "cpu-small"), ()):
        env_named = env if named else {**env, "MUSTER_MODELS": "cpu-small"}
        quiet = run_muster("-q", "query", str(notes), "Where does Caroline live?", *named, env=env_named)
        assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_the_cli_leaves_other_warnings_to_python() -> None:
    from muster_exact.cli import _one_line
    from muster_exact.core.errors import ModelFallbackWarning

    seen: list[tuple[object, ...]] = []
    show = _one_line(lambda *args: seen.append(args))
    show("old", DeprecationWarning, "x.py", 3, None, None)
    assert seen == [("old", DeprecationWarning, "x.py", 3, None, None)]
    show("models: cpu-small", ModelFallbackWarning, "hub.py", 1, None, None)
    assert len(seen) == 1  # printed by the CLI itself, not passed on
