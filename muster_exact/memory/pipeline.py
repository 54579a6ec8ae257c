"""``Memory``: a built memory and its query pipeline (channels -> order -> floors -> assembly), grown in
place when a store gains records."""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import ScoreCache, VectorCache
from muster_exact.channels import CHANNELS, Floors, Proposals, distinct_records, pool_size, restricted
from muster_exact.channels.dense import DenseChannel
from muster_exact.channels.given import BuiltChannel, Given
from muster_exact.channels.graph import GraphChannel
from muster_exact.core.errors import InputError
from muster_exact.core.progress import shown, working
from muster_exact.derive import Derived, declared, record_unit_budget
from muster_exact.derive import grown as derived_grown
from muster_exact.derive.cut import Cut
from muster_exact.derive.growth import Growth
from muster_exact.derive.pieces import Pieces
from muster_exact.derive.plan import Mode, Plan
from muster_exact.memory.indexes import _cache, built, unit_texts
from muster_exact.memory.settings import (
    _derived,
    _with_rules,
    checked_query,
    checked_units,
    models_for,
    rules_of,
    unit_window,
)
from muster_exact.models import Models, load_reranker
from muster_exact.retrieve.assemble import Candidates, Context, assemble
from muster_exact.retrieve.rerank import Ranking, cross_encode, fuse
from muster_exact.retrieve.select import Selected, scaled_floors, select
from muster_exact.rules import BUILD_RULES, Rules
from muster_exact.text.records import from_records

log = logging.getLogger(__name__)


