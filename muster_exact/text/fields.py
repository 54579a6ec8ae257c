"""What a record's fields may hold, checked once for every reader of records (``build``,
``muster query FILE``, ``Store.add`` and every server): its names, its size, valid Unicode, and
scalar speaker and time values (docs/decisions/0216-one-record-rule.md).

A record is ``text`` (or ``content``), and optionally ``speaker`` (``role``), ``time``
(``timestamp``, ``date``), ``id`` and ``metadata``; arbitrary data belongs in ``metadata``. A
store's own records, read back (:class:`StoredRecords`), were checked when they were written and
are read as they are: a record stored before these rules stays readable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_METADATA_DEPTH, MAX_RECORD_CHARS

TEXT_KEYS = ("text", "content")
SPEAKER_KEYS = ("speaker", "role")
TIME_KEYS = ("time", "timestamp", "date")
RECORD_FIELDS = (*TEXT_KEYS, *SPEAKER_KEYS, *TIME_KEYS, "id", "metadata")
_SAID = "text, speaker, time, id, metadata (or content, role, timestamp, date)"


class StoredRecords(list):  # type: ignore[type-arg]
    """Records a store read back from its own file: checked when they were written, so read as
    they are (a record stored before a rule was added keeps its fields and stays readable)."""


def check_unicode(text: str, where: str) -> None:
    """Refuse a string holding a lone surrogate (what bytes that are not UTF-8 become under
    Python's ``surrogateescape``, or a JSON ``\\udcff`` escape): no tokenizer can read it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{where} is not valid Unicode (a lone surrogate at character {exc.start}); "
            "decode its bytes as UTF-8"
        ) from None


def check_fields(record: Mapping[str, Any], index: int, *, any_field: bool = False) -> None:
    """One record's fields as a caller gave them (its text already a string): a text of at most
    ``MAX_RECORD_CHARS`` in valid Unicode, and (unless ``any_field``: a declared record array or an
    import keeps every field as given) known names, a speaker and a time that are a string or a
    finite number in valid Unicode."""
    if not any_field:
        unknown = next((key for key in record if key not in RECORD_FIELDS), None)
        if unknown is not None:
            shown = str(unknown).encode("utf-8", "backslashreplace").decode("utf-8")
            raise InputError(
                f"record {index} has an unknown field {shown!r}; a record's fields are {_SAID}; "
                "put other data in 'metadata'"
            )
    check_size(record["text"], index)
    check_unicode(record["text"], f"record {index}")
    if any_field:
        return  # a declared record's other fields are kept as given, not read
    for key in (*SPEAKER_KEYS, *TIME_KEYS):
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            kind = type(value).__name__
            raise InputError(f"record {index}: '{key}' must be a string or a number, not {kind}")
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"record {index}: '{key}' must be a string or a finite number, not {value!r}")
        if isinstance(value, str):
            check_unicode(value, f"record {index} '{key}'")


def check_size(text: str, index: int) -> None:
    """A record (or a text's block) holds at most ``MAX_RECORD_CHARS`` characters: checked before
    any model runs, so a 20 MB record is refused at once rather than embedded for an hour."""
    if len(text) > MAX_RECORD_CHARS:
        raise InputError(
            f"record {index} has {len(text):,} characters; a record holds at most {MAX_RECORD_CHARS:,} "
            "(split long documents into several records)"
        )


def check_nesting(record: Mapping[str, Any], where: str) -> None:
    """Refuse a record whose fields nest containers deeper than ``MAX_METADATA_DEPTH``.

    Walked with a list, not by recursion: a record nested 100,000 deep is refused like one nested 65
    deep, and nothing later (the JSON encoder, a server's stack) has to recurse through it.
    """
    for key, value in record.items():
        if not isinstance(value, (Mapping, list, tuple)):
            continue  # a string or a number: nothing nested
        stack = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, Mapping):
                children: Iterable[Any] = item.values()
            elif isinstance(item, (list, tuple)):
                children = item
            else:
                continue
            if depth > MAX_METADATA_DEPTH:
                raise InputError(
                    f"{where}: '{key}' is nested more than {MAX_METADATA_DEPTH} levels deep; flatten it"
                )
            stack.extend((child, depth + 1) for child in children)
