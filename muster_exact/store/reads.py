"""A store's reads: the plan and the memory of its current records, grown after adds or built afresh,
its derive result saved and read back, and reads held to the embedder first recorded."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muster_exact.cache.vectors import best_effort, drop_texts_not_in
from muster_exact.core.errors import (
    InputError,
)
from muster_exact.core.progress import shown, working
from muster_exact.store.file import (
    guarded,
    transaction,
)
from muster_exact.store.results import Head, _chain
from muster_exact.store.state import SAVE_AFTER_GROWTHS, StoreState, _live_keys
from muster_exact.store.where import Where, checked_where

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from muster_exact.derive import Derived
    from muster_exact.derive.cut import Cut
    from muster_exact.derive.plan import Plan
    from muster_exact.memory import Memory
    from muster_exact.models import Models
    from muster_exact.retrieve.assemble import Candidates, Context


@dataclass(frozen=True)
class Inspected:
    """One read and what it chose from (:meth:`StoreReads.inspect_query`)."""

    context: Context
    details: dict[str, Any]  # as :meth:`StoreReads.explain_query` gives them; {} for an empty namespace
    cut: Cut | None  # the units of the records read; None for an empty namespace
    allowed: Candidates | None  # a filtered read's candidates; None when nothing was filtered


class StoreReads(StoreState):
    """Reading a store: plan, memory, context, explain."""

    @guarded
    def plan(self) -> Plan:
        """The plan a fresh build of the current records uses (derived; no model is loaded)."""
        with self._reading:
            return self._planned()

    @guarded
    def _plan_of(self, head: Head) -> Plan:
        """:meth:`plan`, for ``head`` (``Head.plan``): refused once the namespace has moved on."""
        with self._reading:
            now = self._head()
            if now.sha256 != head.sha256:
                raise InputError(
                    f"namespace {self.namespace!r} changed since this head was read ({head.records} "
                    f"records then, {now.records} now); read store.head() again"
                )
            return self._planned()

    def _planned(self) -> Plan:
        head = self._head()
        if self._plan is not None and self._plan[0] == head.sha256:
            return self._plan[1]  # unchanged: no need to read every record again
        known = self._known_plan(head)
        if known is not None:
            self._plan = (head.sha256, known)
            return known
        head, records = self._snapshot()
        self._open_caches()  # the memo reads the file's analyses
        if self._plan is None or self._plan[0] != head.sha256:
            from muster_exact.memory import planned

            self._plan = (head.sha256, planned(records, self.preset, self.read_models(), memo=self.memo)[0])
        return self._plan[1]

    def _known_plan(self, head: Head) -> Plan | None:
        """The plan of ``head``'s records without deriving: the built memory's, else the saved
        derive result's (read alone, no record read); None when neither is for these records
        (equal to a fresh derive: a grown memory and its saved result are what a fresh build
        gives, tested)."""
        if self._memory is not None and self._memory[0].sha256 == head.sha256:
            return self._memory[1].plan
        state = self._saved_state(head)
        if state is None:
            return None
        from muster_exact.derive import saved

        try:
            return saved.plan_of(state)
        except ValueError as exc:
            log.debug("%s: the saved plan is unreadable (%s); derived instead", self.path, exc)
            return None

    def explain(self) -> str:
        from muster_exact.retrieve.explain import explain

        return explain(self.plan())

    @guarded
    def memory(self) -> Memory:
        """The built memory of the current records: the last one when nothing changed, grown by
        the records added since when only adds happened, else built afresh."""
        return self._memory_of_a_head()[1]

    def _memory_of_a_head(self) -> tuple[Head, Memory]:
        """:meth:`memory` and the head of the snapshot it was built from (read in the same
        transaction as its records): what a read's answer is labelled with. Holds ``_reading``,
        not ``_lock``, over the build: an add goes on meanwhile (the next read grows by it)."""
        with self._reading:
            head = self._head()
            stale = self._memory is None or self._memory[0].sha256 != head.sha256
            if stale:
                # A first read after a change embeds what is new: say so once it takes a while.
                with (
                    shown(self.progress),
                    working(f"reading {self.path}: its memory of {head.records} records"),
                ):
                    if self._grown() is None:
                        self._rebuild()
            assert self._memory is not None
            return self._memory

    def _rebuild(self) -> Memory:
        head, records = self._snapshot()
        from muster_exact.memory import build

        vectors, scores = self._open_caches()
        saved = self._saved(head, records)
        memory = build(
            records,
            self.preset,
            self.read_models(),
            cache=vectors,
            scores=scores,
            memo=self.memo,
            progress=self.progress,
            derived=saved,
        )
        self.embedded = memory.embedded
        if not self.read_only:
            with best_effort(f"the bookkeeping of a read of {self.path}"):  # a full disk: still read
                self._record_embedder(memory.models)
                self._remember_units(memory)
                if saved is None:
                    self._save(head, memory)
        self._memory = (head, memory)
        return memory

    def read_models(self) -> Models:
        """The models reads use: those named, held to the embedder the namespace recorded (a
        different one is :class:`EmbedderMismatch` unless the store was opened with ``reembed``)."""
        if self._reads is None:
            from muster_exact.store import models as store_models

            with self._lock:
                embedder = store_models.recorded(self._db, self.namespace)
            self._reads = store_models.chosen(
                self.preset, self.models, embedder, self.namespace, self.reembed
            )
        return self._reads

    def _record_embedder(self, models: Models) -> None:
        from muster_exact.store import models as store_models

        with self._lock:
            if store_models.recorded(self._db, self.namespace) == models.embedder.key:
                return
            with self._db:
                store_models.record(self._db, self.namespace, models.embedder.key)

    def _settings(self) -> str:
        """What a saved derive result depends on besides the records."""
        from muster_exact.core.version import __version__
        from muster_exact.derive import saved
        from muster_exact.memory import models_for

        models = models_for(self.preset, self.read_models())
        return json.dumps(
            [saved.FORMAT, __version__, self.preset, models.name, models.embedder.key],
            separators=(",", ":"),
        )

    def _saved(self, head: Head, records: list[dict[str, Any]]) -> Derived | None:
        """The derive result saved for exactly these records and settings, else None (absent,
        stale, or unreadable: then it is derived afresh, and a damaged one says so in the log)."""
        state = self._saved_state(head)
        if state is None:
            return None
        from muster_exact.derive import saved
        from muster_exact.text.records import from_records

        try:
            return saved.load(state, from_records(records))
        except ValueError as exc:
            log.warning("%s: the saved derive result is unreadable (%s); derived afresh", self.path, exc)
            return None

    def _saved_state(self, head: Head) -> bytes | None:
        """The bytes of the derive result saved for exactly ``head``'s records and these
        settings, else None."""
        with self._lock:
            row = self._db.execute(
                "SELECT head, settings, state FROM built WHERE namespace = ?", (self.namespace,)
            ).fetchone()
        if row is None or row[0] != head.sha256 or row[1] != self._settings():
            return None
        return bytes(row[2])

    def _save(self, head: Head, memory: Memory) -> None:
        if memory.derived is None:
            return
        from muster_exact.derive import saved

        self._unsaved = 0
        state = saved.dump(memory.derived)
        with self._lock, transaction(self._db):
            # Only for the records as they are now: had another process deleted some since this
            # memory was read, saving it would write their words back into the file.
            if self._head().sha256 != head.sha256:
                return
            self._db.execute(
                "INSERT INTO built VALUES (?, ?, ?, ?) ON CONFLICT (namespace) DO UPDATE SET "
                "head = excluded.head, settings = excluded.settings, state = excluded.state",
                (self.namespace, head.sha256, self._settings(), state),
            )

    def _grown(self) -> Memory | None:
        """The last read's memory grown by the records added since (:meth:`Memory.grown`), when
        records were only added: the head is the last read's hash chained over the new records.
        None when something else happened (a delete, here or in another process), or when the
        new records change the branch (``rebuilt_because`` says which)."""
        if self._memory is None:
            self.rebuilt_because = "the first read"
            return None
        seen, memory = self._memory
        with self._lock, transaction(self._db, immediate=False):
            head = self._head()
            rows = self._db.execute(
                f"SELECT id, {self._engine.record_bytes}, sha256 FROM records "
                "WHERE namespace = ? AND seq > ? ORDER BY seq",
                (self.namespace, seen.last_seq),
            ).fetchall()
        bodies = self._checked(rows)
        chained = seen.sha256
        for _, _, record_sha in rows:
            chained = _chain(chained, record_sha)
        if not rows or chained != head.sha256 or head.records != seen.records + len(rows):
            self.rebuilt_because = "records were deleted or replaced since the last read"
            return None
        self._open_caches()
        from muster_exact.text.fields import StoredRecords  # read as stored, not checked again

        with shown(self.progress):
            grown = memory.grown(StoredRecords(json.loads(body) for body in bodies), self.memo)
        if isinstance(grown, str):
            log.info("%s: built afresh: %s", self.path, grown)
            self.rebuilt_because = grown
            return None
        self.rebuilt_because = None
        self.embedded = grown.embedded
        if not self.read_only:
            with best_effort(f"the bookkeeping of a read of {self.path}"):  # a full disk: still read
                self._remember_growth(grown)  # under _lock: its one transaction
            # Saving writes every unit again; after a growth it waits (for close, or a batch).
            self._unsaved += 1
            if self._unsaved >= SAVE_AFTER_GROWTHS:
                with best_effort(f"the derive result of {self.path}"):
                    self._save(head, grown)
        self._memory = (head, grown)
        return grown

    @guarded
    def context(self, query: str, units: int | None = None, *, where: Any = None) -> Context:
        """The context for ``query`` over every record of this namespace, as a fresh build gives it;
        each block carries its records' metadata. ``where`` narrows the candidates to the records
        it matches (:mod:`muster_exact.store.where`: speaker, time range, metadata); nothing else
        of the rule changes. An empty namespace (or one never written) has an empty context, as
        over HTTP and MCP."""
        return self._explained(query, units, where, reasons=False).context

    @guarded
    def explain_query(
        self, query: str, units: int | None = None, *, where: Any = None
    ) -> tuple[Context, dict[str, Any]]:
        """:meth:`context` with the reasons: floors, proposals, rerank order, why each unit is kept."""
        done = self._explained(query, units, where, reasons=True)
        return done.context, done.details

    @guarded
    def inspect_query(self, query: str, units: int | None = None, *, where: Any = None) -> Inspected:
        """:meth:`explain_query` with what the read chose from: the cut of the records it read and,
        for a filtered read, the candidates the filter left (what an inspector shows of the units
        kept and of those left out)."""
        return self._explained(query, units, where, reasons=True)

    def _explained(self, query: str, units: int | None, where: Any, reasons: bool) -> Inspected:
        from muster_exact.memory import checked_query, checked_units
        from muster_exact.retrieve.assemble import Context

        checked_query(query)  # refused before the records are read, let alone embedded
        if units is not None:
            checked_units(units)
        chosen = checked_where(where)
        head = self.head()
        if not head.records:
            checked_units(1 if units is None else units)  # refused as a read of records refuses it
            return Inspected(Context(checked_query(query), "", (), 0, None, head=head), {}, None, None)
        if chosen is None:
            (head, memory), allowed = self._memory_of_a_head(), None
        else:
            head, memory, records = self._read()
            allowed = candidates(memory.cut, records, chosen)
        if reasons:
            context, why = memory.explain_query(query, units, allowed=allowed)
        else:
            context, why = memory.context(query, units, allowed=allowed), {}
        context = dataclasses.replace(self._with_metadata(context), head=head)
        return Inspected(context, why, memory.cut, allowed)

    def _with_metadata(self, context: Context) -> Context:
        """``context`` with each block's records' metadata, by record id (only those records are
        read, not the namespace)."""
        metadata = self.metadata_of(context.record_ids)
        if not metadata:
            return context
        blocks = tuple(
            dataclasses.replace(b, metadata={r: metadata[r] for r in b.records if r in metadata})
            for b in context.blocks
        )
        return dataclasses.replace(context, blocks=blocks)

    @guarded
    def metadata_of(self, ids: Iterable[str]) -> dict[str, Any]:
        """The metadata of these records, by id (records without metadata, or no longer held, are
        left out); only those records are read."""
        ids = list(ids)
        metadata: dict[str, Any] = {}
        with self._lock:
            for start in range(0, len(ids), 500):  # SQLite's bound on one statement's variables
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT id, {self._engine.record_bytes}, sha256 FROM records "
                    f"WHERE namespace = ? AND id IN ({marks})",
                    (self.namespace, *chunk),
                ).fetchall()
                for (record_id, _, _), body in zip(rows, self._checked(rows), strict=True):
                    record = json.loads(body)
                    if "metadata" in record:
                        metadata[record_id] = record["metadata"]
        return metadata

    def _read(self) -> tuple[Head, Memory, list[dict[str, Any]]]:
        """The memory and the records it is built of, of one head (another connection's write
        between the two reads them again), and that head."""
        with self._reading:
            while True:
                built, memory = self._memory_of_a_head()
                if self._read_records is not None and self._read_records[0] == built.sha256:
                    return built, memory, self._read_records[1]
                with self._lock, transaction(self._db, immediate=False):
                    head, rows = self._head(), self._records()
                if head.sha256 == built.sha256:
                    self._read_records = (built.sha256, [json.loads(body) for body in rows])
                    return built, memory, self._read_records[1]

    def _forget_units(self) -> tuple[int, int]:
        """Drop vectors and scores of unit texts no namespace uses any more, in the caller's
        transaction (the write that removed text: it fails whole, a full disk included)."""
        records = [json.loads(body) for body in self._records()]
        keys: list[str] = []
        if records:
            from muster_exact.memory import embedding_pieces, planned, rules_of

            plan, cut, models, _ = planned(records, self.preset, self.read_models())
            # The pieces need the embedder's tokenizer only, never the model itself.
            keys = _live_keys(cut, embedding_pieces(cut, models, rules_of(plan).pieces).texts)
        self._write_unit_keys(keys)
        return drop_texts_not_in(self._db, "SELECT sha256 FROM unit_keys")


def candidates(cut: Cut, records: list[dict[str, Any]], where: Where) -> Candidates:
    """What a read filtered by ``where`` may use: the records that match, and the units that
    hold one (shown with the matching records only:
    :func:`~muster_exact.retrieve.assemble.shown_text`)."""
    from muster_exact.retrieve.assemble import Candidates

    matching = frozenset(i for i, record in enumerate(records) if where.matches(record))
    return Candidates(frozenset(u.id for u in cut.units if not matching.isdisjoint(u.records)), matching)
