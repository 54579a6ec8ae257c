"""Normalise what a user hands us into one store text with record spans.

Two layouts exist, and detection reads them differently (SPEC 2):

* ``text``: raw text or a ``.txt`` file. Records are the blank-line-separated
  blocks; serials are read from every non-empty line.
* ``records``: a JSON/JSONL array of records (``{"speaker","time","text"}``
  dicts, or plain strings). Each element is one record, rendered as
  ``[time] speaker: text``; its serial is read only from the start of its
  text, never from id, time or speaker.

Either way the result is a :class:`Source`: the exact text the reader will
see, plus spans that map every record back to its offsets (and its id, when
the input had one). Newlines are normalised to ``\\n``; nothing else changes.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from muster_exact.errors import InputError

Layout = Literal["text", "records"]
RECORD_SEPARATOR = "\n\n"
TEXT_KEYS = ("text", "content")
SPEAKER_KEYS = ("speaker", "role")
TIME_KEYS = ("time", "timestamp", "date")

_BLOCK = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")


@dataclass(frozen=True, slots=True)
class Record:
    """One record: ``text[start:end]`` of the store, its body from ``body_start``."""

    index: int
    start: int
    end: int
    body_start: int
    source_id: str | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """A store as one text plus the records it is made of."""

    text: str
    layout: Layout
    records: tuple[Record, ...]

    def record_text(self, record: Record) -> str:
        return self.text[record.start : record.end]

    def body(self, record: Record) -> str:
        return self.text[record.body_start : record.end]


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def blocks(text: str) -> list[tuple[int, int]]:
    """Spans of the blank-line-separated blocks of ``text``.

    A block is a maximal run of lines that each hold a non-space character; a
    line of only spaces or tabs separates blocks like an empty one does.
    """
    return [match.span() for match in _BLOCK.finditer(text)]


def from_text(text: str, source_ids: Sequence[tuple[int, int, str]] = ()) -> Source:
    """A text-layout source. ``source_ids`` optionally names spans of the text.

    A block takes the id of the named span it starts in (benchmark adapters
    use this so units map back to turn or message ids).
    """
    text = normalise_newlines(text.removeprefix("\ufeff"))
    if not text.strip():
        raise InputError("empty input: the store has no text; give at least one non-empty record")
    spans = blocks(text)
    if not source_ids:
        return Source(text, "text", tuple(Record(i, s, e, s) for i, (s, e) in enumerate(spans)))
    named = sorted(source_ids)
    starts = [start for start, _, _ in named]
    records = []
    for i, (s, e) in enumerate(spans):
        k = bisect.bisect_right(starts, s) - 1
        inside = k >= 0 and s < named[k][1]
        records.append(Record(i, s, e, s, named[k][2] if inside else None))
    return Source(text=text, layout="text", records=tuple(records))


def render_header(record: Mapping[str, Any]) -> str:
    """``[time] speaker: `` for a record dict; empty when it has neither."""
    speaker = _first(record, SPEAKER_KEYS)
    time = _first(record, TIME_KEYS)
    head = f"[{time}] " if time not in (None, "") else ""
    if speaker not in (None, ""):
        head += f"{speaker}: "
    return head


def _first(record: Mapping[str, Any], keys: Iterable[str]) -> Any:
    for key in keys:
        if key in record:
            return record[key]
    return None


def _body_of(item: Any, index: int) -> tuple[str, str, str | None]:
    """(header, body, id) of one array element, or an InputError naming it."""
    if isinstance(item, str):
        header, body, rid = "", item, None
    elif isinstance(item, Mapping):
        body = _first(item, TEXT_KEYS)
        if body is None:
            raise InputError(f"record {index} has no text: give each record a 'text' (or 'content') field")
        if not isinstance(body, str):
            raise InputError(f"record {index}: 'text' must be a string, not {type(body).__name__}")
        header = render_header(item)
        rid = None if item.get("id") is None else str(item["id"])
    else:
        raise InputError(
            f"record {index} is a {type(item).__name__}; records must be strings or objects with 'text'"
        )
    body = normalise_newlines(body)
    if not body.strip():
        raise InputError(f"record {index} has empty text; drop it or give it text")
    return header, body, rid


def from_records(items: Sequence[Any]) -> Source:
    """A records-layout source from an array of record dicts or strings."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InputError("expected a list of records (dicts with 'text', or strings)")
    if not items:
        raise InputError("empty input: the record list is empty; give at least one record")
    parts: list[str] = []
    records: list[Record] = []
    pos = 0
    for index, item in enumerate(items):
        header, body, rid = _body_of(item, index)
        if index:
            parts.append(RECORD_SEPARATOR)
            pos += len(RECORD_SEPARATOR)
        parts.append(header + body)
        records.append(Record(index, pos, pos + len(header) + len(body), pos + len(header), rid))
        pos += len(header) + len(body)
    return Source(text="".join(parts), layout="records", records=tuple(records))


def from_any(value: Any) -> Source:
    """Accept raw text, a list of records, a Source, or a path to a file."""
    if isinstance(value, Source):
        return value
    if isinstance(value, Path):
        return read_file(value)
    if isinstance(value, str):
        return from_text(value)
    if isinstance(value, Sequence):
        return from_records(value)
    raise InputError(
        f"cannot read a store from a {type(value).__name__}; pass text, a list of records or a Path"
    )


def read_file(path: str | Path) -> Source:
    """Read ``.txt`` (text), ``.json`` (array) or ``.jsonl`` (one record per line)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path} is a directory; pass a file (.txt, .json or .jsonl)")
    raw = path.read_bytes()
    if b"\x00" in raw[:65536]:
        raise InputError(f"{path} looks like a binary file (it contains NUL bytes); pass UTF-8 text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8"
        ) from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return from_records(parse_jsonl(text, path))
    if suffix == ".json":
        return from_records(_json_array(text, path))
    return from_text(text)


def parse_jsonl(text: str, path: Path | str) -> list[Any]:
    """One JSON value per non-blank line; an error names the line."""
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    if not items:
        raise InputError(f"{path}: empty input, no JSON lines found")
    return items


def _json_array(text: str, path: Path) -> list[Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, list):
        raise InputError(f"{path}: expected a JSON array of records, found a {type(value).__name__}")
    return value
