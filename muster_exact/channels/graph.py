"""The parent graph: parents linked by shared entities, walked from the query's entities.

Build: every unit's entities (``muster_exact.text.entities``; on numbered logs also
its slot) are pooled per parent, giving a bipartite parent-entity graph.
Under ``graph_facts = current`` (native mode) a numbered log's graph holds its current facts
only: a slot parent links through its newest version's entities (the version the reader is
shown; older ones are superseded), a fact line's value is one of its entities, and a value named
in another line's slot links the two ("Steve Sax ... the sport of baseball" to "baseball was
created in ..."), so the walk follows a chain of current facts hop by hop.
Query: the query's entities that the store knows seed a personalised walk
over that graph; an entity's seed weight and its share of a parent's
out-going mass grow with its rarity (idf = log(parents / parents with it)),
so "Fatah" counts for more than "May", and an entity found in every parent
counts for nothing. The channel proposes, for the top parents in walk order, their units
that mention query entities (best overlap first), and under policy ``flrs``
each such unit's immediate siblings in its parent; ``flr`` proposes no
siblings; under ``current`` a slot parent proposes its newest version alone. Every order is
broken by id, never by hash or set order.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from muster_exact.cache.memo import Codec, Memo, strings
from muster_exact.channels import Proposals, Recent
from muster_exact.channels.given import Given
from muster_exact.derive.cut import Cut, Unit, newest_version
from muster_exact.models import require
from muster_exact.text import entities, slots
from muster_exact.text.entities import query_entities

if TYPE_CHECKING:
    import numpy as np

Policy = Literal["flrs", "flr"]
POLICIES: tuple[Policy, ...] = ("flrs", "flr")
CONTINUE = 0.5  # the walk's continuation probability; 1 - CONTINUE restarts at the seeds
STEPS = 20
ENTITIES: Codec[frozenset[str]] = Codec(sorted, lambda v: frozenset(strings(v)))


class GraphChannel:
    name = "graph"

    def __init__(
        self,
        unit_entities: Sequence[frozenset[str]],
        unit_parent: Sequence[int],
        parents: Sequence[Sequence[int]],
        policy: Policy = "flrs",
        current: Sequence[int] | None = None,
        facts: str = "all",
    ) -> None:
        """The channel over these units; its arrays are assembled on first use (:meth:`assemble`),
        so a grown memory whose rules never ask the graph (group parents under native rules)
        does not pay for them on every read. ``facts``: the ``graph_facts`` rule it was made under;
        ``current``: under ``current`` on slot parents, each parent's newest version where it is a
        slot, else -1 (None: every version counts, as it does where no parent is a slot)."""
        self.policy = policy
        self.unit_entities = list(unit_entities)  # as given (a grown memory extends them)
        self._parents = [tuple(p) for p in parents]
        self._unit_parent = list(unit_parent)
        self._current = None if current is None else list(current)
        self.facts = facts
        self._proposed: Recent[Proposals] = Recent()

    @classmethod
    def build(cls, given: Given) -> GraphChannel:
        """Over every unit's entities; a fresh build assembles the walk's arrays at once (a grown
        memory: on the graph's first use)."""
        with given.timed("graph"):
            return cls._over(given).assemble()

    @classmethod
    def _over(cls, given: Given) -> GraphChannel:
        policy: Policy = given.plan.retrieval.policy if given.plan.retrieval else "flrs"  # type: ignore[assignment]
        cut = given.cut
        found = unit_entities(cut.units, given.texts, given.memo)
        parents = [u.parent for u in cut.units]
        facts = given.rules.graph_facts
        if not _reads_current_facts(given, facts):
            return cls(found, parents, cut.parents, policy, facts=facts)
        current = with_values(cut.units, given.texts, found)
        return cls(current, parents, cut.parents, policy, newest_of_slots(cut), facts)

    def grown(self, given: Given, keep: int) -> GraphChannel:
        with given.timed("graph"):
            if _reads_current_facts(given, self.facts):
                # A new line may supersede a slot's version or name a value an older line's slot
                # holds: the current facts are read again over every unit (entities memoised).
                return self._over(given)
            found = unit_entities(given.cut.units[keep:], given.texts[keep:], given.memo)
            parents = [u.parent for u in given.cut.units]
            entities_now = [*self.unit_entities[:keep], *found]
            return GraphChannel(entities_now, parents, given.cut.parents, self.policy, facts=self.facts)

    def ruled(self, given: Given) -> GraphChannel:
        # graph_floor and graph_votes are read by the memory; graph_facts shapes the graph itself.
        return self if given.rules.graph_facts == self.facts else self._over(given)

    def texts_from(self, unit: int) -> Sequence[str]:
        return ()  # it keys the units' own texts

    def assemble(self) -> GraphChannel:
        """The vocabulary, the edges and the walk's matrices, now (a fresh build's timed stage)."""
        self._index  # noqa: B018 - the cached property assembles on first access
        return self

    @functools.cached_property
    def _index(self) -> _GraphIndex:
        return _GraphIndex(self._linking_entities(), self._parents)

    def _linking_entities(self) -> Sequence[frozenset[str]]:
        """What links each unit into the graph: its entities, but under ``current`` nothing for
        a slot's older versions (its parent links through the newest alone)."""
        current = self._current
        if current is None:
            return self.unit_entities
        return [
            ents if current[parent] < 0 or current[parent] == unit else frozenset()
            for unit, (ents, parent) in enumerate(zip(self.unit_entities, self._unit_parent, strict=True))
        ]

    @property
    def vocabulary(self) -> frozenset[str]:
        return self._index.vocabulary

    @property
    def _entity_id(self) -> dict[str, int]:
        return self._index.entity_id

    def _entities_of(self, unit: int) -> list[int]:
        index = self._index
        return index.mentions[index.bounds[unit] : index.bounds[unit + 1]].tolist()  # type: ignore[no-any-return]

    def seeds(self, query: str) -> list[str]:
        return query_entities(query, self.vocabulary)

    def rarest(self, query: str) -> int | None:
        """In how many parents the query's rarest known entity lies (None: it names none)."""
        seed_ids = [self._entity_id[e] for e in self.seeds(query)]
        return min(int(self._index.df[i]) for i in seed_ids) if seed_ids else None

    def selective(self, query: str, floor: int) -> bool:
        """Whether the query's rarest known entity lies in at most ``floor`` parents, so a floor
        of that many units can reach every parent that holds it."""
        rarest = self.rarest(query)
        return rarest is not None and rarest <= floor

    def walk(self, seed_ids: Sequence[int]) -> np.ndarray:
        """Parent mass after the personalised walk from the seed entities."""
        np = require("numpy")
        index = self._index
        seed_weight = np.zeros(index.n_entities)
        seed_weight[list(seed_ids)] = index.idf[list(seed_ids)]
        start = np.bincount(
            index.edge_parent, weights=seed_weight[index.edge_entity], minlength=index.n_parents
        )
        if start.sum() <= 0:
            return start  # type: ignore[no-any-return]
        start /= start.sum()
        mass = start.copy()
        for _ in range(STEPS):
            # Parents send mass to their entities; each entity shares what it got evenly.
            spread = index.steps.to_parents(index.steps.to_entities(mass) / index.df)
            mass = (1 - CONTINUE) * start + CONTINUE * spread
        return mass  # type: ignore[no-any-return]

    def propose(self, query: str, k: int) -> Proposals:
        return self._proposed.get((query, k), lambda: self._propose(query, k))

    def _propose(self, query: str, k: int) -> Proposals:
        np = require("numpy")
        seed_ids = [self._entity_id[e] for e in self.seeds(query)]
        n_parents = self._index.n_parents
        if not seed_ids or not n_parents:
            return Proposals(self.name, (), ())
        mass = self.walk(seed_ids)
        wanted = set(seed_ids)
        idf = self._index.idf
        ranked_parents = [int(p) for p in np.lexsort((np.arange(n_parents), -mass)) if mass[p] > 0]
        chosen: list[int] = []
        scores: list[float] = []
        taken: set[int] = set()

        def add(unit: int, score: float) -> None:
            if unit not in taken and len(chosen) < k:
                taken.add(unit)
                chosen.append(unit)
                scores.append(score)

        current = self._current
        for parent in ranked_parents:
            if current is not None and current[parent] >= 0:
                add(current[parent], float(mass[parent]))  # the version the reader is shown
                if len(chosen) >= k:
                    break
                continue
            members = self._parents[parent]
            overlap = {u: math.fsum(idf[e] for e in self._entities_of(u) if e in wanted) for u in members}
            best = sorted(members, key=lambda u: (-overlap[u], u))
            matched = [u for u in best if overlap[u] > 0] or best[:1]
            for unit in matched:
                add(unit, float(mass[parent]))
                if self.policy == "flrs":
                    at = members.index(unit)
                    for sibling in members[max(at - 1, 0) : at + 2]:
                        add(sibling, float(mass[parent]))
            if len(chosen) >= k:
                break
        return Proposals(self.name, tuple(chosen), tuple(scores))


class _GraphIndex:
    """The arrays the walk reads, from every unit's entities and the parents."""

    def __init__(self, unit_entities: Sequence[frozenset[str]], parents: Sequence[tuple[int, ...]]) -> None:
        np = require("numpy")
        flat = list(itertools.chain.from_iterable(unit_entities))
        vocabulary = sorted(set(flat))
        self.entity_id = {e: i for i, e in enumerate(vocabulary)}
        self.vocabulary = frozenset(vocabulary)
        n_parents, n_entities = len(parents), len(vocabulary)
        # Every unit's entity ids, one flat array in unit order (``bounds[u]`` is unit u's first):
        # in set order within a unit, which nothing depends on (edges are sorted, overlaps fsum'd).
        mentions = np.array(list(map(self.entity_id.__getitem__, flat)), dtype=np.int64)
        sizes = np.array(list(map(len, unit_entities)), dtype=np.int64)
        self.mentions = mentions
        self.bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
        # Edges: each (parent, entity) pair once, sorted by parent then entity.
        parent_of_unit = np.full(len(unit_entities), -1, dtype=np.int64)
        for p, members in enumerate(parents):
            parent_of_unit[list(members)] = p
        mention_parent = np.repeat(parent_of_unit, sizes)
        in_parent = mention_parent >= 0  # a unit outside every parent links nothing
        edges = np.unique(mention_parent[in_parent] * max(n_entities, 1) + mentions[in_parent])
        self.edge_parent = edges // max(n_entities, 1)
        self.edge_entity = edges % max(n_entities, 1)
        df = np.bincount(self.edge_entity, minlength=n_entities).astype(np.float64)
        # idf = log(P / df): an entity in every parent (a speaker's name in every
        # turn header) says nothing about where to look and weighs nothing.
        self.idf = np.log(np.maximum(n_parents / np.maximum(df, 1.0), 1.0))
        self.df = np.maximum(df, 1.0)
        # A parent sends its mass to its entities in proportion to their idf.
        parent_idf = np.bincount(self.edge_parent, weights=self.idf[self.edge_entity], minlength=n_parents)
        self.edge_out = self.idf[self.edge_entity] / np.maximum(parent_idf[self.edge_parent], 1e-12)
        self.n_parents = n_parents
        self.n_entities = n_entities
        self.steps = _WalkSteps(self.edge_parent, self.edge_entity, self.edge_out, n_parents, n_entities)


class _WalkSteps:
    """The walk's two steps as sparse matrix products over the edges.

    ``to_entities(mass)[e]`` is the sum over e's edges of ``mass[parent] * out[edge]``, and
    ``to_parents(x)[p]`` the sum over p's edges of ``x[entity]``. Each sum runs over its edges in
    the order a ``bincount`` over the sorted edge list adds them (a CSR row holds its columns in
    increasing order, and the edges are sorted by parent, then entity), from 0.0, one product at
    a time. So the mass is bit for bit what the bincount walk gave (tests/channels/test_graph_walk.py
    holds it to that walk), with no per-edge gather of the mass: at 10M tokens the channel's query
    went from 156 to 39 ms p50 (results/bench/scale.md).
    """

    def __init__(
        self,
        edge_parent: np.ndarray,
        edge_entity: np.ndarray,
        edge_out: np.ndarray,
        n_parents: int,
        n_entities: int,
    ) -> None:
        np = require("numpy")
        sparse = require("scipy.sparse")
        by_entity = np.lexsort((edge_parent, edge_entity))
        shape = (n_entities, n_parents)
        self._out = sparse.csr_matrix(
            (edge_out[by_entity], (edge_entity[by_entity], edge_parent[by_entity])), shape=shape
        )
        self._members = sparse.csr_matrix(
            (np.ones(len(edge_parent)), (edge_parent, edge_entity)), shape=(n_parents, n_entities)
        )
        self._out.sort_indices()
        self._members.sort_indices()

    def to_entities(self, mass: np.ndarray) -> np.ndarray:
        return self._out @ mass  # type: ignore[no-any-return]

    def to_parents(self, entity_values: np.ndarray) -> np.ndarray:
        return self._members @ entity_values  # type: ignore[no-any-return]


def unit_entities(units: Sequence[Unit], texts: Sequence[str], memo: Memo) -> list[frozenset[str]]:
    """Each unit's entities (from its retrieval text), and on a numbered log its slot."""
    found = memo.many("entities", texts, lambda new: [frozenset(entities.extract(t)) for t in new], ENTITIES)
    return [ents | {unit.slot} if unit.slot else ents for unit, ents in zip(units, found, strict=True)]


def _reads_current_facts(given: Given, facts: str) -> bool:
    """Whether the graph is one of current facts: under that rule, and only where parents are
    slots (elsewhere no unit has versions or a value, and a grown graph adds only its new units)."""
    return facts == "current" and given.plan.parent_rule == "slot"


def with_values(
    units: Sequence[Unit], texts: Sequence[str], found: Sequence[frozenset[str]]
) -> list[frozenset[str]]:
    """``found`` with, on each fact line, its value, and every line's values named in its slot:
    the link from a fact to the facts about its value, which capitalised names alone miss
    ("the sport of baseball" to "baseball was created in ...")."""
    values = [
        fact[1] if unit.slot and (fact := slots.slot_and_value(text)) else None
        for unit, text in zip(units, texts, strict=True)
    ]
    known = frozenset(v for v in values if v)
    out = []
    for unit, ents, value in zip(units, found, values, strict=True):
        if unit.slot is None:
            out.append(ents)
            continue
        named = query_entities(unit.slot, known)
        out.append(ents | {value} | set(named) if value else ents | set(named))
    return out


def newest_of_slots(cut: Cut) -> list[int]:
    """Each parent's newest version (the one assembly shows) where the parent is a slot, else -1."""
    out = []
    for members in cut.parents:
        first = cut.units[members[0]]
        out.append(newest_version(cut, first) if first.slot is not None and first.serial is not None else -1)
    return out
