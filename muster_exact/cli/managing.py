"""``muster list``, ``export``, ``import`` and ``update``: what a store remembers, seen and managed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from muster_exact.cli.writing import ERASE_PENDING_EXIT, _open_store, erase_pending_note
from muster_exact.core.errors import InputError
from muster_exact.store.validation import shown

PREVIEW_CHARS = 100  # a listed record's text, one line of a terminal


def _cmd_list(args: argparse.Namespace) -> int:
    from muster_exact.store.dump import dumped

    with _open_store(args) as store:  # a listing never creates a store
        lines = store.list_records(args.limit, args.offset)
        head = store.head()
    for line in lines:
        if args.json:
            sys.stdout.write(dumped(line))  # an export line: `muster import` reads a listing too
            continue
        record = line["record"]
        said = " ".join(str(record[k]) for k in ("time", "speaker") if record.get(k) is not None)
        text = " ".join(record["text"].split())
        text = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
        print(f"{shown(record['id'])}\t{said}\t{text}")
    if not args.json:
        page = f"{args.offset + 1}-{args.offset + len(lines)}" if lines else "none"
        print(f"records {page} of {head.records} (namespace {shown(head.namespace)})", file=sys.stderr)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from muster_exact.store import DEFAULT_NAMESPACE
    from muster_exact.store.dump import dumped

    every = args.namespace is None
    args.namespace = args.namespace or DEFAULT_NAMESPACE
    with _open_store(args) as store:
        for line in store.export(every_namespace=every):
            sys.stdout.write(dumped(line))
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from muster_exact.text.records import read_input

    source = getattr(sys.stdin, "buffer", None) if args.file == "-" else Path(args.file)
    if source is None:
        raise InputError("no standard input to read; give the dump file")
    text = read_input(source, args.max_input_bytes)
    lines = [line for line in text.splitlines() if line.strip()]
    with _open_store(args, create=True) as store:
        result = store.import_records(lines)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        added = ", ".join(f"{n} into {shown(ns)}" for ns, n in sorted(result.added.items())) or "none"
        print(f"imported {sum(result.added.values())} records ({added}); {result.skipped} already there")
    return 0


def _cmd_update(args: argparse.Namespace) -> int:
    """``--record JSON`` replaces the whole record (:meth:`Store.update`); TEXT and the field
    options change those fields and keep the others (:meth:`Store.patch`)."""
    from muster_exact.serve.backend import erasing

    replace = args.record is not None
    change = _whole_record(args) if replace else _changed_fields(args)
    with _open_store(args) as store:  # an update never creates a store
        write = store.update if replace else store.patch
        result = erasing(lambda: write(args.id, change))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        state = "updated" if result["changed"] else "unchanged (the same record)"
        head = result["head"]
        print(
            f"record {shown(result['id'])} {state} (namespace {shown(head['namespace'])}: "
            f"head {head['sha256'][:12]})"
        )
    if result["erase_pending"]:
        print(erase_pending_note("the old text"), file=sys.stderr)
        return ERASE_PENDING_EXIT
    return 0


def _whole_record(args: argparse.Namespace) -> object:
    """The record ``--record JSON`` gives, alone."""
    if args.text is not None or args.speaker or args.time or args.metadata or args.remove:
        raise InputError(
            "give the fields to change (TEXT, --speaker, --time, --metadata, --remove) or the whole "
            "record as --record, not both"
        )
    try:
        return json.loads(args.record)
    except ValueError:
        raise InputError("--record is not JSON; give an object with 'text'") from None


def _changed_fields(args: argparse.Namespace) -> dict[str, object]:
    """The fields TEXT, --speaker, --time, --metadata set and --remove drops; the record's other
    fields stay as they are."""
    fields: dict[str, object] = {field: None for field in args.remove or ()}
    for field, value in (("text", args.text), ("speaker", args.speaker), ("time", args.time)):
        if value is not None:
            if field in fields:
                raise InputError(f"--remove {field} and a new {field} at once; give one of them")
            fields[field] = value
    if args.metadata is not None:
        if "metadata" in fields:
            raise InputError("--remove metadata and --metadata at once; give one of them")
        try:
            fields["metadata"] = json.loads(args.metadata)
        except ValueError:
            raise InputError(
                '--metadata is not JSON; give a JSON value, e.g. \'{"room": "kitchen"}\''
            ) from None
    if not fields:
        raise InputError(
            "nothing to change: give the new TEXT, --speaker, --time, --metadata or --remove FIELD "
            "(or the whole record as --record JSON)"
        )
    return fields
