"""What a channel is built from, and what a memory asks of a built channel.

A memory builds each channel its rules name (``Rules.channels``) from one
:class:`Given`: the plan and the cut, each unit's retrieval text, the model
profile, the rules, and the per-text memo and vector cache a growing store
keeps. :class:`BuiltChannel` is the whole of a channel's side: ``build`` from a
cut, ``grown`` when the store gains records (units before ``keep`` unchanged),
``ruled`` under other query-time rules, and ``propose``. ``Memory`` loops over
the channels and never reaches into one; a fourth channel is its module and
its ``CHANNELS`` entry (``tests/channels/test_channel_example.py`` adds one).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from muster_exact.cache.memo import Memo
from muster_exact.cache.vectors import VectorCache
from muster_exact.channels import Proposals
from muster_exact.derive.cut import Cut
from muster_exact.derive.plan import Plan
from muster_exact.models import Models


class ChannelRules(Protocol):
    """The retrieval rules a channel reads (:class:`muster_exact.rules.Rules` is one; the rules
    sit above the channels, so the channels name only what they read)."""

    @property
    def pieces(self) -> str: ...
    @property
    def pooling(self) -> str: ...
    @property
    def lexical(self) -> str: ...
    @property
    def graph_facts(self) -> str: ...
    @property
    def dense_feedback(self) -> str: ...


@dataclass(frozen=True)
class Given:
    """Everything a channel may be built from. ``texts[u]`` is unit ``u``'s retrieval text (what
    it is embedded, indexed and reranked by); ``timings`` gains each build stage's seconds."""

    plan: Plan
    cut: Cut
    texts: Sequence[str]
    models: Models
    rules: ChannelRules
    memo: Memo
    cache: VectorCache
    timings: dict[str, float]

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the seconds the block takes to ``timings[stage]``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - started


class BuiltChannel(Protocol):
    """A channel as a memory holds it: made from a :class:`Given`, grown and re-ruled as one."""

    name: str

    @classmethod
    def build(cls, given: Given) -> BuiltChannel:
        """The channel over ``given.cut``."""
        ...

    def grown(self, given: Given, keep: int) -> BuiltChannel:
        """The channel a fresh build over ``given`` gives, reusing what it built for the first
        ``keep`` units (their texts are unchanged); only what is new is computed."""
        ...

    def ruled(self, given: Given) -> BuiltChannel:
        """This channel under ``given.rules`` (query-time rules may differ; self when none it
        reads does). Nothing is embedded again."""
        ...

    def texts_from(self, unit: int) -> Sequence[str]:
        """The texts, beyond the units' own, that this channel keyed in the memo for units from
        ``unit`` on: what a grown memory forgets when it cuts those units again."""
        ...

    def propose(self, query: str, k: int) -> Proposals: ...
