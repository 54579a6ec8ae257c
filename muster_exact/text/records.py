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
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from muster_exact.core.errors import InputError
from muster_exact.core.limits import DEFAULT_MAX_INPUT_BYTES, MAX_METADATA_DEPTH
from muster_exact.text.fields import SPEAKER_KEYS as SPEAKER_KEYS  # re-exported: the names readers use
from muster_exact.text.fields import TEXT_KEYS as TEXT_KEYS
from muster_exact.text.fields import TIME_KEYS as TIME_KEYS
from muster_exact.text.fields import (
    StoredRecords,
    check_fields,
    check_size,
    check_unicode,
)
from muster_exact.text.fields import check_nesting as check_nesting

Layout = Literal["text", "records"]
RECORD_SEPARATOR = "\n\n"
MAX_INPUT_ENV = "MUSTER_MAX_INPUT_BYTES"
# A character that shows: neither white space nor one of the characters that show nothing (NUL and
# the zero-width ones). Text with none is empty; a line with none is blank and separates blocks.
_SHOWS = r"[^\s\x00\u200b\u200c\u200d\u2060\ufeff]"
_SHOWN = re.compile(_SHOWS)
_BLOCK = re.compile(rf"[^\n]*{_SHOWS}[^\n]*(?:\n[^\n]*{_SHOWS}[^\n]*)*")


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


def _as_read(text: str) -> str:
    """A text as a source holds it: no leading BOM, every line end ``\\n``."""
    return normalise_newlines(text.removeprefix("\ufeff"))


def is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: only white space, NUL and zero-width characters."""
    return _SHOWN.search(text) is None


def blocks(text: str) -> list[tuple[int, int]]:
    """Spans of the blank-line-separated blocks of ``text`` (newlines already ``\\n``): the one rule
    by which a text becomes records, for a text-layout source and for ``muster add`` alike.

    A block is a maximal run of lines that each hold a character that shows; a line that shows
    nothing (empty, or only white space, NUL and zero-width characters: :func:`is_blank`)
    separates blocks. A block runs from the start of its first line to the end of its last.
    """
    return [match.span() for match in _BLOCK.finditer(text)]


def block_texts(text: str) -> list[str]:
    """The records of a text, one per block (:func:`blocks`), its line ends normalised first: what
    :func:`from_text` makes records of, as strings."""
    text = _as_read(text)
    return [text[start:end] for start, end in blocks(text)]


def from_text(text: str, source_ids: Sequence[tuple[int, int, str]] = ()) -> Source:
    """A text-layout source. ``source_ids`` optionally names spans of the text.

    A block takes the id of the named span it starts in (benchmark adapters
    use this so units map back to turn or message ids).
    """
    text = _as_read(text)
    if is_blank(text):
        raise InputError("empty input: the store has no text; give at least one non-empty record")
    check_unicode(text, "the text")
    spans = blocks(text)
    for index, (start, end) in enumerate(spans):
        check_size(text[start:end], index)
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


def checked_record(item: Any, index: int, *, stored: bool = False, any_field: bool = False) -> dict[str, Any]:
    """One record as given, checked; a copy with its text under ``text``, else an InputError
    naming it. The rule every reader of records shares (:func:`from_records`, and
    :func:`muster_exact.store.validate` before it adds what storing needs): a string, or an object
    with a string ``text`` (or ``content``) that shows something, its fields nested at most
    ``MAX_METADATA_DEPTH`` levels, and (:func:`~muster_exact.text.fields.check_fields`) known
    field names (any, with ``any_field``), a bounded size, valid Unicode, scalar speaker and time.
    ``stored``: a store's own record read back, checked when it was written (only its shape here)."""
    if isinstance(item, (bytes, bytearray)):
        raise InputError(f"record {index} is bytes; decode it to text (UTF-8) first")
    if isinstance(item, str):
        record = _with_text({"text": item}, index)
        if not stored:
            check_fields(record, index)
        return record
    if not isinstance(item, Mapping):
        raise InputError(f"record {index} is a {type(item).__name__}; give a string or an object with 'text'")
    record = dict(item)
    text_key = next((key for key in TEXT_KEYS if key in record), None)
    if text_key is None:
        raise InputError(f"record {index} has no text: give it a 'text' (or 'content') field")
    if text_key != "text":
        record["text"] = record.pop(text_key)
    check_nesting(record, f"record {index}")  # before anything that recurses per level
    record = _with_text(record, index)
    if not stored:
        check_fields(record, index, any_field=any_field)
    return record


def _with_text(record: dict[str, Any], index: int) -> dict[str, Any]:
    text = record["text"]
    if isinstance(text, (bytes, bytearray)):
        raise InputError(f"record {index}: 'text' is bytes; decode it to text (UTF-8) first")
    if not isinstance(text, str):
        raise InputError(f"record {index}: 'text' must be a string, not {type(text).__name__}")
    if is_blank(text):
        raise InputError(f"record {index} has empty text; drop it or give it text")
    return record


def _body_of(item: Any, index: int, stored: bool) -> tuple[str, str, str | None]:
    """(header, body, id) of one array element, checked by :func:`checked_record`."""
    record = checked_record(item, index, stored=stored)
    rid = None if record.get("id") is None else str(record["id"])
    return render_header(record), normalise_newlines(record["text"]), rid


