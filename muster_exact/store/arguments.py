"""What ``Store.open`` is given, checked before anything is opened, and the record a delete
leaves so that a retry of it is answered as done.

A path that is not one (``None``) and a model profile that does not exist would otherwise fail
later and worse: the first as Python's bare ``TypeError`` from ``pathlib``, the second only at the
store's first read, after records were written under a name that can never be read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

from muster_exact.core.errors import InputError, RequestConflict
from muster_exact.store.validation import canonical


def check_open(path: Any, models: Any) -> None:
    """Refuse a ``path`` that is neither a file path nor a URL, and ``models`` naming no profile
    (with the message the first read would give: the registry's, with its "did you mean")."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(
            f"Store.open takes the store's path (a file path, str or pathlib.Path, or a "
            f"postgresql:// URL), not {type(path).__name__}"
        )
    if isinstance(models, str):
        from muster_exact.models.hub import profile
        from muster_exact.models.profiles import AUTO

        if models != AUTO:  # auto decides at the first read, as before
            profile(models)


def delete_sha(ids: Sequence[str]) -> str:
    """What a delete's request id is recorded with: a SHA-256 of its ids (never the ids: a
    delete leaves no trace of what it removed), in any order."""
    return hashlib.sha256("\n".join(["delete", *sorted(ids)]).encode()).hexdigest()


def replayed_delete(db: Any, namespace: str, request_id: str, ids: Sequence[str]) -> bool:
    """Whether a delete of ``ids`` with ``request_id`` was applied before (a retry: answered as
    done, nothing deleted); :class:`RequestConflict` when the request id was used for another
    write. In the delete's transaction."""
    row = db.execute(
        "SELECT body_sha256 FROM requests WHERE namespace = ? AND request_id = ?", (namespace, request_id)
    ).fetchone()
    if row is None:
        return False
    if row[0] != delete_sha(ids):
        raise RequestConflict(
            f"request_id {request_id!r} was used in namespace {namespace!r} for another write (an "
            "add, or a delete of other ids); nothing was deleted. Use a new request id for a new "
            "delete (the same ids again are a retry)"
        )
    return True


def record_delete(db: Any, namespace: str, request_id: str, ids: Sequence[str]) -> None:
    """Remember that this delete was applied, in its transaction: a retry finds it."""
    db.execute(
        "INSERT INTO requests VALUES (?, ?, ?, ?)",
        (namespace, request_id, json.dumps({"deleted": len(ids)}), delete_sha(ids)),
    )


def add_sha(items: list[dict[str, Any]]) -> str:
    """The SHA-256 of an add's validated records, in order: what a reused request id is checked by."""
    return hashlib.sha256("\n".join(canonical(item) for item in items).encode()).hexdigest()
