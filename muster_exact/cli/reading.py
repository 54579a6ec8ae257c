"""``muster derive``, ``muster query`` (with ``--explain``), ``muster presets`` and ``muster fetch``:
reading a file or a store, nothing written."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from muster_exact.cli.writing import _open_store
from muster_exact.core.errors import InputError
from muster_exact.derive import declared, derive
from muster_exact.retrieve.explain import explain, models_line
from muster_exact.retrieve.rerank import describe
from muster_exact.text import tokens


def _cmd_derive(args: argparse.Namespace) -> int:
    data = declared.read_file(Path(args.file), args.max_input_bytes)  # an envelope, or a store file
    if isinstance(data, declared.Envelope):
        plan = declared.analyse(data.ordered(), mode=args.mode).plan
    elif args.models:
        from muster_exact.memory import planned

        # The plan a build with these models derives: in native mode a record store's units are
        # cut no longer than the embedder's window (rules.unit_size); no model is loaded.
        plan = planned(data, models=args.models, mode=args.mode)[0]
    else:
        plan = derive(data, mode=args.mode)
    print(plan.to_json() if args.json else explain(plan))
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    import json

    from muster_exact.memory import build, checked_query, checked_units

    if args.store:
        if args.question is not None:
            raise InputError('with --store, give only the question: muster query --store F "QUESTION"')
        args.question = args.file
    elif args.question is None:
        raise InputError("give a file and a question (muster query FILE QUESTION), or --store F QUESTION")
    # The question is checked before a store is opened or a model loaded: a bad one costs nothing.
    checked_query(args.question)
    if args.units is not None:
        checked_units(args.units)
    where = _where(args)
    if args.store:
        store = _open_store(args)
        store.progress = not args.quiet  # on stderr; stdout is the same either way
        if not store.head().records:  # an empty namespace has an empty context, as everywhere
            context = store.context(args.question, units=args.units, where=where)
            print(json.dumps({"plan": None, "context": context.to_dict()}, indent=2) if args.json else "")
            return 0
        memory = store.memory()
        # Read through the store: a failure of its file is then one typed line like every other.
        reader: Any = store
    else:
        memory = build(
            declared.read_file(Path(args.file), args.max_input_bytes),  # an envelope, or a store file
            preset=args.preset,
            models=args.models,
            mode=args.mode,
            units=args.units,
            progress=not args.quiet,  # on stderr; stdout is the same either way
        )
        reader = memory
    filtered = {} if where is None else {"where": where}  # a store's reads take it
    if args.explain:
        context, details = reader.explain_query(args.question, units=args.units, **filtered)
    else:
        context, details = reader.context(args.question, units=args.units, **filtered), None
    if args.json:
        out = {"plan": memory.plan.to_dict(), "context": context.to_dict()}
        if details is not None:
            out["explain"] = details
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if details is not None:
        print(explain(memory.plan))
        print(models_line(memory.models))
        print(_render_query_explain(details, context.tokens))
        print("--- context ---")
    print(context.text)
    return 0


def _render_query_explain(details: dict, tokens_in_context: int) -> str:  # type: ignore[type-arg]
    lines = [
        f"retrieval: {details['units_read']} units read, "
        f"order by {details['rerank']} ({describe(details['rerank'])})",
        f"graph seeds: {', '.join(details['graph_seeds']) or '(none: the query names no known entity)'}",
    ]
    for channel in details["channels"]:
        shown = ", ".join(map(str, channel["proposals"][:20]))
        more = len(channel["proposals"]) - 20
        lines.append(
            f"  {channel['channel']:<6} floor {channel['floor']:>2}, proposes {len(channel['proposals'])}: "
            f"{shown}{f' (+{more})' if more > 0 else ''}"
        )
    lines.append("rerank order: " + ", ".join(map(str, details["rerank_order"][:30])))
    lines.append(f"kept ({tokens_in_context} tokens):")
    for kept in details["kept"]:
        where = ", ".join(f"{c} #{r}" for c, r in kept["channels"].items())
        shown_as = (
            "" if kept["shown_as"] == kept["unit"] else f", shown as its newest version {kept['shown_as']}"
        )
        lines.append(
            f"  unit {kept['unit']:>5}: {kept['reason']}, rerank #{kept['rerank_rank']}, "
            f"proposed by {where}{shown_as}"
        )
    return "\n".join(lines)


def _cmd_presets(args: argparse.Namespace) -> int:
    from muster_exact.memory import presets

    for name in presets.names():
        preset = presets.load(name)
        print(f"{name:<10} {presets.sha256(name)[:12]}  {preset.describe()}")
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    path = tokens.prepare()
    print(f"{tokens.ENCODING_NAME}: {path} (SHA-256 {tokens.CL100K_SHA256})")
    print(f"plain tiktoken can use it offline with TIKTOKEN_CACHE_DIR={path.parent}")
    # The seed README names "tokenizer and sentence-splitter files": the splitter is rules in the
    # code (muster_exact.text.sentences), so there is no file to fetch, and the user is told so.
    print("sentence splitter: rules in the library (muster_exact.text.sentences), no file to fetch")
    return 0


def _where(args: argparse.Namespace) -> Any:
    """``--where JSON``, checked before anything is opened (a read of a store only: a filter
    reads the records' speaker, time and metadata)."""
    if args.where is None:
        return None
    if not args.store:
        raise InputError("--where filters a store's records: muster query --store F QUESTION --where JSON")
    import json

    from muster_exact.store.where import checked_where

    try:
        where = json.loads(args.where)
    except ValueError:
        raise InputError('--where is not JSON; e.g. --where \'{"speaker": "Caroline"}\'') from None
    checked_where(where)
    return where