def from_records(items: Sequence[Any], after: Source | None = None) -> Source:
    """A records-layout source from an array of record dicts or strings; ``after``: a
    records-layout source they follow (the result is what the whole array gives). A store's own
    records (:class:`~muster_exact.text.fields.StoredRecords`) are read as they were stored."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InputError("expected a list of records (dicts with 'text', or strings)")
    if not items and after is None:
        raise InputError("empty input: the record list is empty; give at least one record")
    if after is not None and after.layout != "records":
        raise InputError("only a records-layout source can be extended by records")
    first = len(after.records) if after is not None else 0
    parts: list[str] = [after.text] if after is not None else []
    records: list[Record] = list(after.records) if after is not None else []
    pos = len(after.text) if after is not None else 0
    for index, item in enumerate(items, start=first):
        header, body, rid = _body_of(item, index, isinstance(items, StoredRecords))
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


def read_file(path: str | Path, max_bytes: int | None = None) -> Source:
    """Read ``.txt`` (text), ``.json`` (array) or ``.jsonl`` (one record per line)."""
    path = Path(path)
    text = read_input(path, max_bytes)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return from_records(parse_jsonl(text, path))
    if suffix == ".json":
        return from_records(_json_array(text, path))
    return from_text(text)


# --- reading input: one reader for every command -------------------------------------------


def max_input_bytes(given: int | None = None) -> int:
    """The input cap: ``given`` (``--max-input-bytes``), else ``$MUSTER_MAX_INPUT_BYTES``, else
    the default."""
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or given < 1:
            raise InputError(f"--max-input-bytes must be a positive number of bytes, not {given!r}")
        return given
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(f"${MAX_INPUT_ENV} must be a positive number of bytes, not {raw!r}")
    return int(raw)


def read_input(source: Path | BinaryIO, max_bytes: int | None = None) -> str:
    """The text of one input, a regular file or a stream (standard input), at most ``max_bytes``.

    The one place input bytes become text: UTF-8, a leading BOM dropped, NUL bytes refused (a
    binary file). Devices, FIFOs and sockets are refused before anything is read from them: one
    would never end (``/dev/zero``) or never start (a FIFO with no writer).
    """
    limit = max_input_bytes(max_bytes)
    if isinstance(source, Path):
        where, raw = str(source), _read_regular_file(source, limit)
    else:
        where, raw = "standard input", source.read(limit + 1)
    if len(raw) > limit:
        raise _over_limit(where, limit)
    return decode_text(raw, where)


def _read_regular_file(path: Path, limit: int) -> bytes:
    try:
        # Non-blocking, so that opening a FIFO returns at once; fstat then says what was opened.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    try:
        _check_regular(path, os.fstat(fd), limit)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)  # one byte more than allowed: a file that grew is still caught


def _check_regular(path: Path, info: os.stat_result, limit: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path} is a directory; pass a file (.txt, .json or .jsonl)")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"{path} is not a regular file (a device, FIFO or socket); pass a file, "
            "or '-' to read standard input"
        )
    if info.st_size > limit:
        raise _over_limit(str(path), limit)


def _over_limit(where: str, limit: int) -> InputError:
    return InputError(
        f"{where} is over the input limit of {limit:,} bytes; split it, or raise the limit with "
        f"--max-input-bytes or ${MAX_INPUT_ENV}"
    )


def decode_text(raw: bytes, where: str) -> str:
    if b"\x00" in raw:
        raise InputError(f"{where} looks like a binary file (it contains NUL bytes); pass UTF-8 text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def load_json(text: str, where: str, line: int = 1) -> Any:
    """``json.loads``, its failures as one line: the place (``where:line``) and what is wrong.

    Python's JSON decoder recurses once per nesting level; input nested deeper than it can go is
    refused here, not left to a RecursionError.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}:{line + exc.lineno - 1}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise _too_deep(where) from None


NOT_JSON = object()  # what sniff_json gives for text that is not one JSON document


def sniff_json(text: str, where: str) -> Any:
    """The value of ``text`` if it is one JSON document, else ``NOT_JSON`` (JSON lines, plain text).

    JSON nested too deep to read is still an error: reading it as text would hide the reason.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return NOT_JSON
    except RecursionError:
        raise _too_deep(where) from None


def _too_deep(where: str) -> InputError:
    return InputError(
        f"{where}: JSON nested too deep to read; records and their metadata may nest at most "
        f"{MAX_METADATA_DEPTH} levels"
    )


def parse_jsonl(text: str, path: Path | str) -> list[Any]:
    """One JSON value per non-blank line; an error names the line."""
    items = [
        load_json(line, str(path), number)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    if not items:
        raise InputError(f"{path}: empty input, no JSON lines found")
    return items


def _json_array(text: str, path: Path) -> list[Any]:
    return json_records(load_json(text, str(path)), path)


def json_records(value: Any, path: Path | str) -> list[Any]:
    """The JSON value of a ``.json`` store file, which must be an array of records."""
    if not isinstance(value, list):
        raise InputError(f"{path}: expected a JSON array of records, found a {type(value).__name__}")
    return value
