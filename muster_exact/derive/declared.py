"""Declared record input: a producer's record array, taken in the order it is given.

Automatic detection (:mod:`muster_exact.derive.detect`) decides from the text whether records are a
numbered log, and then sorts by serial and keeps only the newest version of a slot. A producer
that knows its records can say so instead:

    mem = build(records, record_format="serial")             # or declared_order=SourceOrder()
    mem.ordered_records.roundtrip() == records                 # every prefix and field, as given

``record_format="serial"`` reads a leading serial off each record's text with the lexer of
:mod:`muster_exact.text.serials` (``Step 12: ``, ``#12 ``, ``(12) ``, ``[12] ``, ``12. ``; the number
ends within the first 32 characters) and sets it aside: retrieval and the reader get the body,
the prefix and every other field stay in :attr:`Memory.ordered_records
<muster_exact.memory.Memory.ordered_records>`. None of the detector's conditions (80% marked,
95% continuous, a median of 20 tokens) apply, and the serials never reorder, merge or delete
records: gaps, resets and repeated markers are kept where they stand, in the declared order,
every version shown (supersession off). A record without a prefix is simply its body.

The cut is a numbered log's (one unit per record, a marked record in its slot's parent) in the
array's order (:func:`muster_exact.derive.cut.cut_declared`). Native mode only: the paper's presets
replay the benchmark stores as they shipped, with automatic detection.

The CLI and the HTTP server take the same thing as a JSON envelope,
``{"format": "serial", "records": [...]}``, read by :func:`envelope` alone.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_exact.cache.memo import Memo
from muster_exact.core.errors import DeclaredError
from muster_exact.core.registry import Registry
from muster_exact.derive import PROSE_BUDGET, RECORD_BUDGET, Derived, plan_for
from muster_exact.derive.cut import cut_declared
from muster_exact.derive.detect import Detection
from muster_exact.derive.plan import Mode
from muster_exact.text.records import (
    TEXT_KEYS,
    Source,
    checked_record,
    from_records,
    is_blank,
    json_records,
    load_json,
    read_input,
)
from muster_exact.text.records import read_file as read_store_file
from muster_exact.text.serials import lex

FORMATS: Registry[str] = Registry(
    "declared record format",
    {"serial": "a leading serial (Step 12:, #12, (12), [12], 12.) read off each record's text"},
    error=DeclaredError,
)
ENVELOPE_KEYS = ("format", "records")


@dataclass(frozen=True)
class SourceOrder:
    """What a producer declares about its record array: the array's order is the source order.

    Records are kept, cut and shown in that order; a record's leading marker, read by
    ``format`` (one of :data:`FORMATS`: ``"serial"``), is set aside and never sorts, merges or
    deletes a record, so every version stays (no supersession). The one field is the format,
    so that ``record_format="serial"``, ``declared_order=SourceOrder()`` and the envelope's
    ``"format": "serial"`` are one declaration.
    """

    format: str = "serial"

    def __post_init__(self) -> None:
        checked_format(self.format)


def checked_format(name: Any) -> str:
    """A declared record format's name, or the one typed error naming the formats there are."""
    if not isinstance(name, str):
        raise DeclaredError(
            f"the declared record format is a name ({', '.join(FORMATS)}), not {type(name).__name__}"
        )
    return FORMATS.check(name)


@dataclass(frozen=True)
class DeclaredRecord:
    """One record as given, its text split where its serial prefix ends: ``prefix + body`` is
    the text, as written (line ends and all)."""

    index: int
    item: Any  # the record as given: a string, or a copy of the object
    text_key: str | None  # the object's text field ("text" or "content"); None for a string
    prefix: str  # the serial prefix as written, its trailing spaces included; "" without one
    body: str  # what retrieval and the reader get
    style: str | None  # the serial's style (muster_exact.text.serials.STYLES), None without one
    serial: int | None

    def restored(self) -> Any:
        """The record as it was given (a copy): its text is its prefix and body again."""
        text = self.prefix + self.body
        if self.text_key is None:
            return text
        return {key: text if key == self.text_key else copy.deepcopy(v) for key, v in self.item.items()}


