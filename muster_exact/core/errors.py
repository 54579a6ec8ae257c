"""Typed errors raised at the library's edges, and the one warning it gives.

Every error a user can cause derives from :class:`MusterError`; the CLI turns
them into one line on stderr and exit code 2 (see ``cli.main``), the servers
into their own responses. A bug is anything else and keeps its traceback.
:class:`ModelFallbackWarning` goes through Python's :mod:`warnings` (the CLI
prints it as one line), because the library's logger has no handler of its own.
"""

from __future__ import annotations


class MusterError(Exception):
    """Base class: a problem the user can fix, with a message saying how."""

    exit_code = 2


class InputError(MusterError):
    """The records or text given to the library cannot be read as a store."""


class PlanError(MusterError):
    """A plan (usually read back from JSON) is malformed or inconsistent."""


class ResourceMissing(MusterError):
    """An offline resource (tokenizer file, model files) is not prepared."""


class ModelLoadError(ResourceMissing):
    """A model's files are there but its library could not load them (damaged weights, too little
    memory, a library bug): the cause is in the message, and the next call tries again."""


class ManifestError(MusterError):
    """A pinned manifest is missing, unreadable or does not match the data."""


class DataError(MusterError):
    """Benchmark data under a data root is missing or not in the expected shape."""


class StoreError(MusterError):
    """The file is not a usable MUSTER store (not one, a newer schema, a missing directory)."""


class StoreCorrupt(StoreError):
    """The store file is damaged: unreadable pages, a missing table, a malformed schema version."""


class StoreFull(StoreError):
    """The disk (or the file's size limit) is full; the write that hit it was rolled back."""


class StoreReadOnly(StoreError):
    """The store can be read but not written (no write access to the file or its directory)."""


class StoreUnavailable(StoreError):
    """A store's database server cannot be used now: not reachable, the login refused, the database
    missing, or the connection lost mid-request (PostgreSQL; HTTP answers 503). The message names
    the URL, its password hidden."""


class EmbedderMismatch(StoreError):
    """The namespace's vectors were made by one embedder, and this read would use another."""


class ErasePending(StoreError):
    """A delete is done, but its text is still on disk until another connection lets go.

    ``result`` is the delete's own result: the records are gone for every reader. The store
    records the pending erase and retries it while it stays open, on close, and on its next open
    or write.
    """

    def __init__(self, message: str, result: object) -> None:
        super().__init__(message)
        self.result = result


class RequestConflict(InputError):
    """A request id used before, now with a different body: the new records are not written (the
    same body again is a replay, which writes nothing and returns the first result)."""


class DeclaredError(InputError):
    """A declared record input cannot be read: an unknown format, records that are not a list, an
    envelope with a missing or unknown field, a record that is only a serial prefix."""


class ModelFallbackWarning(UserWarning):
    """``auto`` (or a preset naming the paper's models, with no models named) chose the packaged
    CPU profile because the paper's models cannot run here: given once per process, since
    MiniLM's contexts are not the paper's. Naming the models
    (``models=``, ``--models``, ``$MUSTER_MODELS``) chooses them and gives no warning."""


def callers_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning given by the caller of this function point at the
    first line outside MUSTER's packages (``muster_exact``, ``muster``): the user's ``build()``
    or ``Store.open()``, not the library line that noticed (Python 3.12's ``skip_file_prefixes``,
    by hand)."""
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../muster_exact
    ours = (here + os.sep, os.path.join(os.path.dirname(here), "muster") + os.sep)
    frame = sys._getframe(1)  # the function that will call warnings.warn: level 1
    level = 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(ours):
        frame = frame.f_back
        level += 1
    return level
