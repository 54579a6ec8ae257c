"""Stores read side by side: one memory per member, one context that names each member.

    mem = build_collection({"mem0": export_text, "conversation": turns}, models="cpu-small")
    print(mem.context("What is my sister's name?").text)

A member is anything :func:`muster_exact.build` takes (records, text, a Path, a Source), under a
name. Each member is derived by its own rule: detection runs on the member alone, so a Mem0
export written one memory per line in write order, ``1. ...``, reads as a numbered log (one
unit per memory, the newest version of a slot kept) beside a conversation that reads as a
record store. Each is then retrieved by its own plan through its own
:meth:`~muster_exact.memory.Memory.retrieve`; nothing is pooled or re-scored across members.

The read budget: with no U given, each member reads its own plan's U, so every member's part
of the context is exactly the context it gives alone. A U given as a whole number is shared in
proportion to the members' own U's (:func:`muster_exact.retrieve.select.apportioned`: largest
remainders, then member order, round up); a member whose share rounds to nothing is not read.
A mapping gives U by member name; the members it does not name read their own U.

The order: members in the order given (a mapping keeps its order), each member's blocks in its
own order (stored order, or serial order on a numbered log): two stores share no clock, so no
block of one is placed among the other's. The text heads each member's blocks with its name
(``## conversation``), and every block in ``blocks`` carries ``member``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_ID_CHARS
from muster_exact.derive import derive
from muster_exact.derive.plan import Plan
from muster_exact.retrieve.assemble import Block, Context, Readable
from muster_exact.retrieve.explain import explain
from muster_exact.retrieve.select import apportioned
from muster_exact.text import tokens

if TYPE_CHECKING:
    from muster_exact.memory import Memory
    from muster_exact.models import Models

log = logging.getLogger(__name__)

SECTION_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class MemberBlock(Block):
    """A block of one member's context (parent, units and records are that member's own)."""

    member: str = ""


@dataclass(frozen=True)
class CollectionContext(Readable):
    """One context over the members: ``text`` (what the reader reads), ``blocks`` (each naming
    its member), ``members`` (each member's own context, with its plan and provenance; a member
    that read nothing is absent) and ``units_read`` (each member's share of U)."""

    query: str
    text: str
    blocks: tuple[MemberBlock, ...]
    tokens: int
    members: dict[str, Context]
    units_read: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "text": self.text,
            "tokens": self.tokens,
            "units_read": dict(self.units_read),
            "blocks": [asdict(b) for b in self.blocks],
            "members": {name: context.to_dict() for name, context in self.members.items()},
        }


class Collection:
    """Built members, read side by side (:func:`build_collection` builds one)."""

    def __init__(self, members: Mapping[str, Memory]) -> None:
        from muster_exact import memory as built

        self.members = dict(checked_members(members))
        for name, memory in self.members.items():
            if not isinstance(memory, built.Memory):
                raise InputError(
                    f"member {name!r} is a {type(memory).__name__}, not a built Memory "
                    "(build_collection builds members from records or text)"
                )

    @property
    def plans(self) -> dict[str, Plan]:
        """Each member's plan, by name, in member order."""
        return {name: memory.plan for name, memory in self.members.items()}

    def explain(self) -> str:
        return explain_plans(self.plans)

    def shares(self, units: int | Mapping[str, int] | None = None) -> dict[str, int]:
        """Each member's U for a read (see the module's rule); 0: the member is not read."""
        from muster_exact.memory import checked_units

        own = {name: memory.plan.units_read for name, memory in self.members.items()}
        if units is None:
            return own
        if isinstance(units, Mapping):
            unknown = [name for name in units if name not in own]
            if unknown:
                raise InputError(f"units name {unknown[0]!r}, not a member; the members are {', '.join(own)}")
            return {name: checked_units(units[name]) if name in units else u for name, u in own.items()}
        parts = apportioned(list(own.values()), checked_units(units))
        return dict(zip(own, parts, strict=True))

    def context(self, query: str, units: int | Mapping[str, int] | None = None) -> CollectionContext:
        """One context for ``query``: each member's own context at its share of U, under its name."""
        from muster_exact.memory import checked_query

        query = checked_query(query)
        shares = self.shares(units)
        read = {
            name: self.members[name].retrieve(query, share).context for name, share in shares.items() if share
        }
        log.debug("collection read %s", shares)
        return joined(query, read, shares)


def joined(query: str, read: Mapping[str, Context], shares: Mapping[str, int]) -> CollectionContext:
    """The members' contexts as one: a section per member, headed by its name, in member order;
    a member whose context is empty has no section."""
    sections = [heading(name, context.text) for name, context in read.items() if context.text]
    blocks = tuple(
        MemberBlock(b.parent, b.units, b.records, b.text, b.metadata, name)
        for name, context in read.items()
        for b in context.blocks
    )
    text = SECTION_SEPARATOR.join(sections)
    timings = {f"{name}:{step}": s for name, c in read.items() for step, s in c.timings.items()}
    return CollectionContext(query, text, blocks, tokens.count(text), dict(read), dict(shares), timings)


def checked_name(name: Any) -> str:
    """A member's name: 1 to ``MAX_ID_CHARS`` characters on one line, not all blank (the text
    heads the member's blocks with it)."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > MAX_ID_CHARS
        or "\n" in name
        or "\r" in name
    ):
        raise InputError(f"a member's name must be 1 to {MAX_ID_CHARS} characters on one line, not {name!r}")
    return name


def checked_members(members: Any) -> Mapping[str, Any]:
    if not isinstance(members, Mapping):
        raise InputError(f"members must be a mapping of name to store (a dict), not {type(members).__name__}")
    if not members:
        raise InputError("a collection needs at least one member")
    for name in members:
        checked_name(name)
    return members


def derive_collection(members: Mapping[str, Any], **options: Any) -> dict[str, Plan]:
    """Each member's plan, by name, in member order: :func:`muster_exact.derive` of the member
    alone (``options`` go to each), so each is derived by its own rule."""
    return {name: derive(data, **options) for name, data in checked_members(members).items()}


def build_collection(
    members: Mapping[str, Any],
    preset: str | None = None,
    models: str | Models | None = None,
    **options: Any,
) -> Collection:
    """Each member built alone by :func:`muster_exact.build` (``preset``, ``models`` and
    ``options`` go to each), read side by side."""
    from muster_exact.memory import build

    checked = checked_members(members)
    return Collection({name: build(data, preset, models, **options) for name, data in checked.items()})


def explain_plans(plans: Mapping[str, Plan]) -> str:
    """Each member's plan in words (:func:`muster_exact.retrieve.explain`), headed by its name."""
    return SECTION_SEPARATOR.join(heading(name, explain(plan)) for name, plan in plans.items())


def heading(name: str, text: str) -> str:
    """A member's section: its name as a heading line, then its text."""
    return f"## {name}\n{text}"
