"""The ``muster`` command. Typed library errors become one stderr line and exit 2 here; a closed
stdout ends it quietly (:mod:`muster_exact.core.pipes`)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster_exact import __version__, verify
from muster_exact.core import pipes
from muster_exact.core.errors import InputError, MusterError
from muster_exact.derive import declared, derive
from muster_exact.retrieve.explain import explain, models_line
from muster_exact.retrieve.rerank import describe
from muster_exact.text import tokens

if TYPE_CHECKING:
    from muster_exact.serve.backend import Backend

log = logging.getLogger("muster_exact.cli")


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

    from muster_exact.memory import build, checked_query

    if args.store:
        if args.question is not None:
            raise InputError('with --store, give only the question: muster query --store F "QUESTION"')
        args.question = args.file
    elif args.question is None:
        raise InputError("give a file and a question (muster query FILE QUESTION), or --store F QUESTION")
    # The question is checked before a store is opened or a model loaded: a bad one costs nothing.
    checked_query(args.question)
    if args.store:
        store = _open_store(args)
        store.progress = not args.quiet  # on stderr; stdout is the same either way
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
    if args.explain:
        context, details = reader.explain_query(args.question, units=args.units)
    else:
        context, details = reader.context(args.question, units=args.units), None
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


def _open_store(args: argparse.Namespace, create: bool = False) -> Any:
    """The store a command names; only ``add`` creates a missing one (a read never leaves a file behind)."""
    from muster_exact.store import Store

    preset = getattr(args, "preset", None)
    reembed = getattr(args, "reembed", False)
    return Store.open(
        args.store, args.namespace, preset=preset, models=args.models, create=create, reembed=reembed
    )


def _cmd_add(args: argparse.Namespace) -> int:
    import json

    from muster_exact.store import read_records_file

    stdin = getattr(sys.stdin, "buffer", None)  # bytes: the one input reader decodes them
    records = read_records_file(args.file, stdin, args.max_input_bytes)
    with _open_store(args, create=True) as store:
        result = store.add(records, request_id=args.request_id)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        state = "already applied; nothing written" if result.replayed else "added"
        print(
            f"{result.added} records {state} (namespace {result.head.namespace}: "
            f"{result.head.records} records, head {result.head.sha256[:12]})"
        )
    return 0


ERASE_PENDING_EXIT = 3  # forget: deleted, but the text is on disk until the store's next open or write


def _cmd_forget(args: argparse.Namespace) -> int:
    import json

    from muster_exact.serve.backend import forget_in

    with _open_store(args) as store:  # a forget never creates a store
        result = forget_in(store, args.id, args.request_id)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        head = result["head"]
        print(
            f"{len(result['deleted'])} records deleted (namespace {head['namespace']}: "
            f"{head['records']} records, head {head['sha256'][:12]})"
        )
    if result["erase_pending"]:
        print(
            "muster: erase pending: the records are deleted, but their text stays on disk while another "
            "connection reads; it is erased on the store's next open or write (`muster info` shows it)",
            file=sys.stderr,
        )
        return ERASE_PENDING_EXIT
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    import json

    with _open_store(args) as store:
        head = store.head()
        info = {
            "path": str(store.path),
            "namespaces": store.namespaces(),
            "head": head.to_dict(),
            "read_only": store.read_only,
            "pending_erasures": store.pending_erasures(),
            "plan": store.plan().to_dict() if head.records else None,
            "models": store.read_models().to_dict() if head.records else None,
        }
        if args.json:
            print(json.dumps(info, indent=2, ensure_ascii=False))
            return 0
        access = " (read-only)" if store.read_only else ""
        print(f"store {info['path']}{access}; namespaces: {', '.join(info['namespaces']) or '(none)'}")
        print(f"namespace {head.namespace}: {head.records} records, head {head.sha256}")
        if info["pending_erasures"]:
            print(
                f"erase pending: {info['pending_erasures']} delete(s) whose text is still on disk while "
                "another connection reads; retried on the next open or write"
            )
        if head.records:
            print(store.explain())
            print(models_line(store.read_models()))
    return 0


def _backend(args: argparse.Namespace) -> Backend:
    from muster_exact.serve.backend import Backend

    return Backend(
        args.store,
        namespace=args.namespace,
        preset=args.preset,
        models=args.models,
        max_open=args.max_open_namespaces,
    )


def _load_models(backend: Backend) -> None:
    """A server's models, loaded before it takes requests and said in one line."""
    names, seconds = backend.load_models()
    log.warning("loaded %s in %.2f s, before the first request", names, seconds)


