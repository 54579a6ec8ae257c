"""What the CLI reads: regular files (or ``-``), capped in size, JSON of any nesting answered.

The real CLI in a subprocess with a timeout well below the suite's, so a hang
(a FIFO with no writer, /dev/zero) fails the test instead of stalling it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from muster_exact.core.errors import InputError
from muster_exact.store import MAX_METADATA_DEPTH, Store
from muster_exact.text.records import DEFAULT_MAX_INPUT_BYTES, from_records
from tests.conftest import data_root, one_line_error, run_muster

HANG = 60  # seconds: a command that takes longer is hanging


def muster(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_muster(*args, stdin=stdin, env=env, timeout=HANG)


def commands(path: str, store: Path) -> list[tuple[str, ...]]:
    """Every command that reads an input file."""
    return [("derive", path), ("query", path, "where?"), ("add", "--store", str(store), path)]


# --- item 8: regular files only, and a cap ----------------------------------------------------


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_special_files_are_refused_at_once(tmp_path: Path, special: str) -> None:
    path = special
    if special == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)  # no writer: opening it to read would wait forever
    store = tmp_path / "s.muster"
    for command in commands(path, store):
        one_line_error(muster(*command), "not a regular file")
    assert not store.exists()


def test_input_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("A note about the garden.\n\n" * 100)  # 2,600 bytes
    store = tmp_path / "s.muster"
    for command in commands(str(path), store):
        one_line_error(muster(*command[:1], "--max-input-bytes", "1000", *command[1:]), "1,000 bytes")
        one_line_error(muster(*command, env={"MUSTER_MAX_INPUT_BYTES": "1000"}), "MUSTER_MAX_INPUT_BYTES")
    piped = muster(
        "add", "--store", str(store), "-", stdin=path.read_bytes(), env={"MUSTER_MAX_INPUT_BYTES": "1000"}
    )
    one_line_error(piped, "standard input")
    assert not store.exists()
    ok = muster("add", "--store", str(store), str(path), "--max-input-bytes", "3000")
    assert ok.returncode == 0, ok.stderr


def test_a_bad_cap_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("A note.\n")
    one_line_error(
        muster("derive", str(path), env={"MUSTER_MAX_INPUT_BYTES": "lots"}), "MUSTER_MAX_INPUT_BYTES"
    )
    one_line_error(muster("derive", "--max-input-bytes", "0", str(path)), "--max-input-bytes")


def test_the_default_cap_is_far_above_every_benchmark_file() -> None:
    root = data_root()
    if root is None:
        pytest.skip("benchmark data not found")
    largest = max(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert largest * 16 < DEFAULT_MAX_INPUT_BYTES


# --- item 9: nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl", "deep"])
def test_deeply_nested_json_is_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("[" * 100_000)
    store = tmp_path / "s.muster"
    # derive and query read a file without a JSON suffix as text (which "[[[..." is); add looks for JSON.
    for command in commands(str(path), store) if "." in name else [("add", "--store", str(store), str(path))]:
        one_line_error(muster(*command), "nested")
    one_line_error(muster("add", "--store", str(store), "-", stdin=b"[" * 100_000), "nested")
    one_line_error(
        muster("add", "--store", str(store), "-", stdin=b'{"text": "x", "m": ' + b"[" * 100_000), "nested"
    )
    assert not store.exists()


def deep(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def test_the_library_refuses_metadata_nested_too_deep(tmp_path: Path) -> None:
    with Store.open(tmp_path / "deep.muster") as store:
        for levels in (MAX_METADATA_DEPTH + 1, 900, 100_000):
            with pytest.raises(InputError, match=f"nested more than {MAX_METADATA_DEPTH} levels"):
                store.add({"text": "a note", "metadata": deep(levels)})
        assert store.head().records == 0
        store.add({"text": "a note", "metadata": deep(MAX_METADATA_DEPTH)})
        assert store.head().records == 1
    with pytest.raises(InputError, match="nested more than"):
        from_records([{"text": "a note", "metadata": deep(900)}])
