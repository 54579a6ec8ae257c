"""What a store's operations return: the head of a namespace (count, last sequence number, content
hash) and the results of ``add`` and ``delete``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muster_exact.core.errors import (
    InputError,
)

if TYPE_CHECKING:
    from muster_exact.derive.plan import Plan


EMPTY_HEAD = hashlib.sha256(b"muster-store").hexdigest()


@dataclass(frozen=True)
class Head:
    """The current version of one namespace: record count, last sequence number, content hash."""

    namespace: str
    records: int
    last_seq: int
    sha256: str

    @property
    def plan(self) -> Plan:
        """The plan of this head's records, as :meth:`Store.plan` gives it (the one
        :meth:`Store.explain` explains): the saved derive result's plan when the store holds one
        for these records, else derived. Raises InputError for an empty namespace, a head the
        store has moved on from, or a head not read from a store."""
        planner: Callable[[Head], Plan] | None = self.__dict__.get("_planner")
        if planner is None:
            raise InputError("this head was not read from an open store; use Store.head().plan")
        return planner(self)

    def read_by(self, planner: Callable[[Head], Plan]) -> Head:
        """This head, its :attr:`plan` read by ``planner`` (a Store's). Not one of the fields:
        equality, ``to_dict``, ``dataclasses.fields`` and ``asdict`` are as they were."""
        object.__setattr__(self, "_planner", planner)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "records": self.records,
            "last_seq": self.last_seq,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class AddResult:
    request_id: str | None
    ids: tuple[str, ...]
    head: Head
    replayed: bool = False  # True: this request_id was applied before; nothing was written now

    @property
    def added(self) -> int:
        return len(self.ids)

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "added": self.added,
            "ids": list(self.ids),
            "head": self.head.to_dict(),
            "replayed": self.replayed,
        }


@dataclass(frozen=True)
class DeleteResult:
    deleted: tuple[str, ...]
    head: Head
    vectors_dropped: int
    scores_dropped: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "deleted": list(self.deleted),
            "head": self.head.to_dict(),
            "vectors_dropped": self.vectors_dropped,
            "scores_dropped": self.scores_dropped,
        }


@dataclass(frozen=True)
class UpdateResult:
    """An update: the record's id, the head after it, whether anything changed (the same record
    again changes nothing), and the cached vectors and scores of the old text that were dropped."""

    id: str
    head: Head
    changed: bool
    vectors_dropped: int = 0
    scores_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "changed": self.changed,
            "head": self.head.to_dict(),
            "vectors_dropped": self.vectors_dropped,
            "scores_dropped": self.scores_dropped,
        }


def no_record(record_id: str, namespace: str, outcome: str = "nothing deleted") -> InputError:
    """The refusal of a delete (or an update) naming an id the namespace does not hold."""
    return InputError(f"no record {record_id!r} in namespace {namespace!r}; {outcome}")


def _chain(previous: str, record_sha: str) -> str:
    return hashlib.sha256(f"{previous}:{record_sha}".encode()).hexdigest()


def _replayed(result: dict[str, Any]) -> AddResult:
    original = result["head"]
    return AddResult(
        result["request_id"],
        tuple(result["ids"]),
        Head(original["namespace"], original["records"], original["last_seq"], original["sha256"]),
        replayed=True,
    )
