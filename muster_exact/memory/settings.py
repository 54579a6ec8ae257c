"""How a build is set up before any index: the model profile, the retrieval rules of the plan's mode, the
plan itself (``planned``), and the checks on a query and on U."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Literal

from muster_exact.cache.memo import Memo
from muster_exact.channels import pool_size
from muster_exact.channels.graph import POLICIES
from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_QUERY_CHARS, MAX_UNITS
from muster_exact.derive import PROSE_BUDGET, RECORD_BUDGET, Derived, analyse, declared
from muster_exact.derive.cut import Cut
from muster_exact.derive.plan import Mode, Plan, Retrieval
from muster_exact.memory import presets
from muster_exact.models import (
    AUTO,
    MODELS_ENV,
    Models,
    load_window,
    profile,
)
from muster_exact.retrieve.rerank import CROSS_ENCODER
from muster_exact.rules import RULE_NAMES, Rules, for_mode
from muster_exact.text.fields import check_unicode

DEFAULT_MODELS_ENV = MODELS_ENV


def default_models() -> str:
    """$MUSTER_MODELS, else ``auto``: the paper's models where they can run, else cpu-small."""
    return os.environ.get(DEFAULT_MODELS_ENV, AUTO)


def named_models(models: str | Models | None) -> str | Models | None:
    """The models the caller named: ``models``, else $MUSTER_MODELS; None when neither names any
    (``auto`` is naming none: it asks the library to choose)."""
    asked = models or os.environ.get(DEFAULT_MODELS_ENV) or None
    return None if asked == AUTO else asked


def checked_query(query: str) -> str:
    """A question every read takes: a string (None is no question), not blank, at most
    ``MAX_QUERY_CHARS``, valid Unicode (a lone surrogate would reach the tokenizer)."""
    if query is not None and not isinstance(query, str):
        raise InputError(f"query must be a string, not {type(query).__name__}")
    if query is None or not query.strip():
        raise InputError("empty query: ask a question with some text")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(
            f"query is {len(query):,} characters; queries are limited to {MAX_QUERY_CHARS:,} "
            "(put long material in the store, not the query)"
        )
    check_unicode(query, "query")
    return query


def checked_units(units: int) -> int:
    """A read budget U as every surface takes it: a whole number from 1 to ``MAX_UNITS``."""
    if isinstance(units, bool) or not isinstance(units, int) or not 1 <= units <= MAX_UNITS:
        raise InputError(f"units must be a whole number from 1 to {MAX_UNITS}, not {units!r}")
    return units


def planned(
    data: Any,
    preset: str | None = None,
    models: str | Models | None = None,
    *,
    mode: Mode | None = None,
    units: int | None = None,
    policy: Literal["flrs", "flr"] | None = None,
    rules: Rules | None = None,
    memo: Memo | None = None,
) -> tuple[Plan, Cut, Models, dict[str, float]]:
    """What :func:`build` derives before any model runs: the plan (with its retrieval settings),
    the cut, the model profile and the derive timings. Cheap: no model is loaded."""
    plan, derived, chosen_models = _derived(
        data, preset, models, mode=mode, units=units, policy=policy, rules=rules, memo=memo
    )
    return plan, derived.cut, chosen_models, dict(derived.timings)


def _derived(
    data: Any,
    preset: str | None,
    models: str | Models | None,
    *,
    mode: Mode | None,
    units: int | None,
    policy: Literal["flrs", "flr"] | None,
    rules: Rules | None,
    memo: Memo | None,
    ordered: declared.OrderedRecords | None = None,
) -> tuple[Plan, Derived, Models]:
    """:func:`planned`, with the derive result itself (what growing the memory extends);
    ``ordered``: a declared record array, analysed as declared instead of detected."""
    fixed = presets.load(preset) if preset else None
    chosen_models = models_for(preset, models)
    chosen_mode: Mode = mode or ("exact" if fixed else "native")
    chosen_policy = policy or (fixed.policy if fixed else "flrs")
    if chosen_policy not in POLICIES:
        raise InputError(f"unknown graph policy {chosen_policy!r}; use one of {', '.join(POLICIES)}")
    chosen_rules = rules or for_mode(chosen_mode)
    if ordered is not None:
        derived = declared.analyse(ordered, mode=chosen_mode, preset=preset, memo=memo)
    else:
        derived = analyse(
            data,
            mode=chosen_mode,
            record_budget=fixed.record_budget if fixed else RECORD_BUDGET,
            prose_budget=fixed.prose_budget if fixed else PROSE_BUDGET,
            window=unit_window(chosen_models, chosen_rules),
            memo=memo,
        )
    units_read = checked_units(units) if units is not None else (fixed.units_read if fixed else None)
    plan = derived.plan
    units_read = units_read or plan.units_read
    base = Retrieval(
        preset=preset,
        policy=chosen_policy,
        pool=pool_size(plan.units_to_read(units_read)),
        models=chosen_models.name,
        embedder=chosen_models.embedder.id,
        reranker=chosen_models.reranker.id if chosen_models.reranker else None,
        rerank=CROSS_ENCODER,
    )
    retrieval = _with_rules(base, chosen_rules)
    plan = dataclasses.replace(plan, units_read=units_read, retrieval=retrieval)
    return plan, dataclasses.replace(derived, plan=plan), chosen_models


def unit_window(models: Models, rules: Rules) -> int | None:
    """The longest record-store unit the rules allow besides the record budget: the embedder's
    window (its ``max_seq_length``, special tokens included) under ``unit_size="window"``."""
    return load_window(models.embedder).limit if rules.unit_size == "window" else None


def models_for(preset: str | None, models: str | Models | None) -> Models:
    """The model profile a build uses: the models named (``models``, else $MUSTER_MODELS), else
    the preset's (its ``paper`` taken as ``auto`` takes it: :func:`presets.models_of`), else ``auto``."""
    asked = named_models(models)
    if asked is not None:
        return profile(asked)
    return presets.models_of(preset) if preset else profile(AUTO)


def rules_of(plan: Plan) -> Rules:
    """The rules a plan records (a plan from derive alone: its mode's)."""
    if plan.retrieval is None:
        return for_mode(plan.mode)
    return Rules(**{name: getattr(plan.retrieval, name) for name in RULE_NAMES})


def _with_rules(retrieval: Retrieval | None, rules: Rules) -> Retrieval | None:
    if retrieval is None:
        return None
    rerank = retrieval.rerank if retrieval.reranker else rules.fusion
    return dataclasses.replace(retrieval, rerank=rerank, **rules.to_dict())  # type: ignore[arg-type]