class Memory:
    """A built store: its plan, its cut, and the indexes each channel reads."""

    def __init__(
        self,
        plan: Plan,
        cut: Cut,
        models: Models,
        cache: VectorCache,
        timings: dict[str, float],
        scores: ScoreCache | None = None,
        rules: Rules | None = None,
        memo: Memo | None = None,
    ):
        memo = memo if memo is not None else Memo()
        self.plan = plan
        self.cut = cut
        self.models = models
        self.timings = timings
        self.rules = rules or rules_of(plan)
        self._texts = unit_texts(cut)
        self._cache = cache
        given = Given(plan, cut, self._texts, models, self.rules, memo, cache, self.timings)
        self._channels = built(given, self.rules.channel_names())
        # What grow() extends: the derive result (detection's counts, the cut) and the cache.
        self.derived: Derived | None = None
        self.growth: Growth | None = None  # set on a memory grown from another: what changed
        # A declared record input (build(..., record_format="serial")): the records as given.
        self.ordered_records: declared.OrderedRecords | None = None
        self._reranker = load_reranker(models.reranker) if models.reranker else None
        self._scores = scores
        self.scored = 0  # cross-encoder pairs computed (not read from the score cache)
        counted = memo.tokens([cut.text(u) for u in cut.units if u.tokens is None])
        missing = iter(counted)
        # Each unit's own token count (what a token budget spends on it).
        self.unit_tokens = [u.tokens if u.tokens is not None else next(missing) for u in cut.units]
        log.info(
            "built %s: %d units, %d pieces, %d newly embedded",
            plan.branch,
            len(self._texts),
            len(self.pieces.texts),
            self.embedded,
        )

    @property
    def pieces(self) -> Pieces:
        """What the dense channel embedded of each unit (none without a dense channel)."""
        dense = self._channels.get("dense")
        return dense.pieces if isinstance(dense, DenseChannel) else Pieces((), (), ())

    @property
    def embedded(self) -> int:
        """Pieces the model embedded for this build or growth (not read from a cache)."""
        dense = self._channels.get("dense")
        return dense.embedded if isinstance(dense, DenseChannel) else 0

    @property
    def unit_texts(self) -> list[str]:
        return list(self._texts)

    def grown(self, records: Sequence[Any], memo: Memo) -> Memory | str:
        """This memory with ``records`` appended to its own (a memory built from records by
        :func:`build`): what a fresh build of all of them gives, with only what changed
        analysed, indexed and embedded (``growth`` says what that was). Detection's counts and
        the cut are extended (:func:`muster_exact.derive.grown`); the units before the first
        changed one keep their texts, BM25 terms, entities, pieces and vectors; the index
        arrays are assembled again from those parts (numpy over arrays, no text is read).
        When the new records change the branch, the reason instead: build afresh."""
        if self.derived is None or self.cut.source.layout != "records":
            return "this memory was not built from records"
        if self.ordered_records is not None:
            return "a declared record input is built afresh"
        started = time.perf_counter()
        source = from_records(records, after=self.cut.source)
        done = derived_grown(self.derived, source, memo)
        if isinstance(done, str):
            return done
        derived, growth = done
        timings = {"source": time.perf_counter() - started, **derived.timings}
        plan = dataclasses.replace(
            derived.plan, units_read=self.plan.units_read, retrieval=self.plan.retrieval
        )
        cut, keep = derived.cut, growth.first_unit
        new_units = cut.units[keep:]
        texts = [*self._texts[:keep], *(cut.retrieval_text(u) for u in new_units)]
        given = Given(plan, cut, texts, self.models, self.rules, memo, self._cache, timings)
        channels = {name: channel.grown(given, keep) for name, channel in self._channels.items()}
        counted = iter(memo.tokens([cut.text(u) for u in new_units if u.tokens is None]))
        held = {*texts[keep:], *(cut.text(u) for u in new_units)}
        held.update(t for channel in channels.values() for t in channel.texts_from(keep))
        replaced = [
            *self._texts[keep:],
            *(self.cut.text(u) for u in self.cut.units[keep:]),
            *(t for channel in self._channels.values() for t in channel.texts_from(keep)),
        ]
        memo.forget([t for t in replaced if t not in held])
        other = copy.copy(self)
        other.plan, other.cut, other.timings = plan, cut, timings
        other.derived = dataclasses.replace(derived, plan=plan)
        other.growth, other.scored = growth, 0
        other._texts, other._channels = texts, channels
        other.unit_tokens = [
            *self.unit_tokens[:keep],
            *(u.tokens if u.tokens is not None else next(counted) for u in new_units),
        ]
        log.info(
            "grew %s by %d record(s): %d of %d units cut again, %d pieces embedded",
            plan.branch,
            len(records),
            len(new_units),
            len(cut.units),
            other.embedded,
        )
        return other

    def with_rules(self, **changes: str) -> Memory:
        """This memory under other query-time rules (and another analyser, rebuilt from the
        texts), sharing its cut and vectors. Changing a build rule (``unit_size``, ``pieces``)
        needs a new build: :meth:`under` does it."""
        rules = self.rules.replace(**changes)
        for name in BUILD_RULES:
            if getattr(rules, name) != getattr(self.rules, name):
                raise InputError(
                    f"the {name} rule shapes the cut or the vectors: build the memory again to "
                    "change it (Memory.under does)"
                )
        return self._ruled(rules)

    def under(self, rules: Rules) -> Memory:
        """This memory under ``rules``: sharing its cut and vectors where ``rules`` cut and
        embed this store as its own do, else built again from the same records and settings
        (vectors already embedded come from the same cache)."""
        same_build = rules.pieces == self.rules.pieces and rules.channels == self.rules.channels
        if same_build and self._unit_budget(rules) == self.plan.unit_budget:
            return self._ruled(rules)
        retrieval = self.plan.retrieval
        return build(
            self.cut.source,
            retrieval.preset if retrieval else None,
            self.models,
            mode=self.plan.mode,
            units=self.plan.units_read,
            policy=retrieval.policy if retrieval else None,  # type: ignore[arg-type]
            cache=self._cache,
            scores=self._scores,
            rules=rules,
        )

    def _unit_budget(self, rules: Rules) -> int | None:
        """The unit budget ``rules`` give this memory's plan (as :func:`analyse` sets it)."""
        plan = self.plan
        if plan.branch != "record_store":
            return plan.unit_budget
        return record_unit_budget(plan.record_budget, unit_window(self.models, rules))

    def _ruled(self, rules: Rules) -> Memory:
        other = copy.copy(self)
        other.rules = rules
        other.plan = dataclasses.replace(self.plan, retrieval=_with_rules(self.plan.retrieval, rules))
        given = Given(other.plan, self.cut, self._texts, self.models, rules, Memo(), self._cache, {})
        other._channels = {name: channel.ruled(given) for name, channel in self._channels.items()}
        return other

    def with_channel(self, channel: BuiltChannel) -> Memory:
        """This memory with ``channel`` in place of its channel of the same name (a study's
        variant of one channel, everything else shared)."""
        self.channel(channel.name)
        other = copy.copy(self)
        other._channels = {**self._channels, channel.name: channel}
        return other

    def channels(self) -> dict[str, BuiltChannel]:
        """The built channels by name, in the registry's order (:data:`~muster_exact.channels.CHANNELS`)."""
        return dict(self._channels)

    def channel(self, name: str) -> BuiltChannel:
        """One channel by name (an unknown name: the registry's typed error; a registered channel
        this memory's rules do not build: an InputError saying so)."""
        CHANNELS.check(name)
        if name not in self._channels:
            raise InputError(
                f"this memory does not build the {name} channel (its channels rule: {self.rules.channels}); "
                f"build it with rules naming {name}"
            )
        return self._channels[name]

    def checked(self, query: str, units: int | None = None) -> tuple[str, int]:
        """``query`` checked (not empty, not too long) and the units a read takes: U (``units``
        checked, else the plan's) counted in units of the record budget
        (:meth:`~muster_exact.derive.plan.Plan.units_to_read`)."""
        return checked_query(query), self.plan.units_to_read(
            self.plan.units_read if units is None else checked_units(units)
        )

    def proposals(
        self, query: str, units_read: int, allowed: Candidates | None = None
    ) -> tuple[list[Proposals], dict[str, float]]:
        """Each channel's top max(2U, 20) units, in channel order, and each one's seconds.
        ``allowed``: only these units may be proposed (a filtered read,
        :mod:`muster_exact.store.where`): each channel's own ranking of every unit, restricted to
        them (a channel's top k is the first k of its full ranking, so nothing else changes).
        Under ``pool_messages="distinct"``, on a record store, a unit joins a pool only when it
        shows a message no unit above it does (:func:`~muster_exact.channels.distinct_records`)."""
        k = pool_size(units_read)
        out, timings = [], {}
        for name, channel in self.channels().items():
            started = time.perf_counter()
            if not self.votes(name):
                proposed = Proposals(name, (), ())
            else:
                proposed = self._pool(channel, query, k, allowed)
            out.append(proposed)
            timings[name] = time.perf_counter() - started
        return out, timings

    def _pool(self, channel: BuiltChannel, query: str, k: int, allowed: Candidates | None) -> Proposals:
        """One channel's pool of ``k`` (:meth:`proposals`)."""
        total = len(self.cut.units)
        distinct = self.rules.pool_messages == "distinct" and self.plan.branch == "record_store"
        if allowed is not None:
            ranked = restricted(channel.propose(query, total), allowed.units, total if distinct else k)
            return distinct_records(ranked, self.cut.shown_records, k) if distinct else ranked
        if not distinct:
            return channel.propose(query, k)
        shown = self.cut.shown_records
        # Read the channel's ranking deeper until k units show new messages: a message spans
        # 3 units on average on BEAM's chats, so twice k is read at first, doubled when short.
        depth = min(total, 2 * k)
        while True:
            ranked = channel.propose(query, depth)
            pool = distinct_records(ranked, shown, k)
            if len(pool.units) == k or depth >= total or len(ranked.units) < depth:
                return pool
            depth = min(total, 2 * depth)

    def votes(self, channel: str) -> bool:
        """Whether ``channel`` proposes on this store: the graph only where the ``graph_votes``
        rule says (``slots``: where parents are slots, numbered logs; on group parents, positional
        windows of the stored order, it proposes nothing and its floor goes to the fill)."""
        if channel != "graph" or self.rules.graph_votes == "always":
            return True
        return self.plan.parent_rule == "slot"

    def rank(self, query: str, proposals: list[Proposals]) -> Ranking:
        if self._reranker is None:
            return fuse(proposals, self.rules.fusion)
        if self._scores is None:
            return cross_encode(query, proposals, self._texts.__getitem__, self._reranker.score)
        reranker, scores = self._reranker, self._scores

        def cached(q: str, texts: list[str]) -> list[float]:
            values, computed = scores.scored(reranker.model_id, q, texts, reranker.score)
            self.scored += computed
            return values

        return cross_encode(query, proposals, self._texts.__getitem__, cached)

    def select(
        self,
        proposals: Sequence[Proposals],
        ranking: Ranking,
        floors: Floors,
        units_read: int,
        *,
        own_order: bool | None = None,
    ) -> list[Selected]:
        """U units under ``floors`` (:func:`muster_exact.retrieve.select.select`); ``own_order`` None:
        this memory's rule (each channel's own order only without a cross-encoder); the slots after
        the floors by MMR over parents under the ``coverage="mmr"`` rule."""
        if own_order is None:
            own_order = self._reranker is None and self.rules.floor_order == "own"
        parents = [u.parent for u in self.cut.units] if self.rules.coverage == "mmr" else None
        return select(proposals, ranking, floors, units_read, own_order=own_order, parents=parents)

    def assemble(
        self,
        query: str,
        chosen: Sequence[Selected],
        ranking: Ranking,
        proposals: Sequence[Proposals],
        *,
        units_read: int | None = None,
        supersession: bool | None = None,
        by_score: bool = False,
        allowed: Candidates | None = None,
    ) -> Context:
        """The context of ``chosen`` (:func:`muster_exact.retrieve.assemble.assemble`), its plan saying
        ``units_read`` and ``supersession`` where given (else the plan's own); ``allowed``: the
        candidates of a filtered read (a unit is shown as its slot's newest candidate version)."""
        changes: dict[str, Any] = {}
        if units_read is not None and units_read != self.plan.units_read:
            changes["units_read"] = units_read
        if supersession is not None and supersession != self.plan.supersession:
            changes["supersession"] = supersession
        plan = dataclasses.replace(self.plan, **changes) if changes else self.plan
        return assemble(query, self.cut, plan, chosen, ranking, proposals, by_score=by_score, allowed=allowed)

    def context(self, query: str, units: int | None = None, *, allowed: Candidates | None = None) -> Context:
        """The context for ``query``: U units (default: the plan's), assembled; ``allowed``: only
        these units are candidates (:meth:`proposals`)."""
        return self.retrieve(query, units, allowed=allowed).context

    def retrieve(
        self, query: str, units: int | None = None, *, allowed: Candidates | None = None
    ) -> Retrieved:
        """One retrieval pass, composed of the public steps: :meth:`proposals`, :meth:`rank`,
        :meth:`floors`, :meth:`select`, :meth:`assemble`; the context with what led to it."""
        query, units_read = self.checked(query, units)
        proposals, timings = self.proposals(query, units_read, allowed)
        started = time.perf_counter()
        ranking = self.rank(query, proposals)
        timings["rerank"] = time.perf_counter() - started
        started = time.perf_counter()
        floors = self.floors(query, units_read)
        chosen = self.select(proposals, ranking, floors, units_read)
        context = self.assemble(query, chosen, ranking, proposals, units_read=units_read, allowed=allowed)
        timings["select+assemble"] = time.perf_counter() - started
        return Retrieved(
            dataclasses.replace(context, timings=timings), proposals, ranking, units_read, floors
        )

    def floors(self, query: str, units_read: int) -> dict[str, int]:
        """Each channel's floor for this query, by name: the plan's floors scaled to U, the
        graph's released to the fill where it does not vote (:meth:`votes`), or when the
        ``graph_floor`` rule says so: ``slots`` reserves it
        only where parents are slots (numbered logs), ``selective`` only when the query's rarest
        entity lies in at most as many parents as the floor has units, ``off`` never. A channel
        this memory does not build (its rules do not name it) has no floor."""
        scaled = scaled_floors(self.plan.floors, units_read)
        floors = {name: floor if name in self._channels else 0 for name, floor in scaled.items()}
        if self.rules.floors == "none":
            return dict.fromkeys(floors, 0)
        rule, graph = self.rules.graph_floor, floors["graph"]
        if not isinstance(self._channels.get("graph"), GraphChannel):
            return floors
        if not self.votes("graph"):
            return {**floors, "graph": 0}
        if rule == "always" or graph == 0:
            return floors
        if rule == "slots":
            reserved = self.plan.parent_rule == "slot"
        elif rule == "selective":
            reserved = self._graph().selective(query, graph)
        else:
            reserved = False
        return floors if reserved else {**floors, "graph": 0}

    def _graph(self) -> GraphChannel:
        """The graph channel, whose own rules (``graph_floor``, ``graph_votes``) the memory reads."""
        graph = self._channels["graph"]
        assert isinstance(graph, GraphChannel)
        return graph

    def explain_query(
        self, query: str, units: int | None = None, *, allowed: Candidates | None = None
    ) -> tuple[Context, dict[str, Any]]:
        """The context, with each channel's floor and proposals, the rerank order (and each
        unit's score in it) and why each unit was kept, from one retrieval pass."""
        done = self.retrieve(query, units, allowed=allowed)
        return done.context, {
            "units_read": done.units_read,
            "rerank": done.ranking.method,
            "graph_seeds": self._graph().seeds(query) if "graph" in self._channels else [],
            "channels": [
                {"channel": p.channel, "floor": done.floors[p.channel], "proposals": list(p.units)}
                for p in done.proposals
            ],
            "rerank_order": list(done.ranking.order),
            "rerank_scores": [done.ranking.scores.get(u) for u in done.ranking.order],  # in that order
            "kept": [dataclasses.asdict(p) for p in done.context.provenance],
        }