@dataclass(frozen=True)
class OrderedRecords:
    """A declared record array: its declaration and each record split into prefix and body."""

    order: SourceOrder
    records: tuple[DeclaredRecord, ...]

    def roundtrip(self) -> list[Any]:
        """The records as they were given, in their order, every prefix and field in place."""
        return [record.restored() for record in self.records]

    @property
    def serials(self) -> tuple[int | None, ...]:
        return tuple(record.serial for record in self.records)

    def source(self) -> Source:
        """The records' bodies as a records-layout source (an id kept, to label the records)."""
        return from_records([_body_item(record) for record in self.records])


def _body_item(record: DeclaredRecord) -> Any:
    if record.text_key is None or record.item.get("id") is None:
        return record.body
    return {"text": record.body, "id": record.item["id"]}


def read(items: Any, order: SourceOrder | None = None) -> OrderedRecords:
    """``items`` read as a declared record array: each record checked as every record is
    (:func:`muster_exact.text.records.checked_record`), its serial prefix read by the lexer."""
    order = order if order is not None else SourceOrder()
    if isinstance(items, (str, bytes, bytearray, Mapping)) or not isinstance(items, Sequence):
        raise DeclaredError(
            f"declared records are a list of records (objects with 'text', or strings), "
            f"not a {type(items).__name__}"
        )
    if not items:
        raise DeclaredError("the declared record list is empty; give at least one record")
    return OrderedRecords(order, tuple(_record(item, index) for index, item in enumerate(items)))


def _record(item: Any, index: int) -> DeclaredRecord:
    # The one record rule (a string or an object with text, nesting, size, Unicode); every field kept.
    checked_record(item, index, any_field=True)
    text_key = None if isinstance(item, str) else next(k for k in TEXT_KEYS if k in item)
    text: str = item if text_key is None else item[text_key]
    found = lex(text)
    if found is None:
        return DeclaredRecord(index, _copy(item), text_key, "", text, None, None)
    style, serial = found
    prefix, body = text[: serial.end], text[serial.end :]
    if is_blank(body):
        raise DeclaredError(
            f"record {index} is only a serial prefix ({prefix.strip()!r}); give it a body, or drop it"
        )
    return DeclaredRecord(index, _copy(item), text_key, prefix, body, style, serial.number)


def _copy(item: Any) -> Any:
    return item if isinstance(item, str) else copy.deepcopy(dict(item))


def declaration(
    data: Any, record_format: str | None, declared_order: SourceOrder | None
) -> OrderedRecords | None:
    """What :func:`muster_exact.memory.build` reads ``data`` as: a declared record array when
    ``record_format`` or ``declared_order`` says so (they must agree) or ``data`` is an
    :class:`Envelope`; else None, and ``data`` goes to automatic detection."""
    if isinstance(data, Envelope):
        data, declared_order = data.records, _agreeing(data.order, declared_order)
    if record_format is not None:
        declared_order = _agreeing(SourceOrder(checked_format(record_format)), declared_order)
    if declared_order is None:
        return None
    if not isinstance(declared_order, SourceOrder):
        raise DeclaredError(f"declared_order is a SourceOrder, not {type(declared_order).__name__}")
    return read(data, declared_order)


def _agreeing(order: SourceOrder, other: SourceOrder | None) -> SourceOrder:
    if other is not None and other != order:
        raise DeclaredError(f"two declarations disagree: {order} and {other}; give one")
    return order


