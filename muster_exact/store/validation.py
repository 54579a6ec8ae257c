"""What :meth:`Store.add <muster_exact.store.Store.add>` accepts: each record checked and put in its
stored form before anything is written; what :meth:`Store.delete <muster_exact.store.Store.delete>`
accepts (record ids, a request id); and the names (namespaces) a store file keys by."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_ADD_CHARS, MAX_ID_CHARS
from muster_exact.text.fields import check_unicode as check_unicode  # re-exported (store)
from muster_exact.text.records import SPEAKER_KEYS, TEXT_KEYS, TIME_KEYS, checked_record


def validate(records: Any, start_index: int = 0, *, any_field: bool = False) -> list[dict[str, Any]]:
    """Every record checked and put in its stored form, before anything is written.

    A record is a string or an object with ``text`` (or ``content``), and
    optionally ``speaker``/``role``, ``time``/``timestamp``/``date``, ``id``
    and ``metadata`` (any JSON value, nested at most ``MAX_METADATA_DEPTH``
    levels); any other field is refused (arbitrary data belongs in
    ``metadata``) unless ``any_field`` (an import restores an export as it was
    written; a declared record array keeps every field). The whole object must
    be JSON. Sizes are bounded (``MAX_RECORD_CHARS`` a record,
    ``MAX_ADD_CHARS`` a call). A text that shows nothing (white space, NUL,
    zero-width characters) is empty.
    """
    if isinstance(records, (str, Mapping)):
        records = [records]
    if isinstance(records, (bytes, bytearray)) or not isinstance(records, Sequence):
        raise InputError(
            f"add() takes a record or a list of records, not {type(records).__name__}; a record is a "
            "string or an object with 'text'"
        )
    if not records:
        raise InputError("nothing to add: the record list is empty")
    total = 0
    out = []
    for offset, record in enumerate(records):
        item = _one(record, start_index + offset, any_field)
        total += len(item["text"])
        if total > MAX_ADD_CHARS:
            raise InputError(
                f"this add carries over {MAX_ADD_CHARS:,} characters; split it into several adds"
            )
        out.append(item)
    ids = [item["id"] for item in out if "id" in item]
    if len(ids) != len(set(ids)):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"record id {duplicate!r} appears twice in this add; ids must be unique")
    return out


def _one(record: Any, index: int, any_field: bool) -> dict[str, Any]:
    """One record in its stored form: :func:`records.checked_record` (known fields, bounded size,
    valid Unicode, scalar speaker and time), then what storing needs (a usable id, JSON)."""
    item = checked_record(record, index, any_field=any_field)
    if "id" in item:
        item["id"] = checked_id(item["id"], f"record {index}: 'id'")
    for key, value in item.items():  # each field on its own, so that a refusal names it
        try:
            json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"record {index}: '{key}' is not valid Unicode (a lone surrogate); decode its bytes as "
                f"UTF-8 ({exc.reason})"
            ) from None
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"record {index}: '{key}' is not JSON-serialisable ({exc}); give JSON values "
                "(no NaN or Infinity)"
            ) from None
    return item


def checked_delete(record_ids: Any, request_id: Any) -> tuple[list[str] | None, str | None]:
    """What a delete names: record ids (one, or a list; each once, in the order given), or the
    request id of an add (every record it added), or both: ids with the delete's own request id,
    so that a retry whose first answer was lost is answered as done. An id is what ``add``
    accepts as one (a string or a whole number, 1 to ``MAX_ID_CHARS`` characters); a request id
    is a non-empty string."""
    if record_ids is None and request_id is None:
        raise InputError(
            "a delete takes record ids or a request_id (or both: ids with this delete's own "
            "request_id, which makes it safe to retry)"
        )
    if request_id is not None:
        request_id = checked_request_id(request_id)
    if record_ids is None:
        return None, request_id
    if isinstance(record_ids, (str, int)):
        record_ids = [record_ids]
    if isinstance(record_ids, (bytes, bytearray, Mapping)) or not isinstance(record_ids, Sequence):
        raise InputError(f"ids must be a record id or a list of them, not {type(record_ids).__name__}")
    if not record_ids:
        raise InputError("nothing to delete: the id list is empty")
    return list(dict.fromkeys(checked_id(i, f"id {n}") for n, i in enumerate(record_ids))), request_id


def checked_id(record_id: Any, where: str) -> str:
    """A record id as ``add`` stores it and ``delete`` names it (one rule for both): a string or a
    whole number, 1 to ``MAX_ID_CHARS`` characters of valid Unicode, as text."""
    if not isinstance(record_id, (str, int)) or isinstance(record_id, bool):
        raise InputError(f"{where} must be a string or a whole number, not {type(record_id).__name__}")
    text = str(record_id)
    if not text.strip() or len(text) > MAX_ID_CHARS:
        raise InputError(f"{where} must be 1 to {MAX_ID_CHARS} characters")
    check_unicode(text, where)
    return text


def checked_request_id(request_id: Any) -> str:
    """A request id (stored and compared as text): a non-empty string of valid Unicode."""
    if not isinstance(request_id, str) or not request_id.strip():
        raise InputError("request_id must be a non-empty string (or None)")
    check_unicode(request_id, "request_id")
    return request_id


# What a namespace name may not hold, by Unicode general category: characters that do not show, so
# that two names that look alike are alike and a printed name cannot forge a line or drive a
# terminal (docs/decisions/0185-namespace-names.md).
REFUSED_IN_NAMES = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a lone surrogate (not valid Unicode: decode the bytes as UTF-8)",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def check_namespace(namespace: Any, held: Callable[[str], bool] | None = None) -> str:
    """A namespace name in its one form: 1 to ``MAX_ID_CHARS`` characters, not all blank, with no
    character of ``REFUSED_IN_NAMES``, normalised to NFC (``café`` typed either way is one name).

    ``held(name)`` says whether a store file already holds ``name`` exactly: a name made before
    these rules opens as it is stored, so that it stays readable, exportable and deletable. It is
    asked only for a name the rules would refuse or change.
    """
    if not isinstance(namespace, str) or len(namespace) > MAX_ID_CHARS:
        raise InputError(f"namespace must be 1 to {MAX_ID_CHARS} characters, not {namespace!r}")
    try:
        name = _normal_name(namespace)
    except InputError:
        if held is None or not held(namespace):
            raise
        return namespace
    if name != namespace and held is not None and held(namespace):
        return namespace
    return name


def _normal_name(namespace: str) -> str:
    for at, char in enumerate(namespace):
        kind = REFUSED_IN_NAMES.get(unicodedata.category(char))
        if kind is not None:
            what = f"U+{ord(char):04X} {unicodedata.name(char, '')}".rstrip()
            raise InputError(
                f"namespace {namespace!r} holds {what}, {kind}, at character {at}; choose a name of "
                "visible characters (no control, invisible format or separator characters, surrogates "
                "or unassigned code points)"
            )
    name = unicodedata.normalize("NFC", namespace)
    if not name.strip() or len(name) > MAX_ID_CHARS:
        raise InputError(f"namespace must be 1 to {MAX_ID_CHARS} characters, not {namespace!r}")
    return name


def shown(text: str) -> str:
    """A name or an id as the CLI prints it: as it is when every character shows and it is in
    NFC, else as Python's ``ascii()`` writes it (quoted; ``\\n``, ``\\x1b``, ``\\u202e``), so that
    no name or id forges an output line, drives a terminal or passes for another."""
    if text.isprintable() and unicodedata.is_normalized("NFC", text):
        return text
    return ascii(text)


def canonical(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def checked_fields(fields: Any, record_id: str) -> dict[str, Any]:
    """The fields a change (:func:`patched`) is given, checked before the record is read: an object
    with at least one field, no None for the text, no other id."""
    if not isinstance(fields, Mapping):
        raise InputError(
            f'the fields to change must be an object such as {{"text": "..."}}, not {type(fields).__name__}'
        )
    if not fields:
        raise InputError("nothing to change: give at least one field (text, speaker, time, metadata)")
    if any(key in fields and fields[key] is None for key in TEXT_KEYS):
        raise InputError("a record's text cannot be removed; give new text, or delete the record")
    if "id" in fields and fields["id"] is not None and str(fields["id"]) != record_id:
        raise InputError(
            f"the fields carry id {fields['id']!r} but change {record_id!r}; a change keeps the "
            "record's id (leave 'id' out, or delete and add to rename)"
        )
    changes: dict[str, Any] = {key: value for key, value in fields.items() if key != "id"}
    # Each value checked as an added record's is, before the record is read: a bad value is
    # refused as it is for an update, whether or not the record is there.
    given = {key: value for key, value in changes.items() if value is not None}
    if not any(key in given for key in TEXT_KEYS):
        given["text"] = "-"  # any text: only the fields given are being checked
    validate([given])
    return changes


def patched(record: Mapping[str, Any], fields: Mapping[str, Any], record_id: str) -> dict[str, Any]:
    """``record`` with ``fields`` (:func:`checked_fields`) applied as a JSON merge patch (RFC 7396),
    checked as an added record is: a field given replaces the stored one (objects, such as
    ``metadata``, merge key by key), a field given as None is removed, every other field is kept.
    A field names its alias group: ``speaker`` replaces a stored ``role``, ``time`` a stored
    ``date``."""
    kept = dict(record)
    for group in (TEXT_KEYS, SPEAKER_KEYS, TIME_KEYS):
        if any(key in fields for key in group):
            for key in group:
                kept.pop(key, None)
    merged: dict[str, Any] = {**_merge_patch(kept, fields), "id": record_id}
    # The fields given were checked by name (checked_fields); a field the record was stored with
    # before the rule on names stays.
    return validate([merged], any_field=True)[0]


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396, section 2: an object merges key by key (None removes a key); anything else
    replaces the target whole."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out