def _cmd_mcp(args: argparse.Namespace) -> int:
    from muster_exact.integrations import require

    require("mcp", "'muster-memory[mcp]'")
    from muster_exact.serve import mcp

    backend = _backend(args)
    try:
        _load_models(backend)
        mcp.serve(backend)
    finally:
        backend.close()
    return 0


def _cmd_http(args: argparse.Namespace) -> int:
    from muster_exact.integrations import require

    require("fastapi", "'muster-memory[http]'")
    from muster_exact.serve import http

    token = http.token_of(args.token)
    sock = http.listen(args.host, args.port)  # a bad or busy port fails here, before the store is opened
    try:
        backend = _backend(args)
        _load_models(backend)
    except BaseException:
        sock.close()
        raise
    # The bound address is a name of this server too (unless it is every address).
    hosts = [*args.allow_host, *([] if args.host in ("0.0.0.0", "::", "") else [args.host])]
    log.warning(
        "serving %s on http://%s:%d (%s)",
        args.store,
        args.host,
        args.port,
        "token required" if token else "no token",
    )
    try:
        http.serve(
            backend,
            sock,
            token,
            args.max_body,
            hosts=hosts,
            origins=args.allow_origin,
            declared_records=args.declared_records,
        )
    finally:
        backend.close()
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
    return 0


def _cmd_verify_cuts(args: argparse.Namespace) -> int:
    manifest_path = Path(args.manifest) if args.manifest else verify.default_manifest()
    manifest = verify.load_manifest(manifest_path)
    verify.require_data_root(Path(args.data))  # an error is one line, before any verdict
    print(f"verify cuts: {args.data} against {manifest_path}")
    print(verify.HEADER)
    failed = total = 0
    for verdict in verify.verify_cuts(Path(args.data), manifest):
        total += 1
        failed += not verdict.ok
        print(verify.format_row(verdict), flush=True)
    print(f"{total - failed} of {total} stores OK" + (f", {failed} FAIL" if failed else ""))
    return 1 if failed else 0


def _cmd_verify_contexts(args: argparse.Namespace) -> int:
    from muster_exact.verify import contexts as verify_contexts

    root = Path(args.manifests) if args.manifests else verify.manifest_dir()
    # Every manifest and the data they need are checked first: an error is one line, before any verdict.
    paths = verify_contexts.manifest_paths(root, args.preset)
    manifests = {path: verify_contexts.load(path) for path in paths}
    verify_contexts.require_data(Path(args.data), {m["benchmark"] for m in manifests.values()})
    failed = False
    for path, manifest in manifests.items():
        result = verify_contexts.check(path, Path(args.data), manifest, progress=not args.quiet)
        ok = not result.differing and not result.missing
        failed |= not ok
        print(
            f"{result.name}: {result.identical} of {result.total} identical" + ("" if ok else "  FAIL"),
            flush=True,
        )
        for qid in result.differing[:10]:
            print(f"  differs: {qid}")
        for qid in result.missing[:10]:
            print(f"  missing from the data: {qid}")
    return 1 if failed else 0


def _models_option(p: argparse.ArgumentParser, what: str = "") -> None:
    from muster_exact.models import AUTO, MODELS_ENV, PROFILES

    p.add_argument(
        "--models",
        metavar="PROFILE|DIR",
        help=f"the models {what or 'retrieval runs'}: {', '.join(PROFILES.names())}, {AUTO} (the paper's "
        "models where they can run, else cpu-small), or a local directory holding a model's files "
        f"(default: ${MODELS_ENV}, else {AUTO})",
    )


def _input_limit_option(p: argparse.ArgumentParser) -> None:
    from muster_exact.core.limits import DEFAULT_MAX_INPUT_BYTES
    from muster_exact.text.records import MAX_INPUT_ENV

    p.add_argument(
        "--max-input-bytes",
        type=int,
        metavar="N",
        help=f"refuse an input file or stdin over N bytes (default: ${MAX_INPUT_ENV}, else "
        f"{DEFAULT_MAX_INPUT_BYTES // 2**20} MiB)",
    )


