from __future__ import annotations

import json

import pytest

from muster_exact import Plan
from tests.conftest import run_muster


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
