"""Records to add from a file or standard input (``muster add``): a ``.json`` array, ``.jsonl``,
or text split into records by the one block rule (:func:`muster_exact.text.records.blocks`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

from muster_exact.core.errors import DeclaredError, InputError
from muster_exact.derive.declared import ENVELOPE_KEYS
from muster_exact.text.records import (
    NOT_JSON,
    block_texts,
    is_blank,
    load_json,
    parse_jsonl,
    read_input,
    sniff_json,
)


def read_records_file(
    path: str | Path | None, stdin: BinaryIO | None = None, max_bytes: int | None = None
) -> list[Any]:
    """Records to add from a file (``.json`` array, ``.jsonl``, or text: one record per
    blank-line-separated block) or from standard input (JSON, JSON lines, or text), read by the
    one input reader (:func:`muster_exact.text.records.read_input`: regular files, a size cap)."""
    if path is None or str(path) == "-":
        if stdin is None:
            raise InputError("no input: give a file, or '-' with records on standard input")
        return _parse_records(read_input(stdin, max_bytes), "standard input")
    path = Path(path)
    return _parse_records(read_input(path, max_bytes), str(path), path.suffix.lower())


def _parse_records(text: str, where: str, suffix: str = "") -> list[Any]:
    if is_blank(text):
        raise InputError(f"{where} is empty; nothing to add")
    stripped = text.strip()
    if suffix == ".json":
        value = load_json(stripped, where)
    elif not suffix and stripped[0] in "[{":  # no name to go by: JSON, JSON lines or text
        value = sniff_json(stripped, where)
    else:
        value = NOT_JSON
    if isinstance(value, dict) and set(value) == set(ENVELOPE_KEYS):
        raise DeclaredError(
            f"{where} is a declared-record envelope; a store does not take declared input (it is "
            "built in memory: muster query FILE QUESTION); add its records as a JSON array instead"
        )
    if value is not NOT_JSON:
        return value if isinstance(value, list) else [value]
    if suffix == ".jsonl" or (not suffix and stripped[0] == "{"):
        return parse_jsonl(stripped, where)
    return block_texts(text)  # the blocks `muster query FILE` reads (from_text), by the same rule
