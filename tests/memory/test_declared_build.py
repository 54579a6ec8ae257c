"""Declared record input end to end: build() with the packaged embedder, and the CLI's envelope
(muster query / muster derive FILE with {"format": "serial", "records": [...]})."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muster_exact import SourceOrder
from muster_exact.derive.declared import Envelope
from muster_exact.memory import build
from tests.conftest import run_muster

# Two versions of one slot (the CEO of Acme), a reset and a repeat among the serials, one record
# without a marker, and a record object with fields around its text.
RECORDS = [
    "Step 1: The CEO of Acme is Ann Lee.",
    "#2 The weather in Oslo is cold.",
    {"speaker": "robot", "time": "2026-10-20", "text": "(3) The capital of Peru is Lima.", "id": "p"},
    "[1] The sister of Tom is Mia.",
    "The color of the car is red.",
    "4. The owner of the boat is Sam.",
    "Step 4: The CEO of Acme is Bo Li.",
]
QUESTION = "Who is the CEO of Acme?"
ENV = {"MUSTER_MODELS": "cpu-small"}


@pytest.fixture(scope="module")
def declared_memory():  # type: ignore[no-untyped-def]
    return build(RECORDS, models="cpu-small", record_format="serial")


def test_every_version_is_shown_without_its_prefix(declared_memory) -> None:  # type: ignore[no-untyped-def]
    context = declared_memory.context(QUESTION)
    assert "The CEO of Acme is Ann Lee." in context.text
    assert "The CEO of Acme is Bo Li." in context.text
    assert context.text.index("Ann Lee") < context.text.index("Bo Li")  # declared order
    for prefix in ("Step ", "#2", "(3)", "[1]", "4. "):
        assert prefix not in context.text  # the body is what the reader receives
    assert declared_memory.plan.supersession is False
    assert declared_memory.ordered_records.roundtrip() == RECORDS
    # U = 10 over 7 records: all of them, each labelled by its id, else its place in the array.
    assert set(context.record_ids) == {"r0", "r1", "p", "r3", "r4", "r5", "r6"}


def test_automatic_detection_of_a_log_keeps_only_the_newest_version() -> None:
    # The contrast: the same two versions in a log the detector reads ('Step N:' throughout)
    # keep only the newest; declared, both stay.
    log = [f"Step {n}: {text}" for n, text in enumerate(_bodies(), start=1)]
    auto = build(log, models="cpu-small")
    assert (auto.plan.branch, auto.plan.supersession) == ("numbered_log", True)
    assert "Ann Lee" not in auto.context(QUESTION).text
    kept = build(log, models="cpu-small", declared_order=SourceOrder())
    assert {"Ann Lee", "Bo Li"} <= set(_names(kept.context(QUESTION).text))


def _bodies() -> list[str]:
    return [
        "The CEO of Acme is Ann Lee.",
        "The weather in Oslo is cold.",
        "The capital of Peru is Lima.",
        "The sister of Tom is Mia.",
        "The color of the car is red.",
        "The owner of the boat is Sam.",
        "The CEO of Acme is Bo Li.",
    ]


def _names(text: str) -> list[str]:
    return [name for name in ("Ann Lee", "Bo Li") if name in text]


def test_an_envelope_builds_as_the_declaration_does(declared_memory) -> None:  # type: ignore[no-untyped-def]
    memory = build(Envelope(SourceOrder(), list(RECORDS)), models="cpu-small")
    assert memory.context(QUESTION).text == declared_memory.context(QUESTION).text


def _envelope_file(tmp_path: Path, value: object, name: str = "log.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def test_cli_query_reads_the_envelope(tmp_path: Path, declared_memory) -> None:  # type: ignore[no-untyped-def]
    path = _envelope_file(tmp_path, {"format": "serial", "records": RECORDS})
    result = run_muster("-q", "query", str(path), QUESTION, env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == declared_memory.context(QUESTION).text
    result = run_muster("derive", str(path), "--json", env=ENV)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["branch"], plan["order"], plan["supersession"]) == ("numbered_log", "stored", False)
    # A plain array of the same records is still read by automatic detection.
    array = _envelope_file(tmp_path, RECORDS, "array.json")
    automatic = json.loads(run_muster("derive", str(array), "--json", env=ENV).stdout)
    assert not any("declared" in reason for reason in automatic["reasons"])
    assert automatic["branch"] != "numbered_log"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"format": "csv", "records": ["a"]}, "unknown declared record format 'csv'"),
        ({"format": "serial", "records": "a"}, "'records' is a list of records, not str"),
        ({"format": "serial"}, "missing 'records'"),
        ({"format": "serial", "records": ["Step 1:"]}, "record 0 is only a serial prefix"),
    ],
)
def test_cli_bad_envelope_is_one_line_exit_2(tmp_path: Path, value: object, message: str) -> None:
    path = _envelope_file(tmp_path, value)
    for command in (["query", str(path), QUESTION], ["derive", str(path)]):
        result = run_muster(*command, env=ENV)
        assert result.returncode == 2
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("muster: error: ") and message in lines[0], lines


def test_a_store_refuses_an_envelope_with_a_reason(tmp_path: Path) -> None:
    path = _envelope_file(tmp_path, {"format": "serial", "records": RECORDS})
    result = run_muster("add", "--store", str(tmp_path / "s.muster"), str(path), env=ENV)
    assert result.returncode == 2
    assert "is a declared-record envelope; a store does not take declared input" in result.stderr
    assert not (tmp_path / "s.muster").exists()  # nothing written