@dataclass(frozen=True)
class Retrieved:
    """One retrieval pass: the context, each channel's proposals, the candidate order, U and the
    floors by channel name."""

    context: Context
    proposals: list[Proposals]
    ranking: Ranking
    units_read: int
    floors: dict[str, int]


def build(
    data: Any,
    preset: str | None = None,
    models: str | Models | None = None,
    *,
    mode: Mode | None = None,
    units: int | None = None,
    policy: Literal["flrs", "flr"] | None = None,
    cache: VectorCache | Path | str | bool | None = None,
    scores: ScoreCache | None = None,
    rules: Rules | None = None,
    memo: Memo | None = None,
    progress: bool = False,
    derived: Derived | None = None,
    record_format: str | None = None,
    declared_order: declared.SourceOrder | None = None,
) -> Memory:
    """Build a memory from text, records, a Path or a Source.

    ``preset`` (e.g. ``"beam.u20"``) fixes U, budgets, policy, models and exact
    mode; ``models`` overrides the model profile (``"cpu-small"``, ``"paper"``
    or a :class:`Models`); ``cache`` is the vector cache (default: a SQLite
    file under $MUSTER_HOME; ``False``: memory only); ``scores`` caches
    cross-encoder scores (the Store keeps both in its file); ``rules`` (a
    :class:`~muster_exact.rules.Rules`) overrides the mode's retrieval rules; ``memo`` (a
    :class:`~muster_exact.cache.memo.Memo`) keeps per-text work for the next build of a growing store;
    ``progress``: the long stages' progress on stderr (a bar on a terminal, else a line per
    tenth; :mod:`muster_exact.core.progress`), never on stdout; ``derived``:
    the derive result of ``data`` under these settings, saved earlier (a store keeps it:
    :mod:`muster_exact.derive.saved`), used instead of detecting and cutting again;
    ``record_format="serial"`` or ``declared_order=SourceOrder()`` (or ``data`` a
    :class:`~muster_exact.derive.declared.Envelope`): a declared record array, in its own order, each
    serial prefix set aside (:mod:`muster_exact.derive.declared`; ``Memory.ordered_records``).
    """
    ordered = declared.declaration(data, record_format, declared_order)
    with shown(progress), working(f"building a memory{f' ({preset})' if preset else ''}"):
        if derived is None:
            plan, derived, chosen_models = _derived(
                data,
                preset,
                models,
                mode=mode,
                units=units,
                policy=policy,
                rules=rules,
                memo=memo,
                ordered=ordered,
            )
        else:
            plan, chosen_models = derived.plan, models_for(preset, models)
        memory = Memory(
            plan, derived.cut, chosen_models, _cache(cache), dict(derived.timings), scores, memo=memo
        )
        memory.derived = derived
        memory.ordered_records = ordered
    if memo is not None:
        memo.settle()
    return memory