def _quiet_option(p: argparse.ArgumentParser, default: Any = argparse.SUPPRESS) -> None:
    """``-q``: before the command (``muster -q query ...``) or after it, where long work is shown
    (a subcommand's copy leaves the value alone unless given: SUPPRESS)."""
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="no progress on stderr for long work (a bar on a terminal, else a line per tenth)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="muster", description="MUSTER: long-term memory that keeps every word."
    )
    parser.add_argument("--version", action="version", version=f"muster {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv for debug)")
    _quiet_option(parser, default=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("derive", help="detect a store's structure and print the plan and why")
    p.add_argument(
        "file",
        help="a .txt file, .json/.jsonl records with speaker/time/text, or a .json declared-record "
        'envelope {"format": "serial", "records": [...]}',
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--mode", choices=("native", "exact"), default="native")
    p.add_argument(
        "--models",
        help="the plan a build with this profile (or model folder) uses: in native mode record-store "
        "units no longer than its embedder's window (default: units up to the record budget, no models)",
    )
    _input_limit_option(p)
    p.set_defaults(run=_cmd_derive)

    p = commands.add_parser(
        "query", help="the context for QUESTION from FILE (built now) or from a store (--store F QUESTION)"
    )
    p.add_argument(
        "file",
        metavar="FILE",
        help="a .txt file, .json/.jsonl records or a .json declared-record envelope "
        "(with --store: the question)",
    )
    p.add_argument("question", nargs="?", metavar="QUESTION")
    p.add_argument("--store", help="read from this MUSTER store file instead of FILE")
    p.add_argument("--namespace", default="default", help="the store's namespace (default: default)")
    p.add_argument("--preset", help="a frozen preset, e.g. locomo.u10 (see `muster presets`)")
    _models_option(p)
    p.add_argument(
        "--reembed",
        action="store_true",
        help="with --store: let --models replace the embedder the namespace was built with "
        "(every unit is embedded anew)",
    )
    p.add_argument("--units", type=int, help="read budget U (default: the plan's)")
    p.add_argument("--mode", choices=("native", "exact"), help="default: exact with a preset, else native")
    p.add_argument(
        "--explain", action="store_true", help="add the plan, channel floors, rerank order, reasons"
    )
    p.add_argument("--json", action="store_true", help="print plan and context as JSON")
    _input_limit_option(p)
    _quiet_option(p)
    p.set_defaults(run=_cmd_query)

    p = commands.add_parser("add", help="add records to a store (one transaction; no model is called)")
    p.add_argument(
        "file", nargs="?", default="-", help=".json array, .jsonl, or text (blank-line blocks); - for stdin"
    )
    p.add_argument("--store", required=True, help="the store file (created when missing)")
    p.add_argument("--namespace", default="default")
    p.add_argument("--request-id", help="apply this add once: a retry with the same id writes nothing")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _input_limit_option(p)
    p.set_defaults(run=_cmd_add, models=None)

    p = commands.add_parser(
        "forget",
        help="delete records and every trace of them from a store",
        description="Delete records by id, or every record one add's --request-id added, with their "
        "cached vectors, scores and analyses; returns when their text is gone from every file of the "
        f"store. Exit 0: erased; {ERASE_PENDING_EXIT}: deleted, but another connection's read keeps the "
        "text on disk until the store's next open or write; 2: refused (an id the namespace does not "
        "hold: nothing is deleted).",
    )
    p.add_argument("--store", required=True, help="the store file (never created)")
    p.add_argument("--namespace", default="default")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", action="append", metavar="ID", help="a record id (repeatable)")
    which.add_argument("--request-id", metavar="R", help="every record the add with this request id added")
    p.add_argument("--preset", help="the preset reads use (it shapes which cached units stay)")
    _models_option(p, "reads use (its tokenizer keys the cached vectors)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_cmd_forget)

    p = commands.add_parser("info", help="a store's namespaces, head and plan")
    p.add_argument("--store", required=True)
    p.add_argument("--namespace", default="default")
    p.add_argument("--preset", help="the preset reads use (it shapes the plan)")
    _models_option(p, "reads use")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_cmd_info)

    from muster_exact.core.limits import DEFAULT_MAX_BODY
    from muster_exact.serve.backend import DEFAULT_MAX_OPEN, TOKEN_ENV

    for name, text in (
        ("mcp", "serve a store to MCP clients over stdio"),
        ("http", "serve a store over HTTP"),
    ):
        about = f"{text}." + (
            f" Set ${TOKEN_ENV}=TOKEN to require 'Authorization: Bearer TOKEN' on every route but /healthz."
            if name == "http"
            else ""
        )
        p = commands.add_parser(name, help=text, description=about)
        p.add_argument("--store", required=True, help="the store file (created when missing)")
        p.add_argument("--namespace", default="default", help="the namespace calls use unless they name one")
        p.add_argument("--preset", help="a frozen preset for reads (default: native mode)")
        _models_option(p, "for reads")
        p.add_argument(
            "--max-open-namespaces",
            type=int,
            default=DEFAULT_MAX_OPEN,
            help=f"namespaces open at once; the least recently used is closed (default: {DEFAULT_MAX_OPEN})",
        )
        if name == "http":
            p.add_argument(
                "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)"
            )
            p.add_argument("--port", type=int, default=8765)
            p.add_argument(
                "--token",
                help=f"as ${TOKEN_ENV}, which is better: a command line is visible to every user (ps)",
            )
            p.add_argument(
                "--max-body", type=int, default=DEFAULT_MAX_BODY, help="request body limit in bytes"
            )
            p.add_argument(
                "--allow-host",
                action="append",
                default=[],
                metavar="NAME",
                help="a Host name to answer besides localhost, 127.0.0.1 and [::1] (repeatable)",
            )
            p.add_argument(
                "--allow-origin",
                action="append",
                default=[],
                metavar="ORIGIN",
                help="a web origin (https://app.example) allowed to call from a browser (repeatable)",
            )
            p.add_argument(
                "--declared-records",
                action="store_true",
                help="also serve POST /v1/declared/context: the context of a declared record array "
                '({"format": "serial", "records": [...]}) sent with the query, built in memory, never stored',
            )
        p.set_defaults(run=_cmd_mcp if name == "mcp" else _cmd_http)

    p = commands.add_parser("presets", help="list the frozen presets and what each fixes")
    p.set_defaults(run=_cmd_presets)

    p = commands.add_parser("fetch", help="prepare offline resources (the cl100k_base tokenizer file)")
    p.set_defaults(run=_cmd_fetch)

    p = commands.add_parser("verify", help="check cuts against pinned manifests")
    checks = p.add_subparsers(dest="check", required=True, metavar="CHECK")
    c = checks.add_parser("cuts", help="detection over every benchmark store under --data")
    c.add_argument("--data", required=True, help="benchmark data root (e.g. ../shared/data)")
    c.add_argument("--manifest", help="expected values (default: the package's manifests/cuts.json)")
    c.set_defaults(run=_cmd_verify_cuts)
    c = checks.add_parser("contexts", help="recompute contexts and compare their SHA-256 to the manifests")
    c.add_argument("--data", required=True, help="benchmark data root (e.g. ../shared/data)")
    c.add_argument("--preset", help="only this preset's manifests")
    c.add_argument("--manifests", help="manifest folder (default: the package's manifests/)")
    _quiet_option(c)
    c.set_defaults(run=_cmd_verify_contexts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command, and its one place for errors. A closed stdout (`muster query F Q | head -1`)
    ends it quietly wherever it is met: in a print, or in the flush of what is still buffered,
    done here and not in the interpreter's exit (argparse's --help and --version exit too)."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader has what it wanted
        return pipes.closed_stdout()


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return int(args.run(args))
    except BrokenPipeError:  # not an unreadable file (OSError below): main answers it
        raise
    except MusterError as exc:
        print(f"muster: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # an unreadable file the library did not anticipate
        print(f"muster: error: {InputError(str(exc))}", file=sys.stderr)
        return MusterError.exit_code
    except KeyboardInterrupt:
        print("muster: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