def analyse(
    ordered: OrderedRecords,
    *,
    mode: Mode = "native",
    preset: str | None = None,
    record_budget: int = RECORD_BUDGET,
    memo: Memo | None = None,
) -> Derived:
    """The plan and cut of a declared record array: its bodies as a numbered log's lines in the
    declared order, supersession off. No detection: the producer has said what the records are."""
    if mode != "native" or preset is not None:
        raise DeclaredError(
            "declared record input is read in native mode only (no preset, no exact mode): the "
            "presets replay the paper's stores as they shipped"
        )
    started = time.perf_counter()
    source = ordered.source()
    record_tokens = tuple((memo or Memo()).tokens([source.record_text(r) for r in source.records]))
    counted = time.perf_counter()
    the_cut = cut_declared(source, ordered.serials, record_budget)
    marked = sum(serial is not None for serial in ordered.serials)
    total = sum(record_tokens)
    found = Detection(
        branch="numbered_log",
        serial_share=marked / len(source.records),
        record_share=sum(n for n in record_tokens if n <= record_budget) / total if total else 0.0,
        style=None,
        continuity=None,
        median_tokens=None,
        supersession=False,
        record_tokens=record_tokens,
        n_lines=len(source.records),
        reasons=_reasons(ordered, marked),
    )
    plan = plan_for(source, found, the_cut, "native", None, record_budget, PROSE_BUDGET)
    timings = {"detect": counted - started, "cut": time.perf_counter() - counted}
    return Derived(dataclasses.replace(plan, order="stored"), the_cut, timings)


def _reasons(ordered: OrderedRecords, marked: int) -> tuple[str, ...]:
    n = len(ordered.records)
    return (
        f"declared record input (format '{ordered.order.format}', source order): {marked} of {n} "
        "records open with a serial prefix, read and set aside (mem.ordered_records keeps it); "
        "retrieval and the reader get the body. The serial share here is that fraction",
        "no detection: the producer declared the records; one unit per record in the declared "
        "order, serials never sort, merge or delete records (gaps, resets and repeats kept)",
        "supersession off: every version of a slot is kept",
    )


# --- the envelope: the CLI's and the HTTP server's form of a declared record array ----------


@dataclass(frozen=True)
class Envelope:
    """``{"format": "serial", "records": [...]}``: a declared record array as JSON carries it."""

    order: SourceOrder
    records: list[Any]

    def ordered(self) -> OrderedRecords:
        return read(self.records, self.order)


def envelope(value: Any, where: str) -> Envelope:
    """A JSON value read as a declared-record envelope, or the one typed error saying what is
    wrong with it (``where``: the file or the request, for the message). The one place an
    envelope is read: ``muster query``/``muster derive`` and ``POST /v1/declared/context``."""
    if not isinstance(value, Mapping):
        raise DeclaredError(
            f"{where}: a declared-record envelope is a JSON object, not {type(value).__name__}"
        )
    unknown = sorted(set(value) - set(ENVELOPE_KEYS))
    missing = [key for key in ENVELOPE_KEYS if key not in value]
    if unknown or missing:
        said = [f"unknown {', '.join(map(repr, unknown))}"] if unknown else []
        said += [f"missing {', '.join(map(repr, missing))}"] if missing else []
        raise DeclaredError(
            f'{where}: a declared-record envelope is {{"format": "serial", "records": [...]}} '
            f"({'; '.join(said)})"
        )
    try:
        order = SourceOrder(checked_format(value["format"]))
    except DeclaredError as exc:
        raise DeclaredError(f"{where}: {exc}") from None
    records = value["records"]
    if not isinstance(records, list):
        raise DeclaredError(f"{where}: 'records' is a list of records, not {type(records).__name__}")
    return Envelope(order, records)


def read_file(path: str | Path, max_bytes: int | None = None) -> Source | Envelope:
    """A file the CLI builds from: a ``.json`` file holding one JSON object is a declared-record
    envelope (:func:`envelope`); every other file is read as :func:`muster_exact.text.records.read_file`
    reads it (a ``.json`` array of records, ``.jsonl``, text)."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return read_store_file(path, max_bytes)
    value = load_json(read_input(path, max_bytes), str(path))
    if isinstance(value, Mapping):
        return envelope(value, str(path))
    return from_records(json_records(value, path))
