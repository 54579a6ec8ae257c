"""``muster add``, ``muster forget`` and ``muster info``: a store file's records and its state."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from muster_exact.retrieve.explain import models_line
from muster_exact.store.validation import shown


def _open_store(args: argparse.Namespace, create: bool = False) -> Any:
    """The store a command names; only ``add`` creates a missing one (a read never leaves a file behind)."""
    from muster_exact.store import Store

    preset = getattr(args, "preset", None)
    reembed = getattr(args, "reembed", False)
    return Store.open(
        args.store, args.namespace, preset=preset, models=args.models, create=create, reembed=reembed
    )


def _cmd_add(args: argparse.Namespace) -> int:
    import json

    from muster_exact.store import read_records_file

    stdin = getattr(sys.stdin, "buffer", None)  # bytes: the one input reader decodes them
    records = read_records_file(args.file, stdin, args.max_input_bytes)
    with _open_store(args, create=True) as store:
        result = store.add(records, request_id=args.request_id)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        state = "already applied; nothing written" if result.replayed else "added"
        print(
            f"{result.added} records {state} (namespace {shown(result.head.namespace)}: "
            f"{result.head.records} records, head {result.head.sha256[:12]})"
        )
    return 0


ERASE_PENDING_EXIT = 3  # forget: deleted, but the text is on disk until the store's next open or write


def _cmd_forget(args: argparse.Namespace) -> int:
    import json

    from muster_exact.core.errors import InputError
    from muster_exact.serve.backend import forget_in

    if args.id is None and args.request_id is None:  # said in the CLI's words, before any open
        raise InputError("forget takes --id ID (repeatable), --request-id R, or both (a retry-safe delete)")
    with _open_store(args) as store:  # a forget never creates a store
        result = forget_in(store, args.id, args.request_id)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        head = result["head"]
        print(
            f"{len(result['deleted'])} records deleted (namespace {shown(head['namespace'])}: "
            f"{head['records']} records, head {head['sha256'][:12]})"
        )
    if result["erase_pending"]:
        print(erase_pending_note("their text"), file=sys.stderr)
        return ERASE_PENDING_EXIT
    return 0


def erase_pending_note(what: str) -> str:
    """What forget and update say on stderr when the erase is pending (exit ``ERASE_PENDING_EXIT``)."""
    return (
        f"muster: erase pending: the change is made, but {what} stays on disk while another "
        "connection reads; it is erased on the store's next open or write (`muster info` shows it)"
    )


def _cmd_info(args: argparse.Namespace) -> int:
    import json

    with _open_store(args) as store:
        head = store.verified_head()  # every record checked against its hash: info shows damage
        info = {
            "path": str(store.path),
            "namespaces": store.namespaces(),
            "head": head.to_dict(),
            "read_only": store.read_only,
            "pending_erasures": store.pending_erasures(),
            "plan": store.plan().to_dict() if head.records else None,
            "models": store.read_models().to_dict() if head.records else None,
        }
        if args.json:
            print(json.dumps(info, indent=2, ensure_ascii=False))
            return 0
        access = " (read-only)" if store.read_only else ""
        names = ", ".join(map(shown, info["namespaces"])) or "(none)"
        print(f"store {info['path']}{access}; namespaces: {names}")
        print(f"namespace {shown(head.namespace)}: {head.records} records, head {head.sha256}")
        if info["pending_erasures"]:
            print(
                f"erase pending: {info['pending_erasures']} delete(s) whose text is still on disk while "
                "another connection reads; retried on the next open or write"
            )
        if head.records:
            print(store.explain())
            print(models_line(store.read_models()))
    return 0
