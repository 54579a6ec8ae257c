"""The Plan: what detection decided about a store, and its exact JSON form.

A plan carries every setting the later stages read (branch, budgets, parent
rule, floors, U, order, supersession) together with the measurements that led
there and the reasons in words. ``Plan.from_json(plan.to_json()) == plan``
holds exactly; floats are written with ``repr`` precision by ``json``.

Schema versions: 2 writes ``floors`` by channel name (``{"dense": 4, "bm25":
3, "graph": 3}``); 1 wrote them as a list of three numbers in the order
dense, BM25, graph. A version-1 plan (a store's saved derive result, a plan
file written by ``muster derive --json``) is read by :func:`migrated`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

from muster_exact.channels import by_channel
from muster_exact.core.errors import InputError, PlanError

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, SCHEMA_VERSION)
# The channels a version-1 plan's floors list named, in its order (fixed: never the registry's).
V1_FLOOR_CHANNELS = ("dense", "bm25", "graph")

Branch = Literal["numbered_log", "record_store", "prose"]
BRANCHES: tuple[Branch, ...] = get_args(Branch)
Mode = Literal["native", "exact"]
MODES: tuple[Mode, ...] = get_args(Mode)  # native first: the library's default


@dataclass(frozen=True)
class Thresholds:
    """The rule's constants (SPEC 2); a plan records the ones it used."""

    serial_share: float = 0.80
    record_share: float = 0.90
    native_continuity: float = 0.95
    native_median_tokens: float = 20.0


@dataclass(frozen=True)
class Stats:
    """Counts measured while cutting; ``verify cuts`` compares these."""

    records: int = 0
    lines: int = 0
    tokens: int = 0
    units: int = 0
    parents: int = 0
    oversize_records: int = 0
    slots_with_versions: int = 0


@dataclass(frozen=True)
class Retrieval:
    """How a built memory retrieves: set by ``build`` (derive leaves it empty)."""

    preset: str | None
    policy: str
    pool: int
    models: str
    embedder: str
    reranker: str | None
    rerank: str  # "cross-encoder", or the fusion ("rrf", "minmax", ...) when no weights are given
    # The retrieval rules (muster_exact.rules). A plan written before they existed lacks
    # them and reads as what that version ran: units up to the record budget, whole units,
    # lower-case words, RRF.
    unit_size: str = "budget"
    pieces: str = "unit"
    pooling: str = "max"
    lexical: str = "words"
    fusion: str = "rrf"
    floors: str = "reserved"
    floor_order: str = "fused"
    graph_floor: str = "always"
    graph_votes: str = "always"
    graph_facts: str = "all"  # a plan from before the rule kept every version in the graph
    pool_messages: str = "any"  # a plan from before the rule let any unit join a pool
    dense_feedback: str = "none"  # a plan from before the rule asked the query as given
    coverage: str = "none"  # a plan from before the rule filled in candidate order
    channels: str = "dense,bm25,graph"  # a plan from before the channels rule ran the paper's three


@dataclass(frozen=True)
class Plan:
    branch: Branch
    mode: Mode
    layout: Literal["text", "records"]
    serial_share: float
    record_share: float
    serial_style: str | None
    native_continuity: float | None
    native_median_tokens: float | None
    unit_budget: int | None
    record_budget: int
    prose_budget: int
    parent_rule: Literal["slot", "group"]
    parent_group_size: int | None
    floors: dict[str, int]  # units per ten reserved for each channel, by name
    units_read: int
    order: Literal["serial", "stored"]
    supersession: bool
    thresholds: Thresholds = field(default_factory=Thresholds)
    stats: Stats = field(default_factory=Stats)
    reasons: tuple[str, ...] = ()
    retrieval: Retrieval | None = None
    schema_version: int = SCHEMA_VERSION

    def units_to_read(self, units: int) -> int:
        """The units a read of U takes. U counts units of the record budget; record-store units
        cut shorter (at the embedder's window: ``rules.unit_size``) are read in proportion, so a
        read keeps the token budget U stands for."""
        if self.branch != "record_store" or not self.unit_budget or self.unit_budget >= self.record_budget:
            return units
        return -(-units * self.record_budget // self.unit_budget)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any) -> Plan:
        if not isinstance(data, dict):
            raise PlanError(f"a plan must be a JSON object, not {type(data).__name__}")
        data = migrated(data)
        _check_keys(cls, data, "plan")
        try:
            values = dict(data)
            values["thresholds"] = _nested(Thresholds, values.get("thresholds", {}), "thresholds")
            values["stats"] = _nested(Stats, values.get("stats", {}), "stats")
            if values.get("retrieval") is not None:
                values["retrieval"] = _nested(Retrieval, values["retrieval"], "retrieval")
            values["floors"] = _floors(values["floors"])
            values["reasons"] = tuple(values.get("reasons", ()))
            plan = cls(**values)
        except (TypeError, KeyError) as exc:
            raise PlanError(f"plan JSON is incomplete or malformed: {exc}") from None
        if plan.branch not in BRANCHES:
            raise PlanError(f"unknown branch {plan.branch!r}; expected one of {', '.join(BRANCHES)}")
        return plan

    @classmethod
    def from_json(cls, text: str) -> Plan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(f"plan is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data)


def migrated(data: dict[str, Any]) -> dict[str, Any]:
    """A plan's JSON object in the current schema: version 1's floors list becomes floors by
    channel name. Raises PlanError for a version this library cannot read."""
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise PlanError(
            f"plan schema_version {version!r} is not supported "
            f"(this library reads {', '.join(map(str, READABLE_VERSIONS))})"
        )
    if version == SCHEMA_VERSION:
        return data
    floors = data.get("floors")
    if isinstance(floors, list):
        if len(floors) != len(V1_FLOOR_CHANNELS):
            raise PlanError("a version-1 plan's floors list three numbers: dense, BM25, graph")
        floors = dict(zip(V1_FLOOR_CHANNELS, floors, strict=True))
    return {**data, "floors": floors, "schema_version": SCHEMA_VERSION}


def _floors(value: Any) -> dict[str, int]:
    """Floors by channel name, over every registered channel in order (one not named: 0)."""
    if not isinstance(value, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value.values()
    ):
        raise PlanError('floors must map channel names to whole numbers, e.g. {"dense": 4, "bm25": 3}')
    try:
        return by_channel(value)
    except InputError as exc:
        raise PlanError(f"plan floors: {exc}") from None


def _check_keys(cls: type, data: dict[str, Any], what: str) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise PlanError(f"{what} has unknown keys: {', '.join(unknown)}")


def _nested(cls: type, data: Any, what: str) -> Any:
    if not isinstance(data, dict):
        raise PlanError(f"plan.{what} must be an object")
    _check_keys(cls, data, f"plan.{what}")
    return cls(**data)
