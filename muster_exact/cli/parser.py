"""The ``muster`` command line: every subcommand, its options and help, in one parser."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from muster_exact.cli.checking import _cmd_verify_contexts, _cmd_verify_cuts
from muster_exact.cli.managing import _cmd_export, _cmd_import, _cmd_list, _cmd_update
from muster_exact.cli.reading import _cmd_derive, _cmd_fetch, _cmd_presets, _cmd_query
from muster_exact.cli.serving import _cmd_http, _cmd_mcp
from muster_exact.cli.writing import ERASE_PENDING_EXIT, _cmd_add, _cmd_forget, _cmd_info
from muster_exact.core.version import __version__
from muster_exact.derive.plan import MODES
from muster_exact.store.dump import DEFAULT_PAGE

STORE = "the store file or postgresql:// URL"  # what --store names
STORE_ENV = "MUSTER_STORE"  # --store's default: a URL with a password stays off the command line


def _store_option(p: argparse.ArgumentParser, store_help: str = STORE, *, required: bool = True) -> None:
    """``--store``, by default ``$MUSTER_STORE`` (:func:`muster_exact.cli.store_from_env` reads it
    when the command runs, so a missing store is one error naming both)."""
    p.add_argument("--store", help=f"{store_help} (default: ${STORE_ENV})")
    p.set_defaults(store_required=required)


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


def _store_options(p: argparse.ArgumentParser, store_help: str) -> None:
    _store_option(p, store_help)
    p.add_argument("--namespace", default="default")
    p.set_defaults(preset=None, models=None)


def _quiet_option(p: argparse.ArgumentParser, default: Any = argparse.SUPPRESS) -> None:
    """``-q``: before the command (``muster -q query ...``) or after it, where long work is shown
    (a subcommand's copy leaves the value alone unless given: SUPPRESS)."""
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="no progress on stderr for long work (an embedding's estimate, then a bar on a terminal, "
        "else a line per tenth or per 30 s)",
    )


class _Parser(argparse.ArgumentParser):
    """argparse, its mistakes said as every other CLI error is: one line, exit 2 (argparse prints
    its usage first, 4 to 6 lines); ``--help`` still shows the whole usage. Subcommands' parsers
    are made of this class too (argparse makes them of the parent's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="muster", description="MUSTER: long-term memory that keeps every word.")
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
    p.add_argument("--mode", choices=MODES, default="native")
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
    _store_option(
        p,
        f"read from this MUSTER store ({STORE}) instead of FILE; ${STORE_ENV} when only "
        "the question is given",
        required=False,
    )
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
    p.add_argument("--mode", choices=MODES, help="default: exact with a preset, else native")
    p.add_argument(
        "--where",
        metavar="JSON",
        help='with --store: only records that match are candidates, e.g. \'{"speaker": "Caroline", '
        '"time": {"from": "2023-05-01"}, "metadata": {"source": "email"}}\'',
    )
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
    _store_option(p, f"{STORE} (created when missing)")
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
    _store_option(p, f"{STORE} (never created)")
    p.add_argument("--namespace", default="default")
    which = p.add_argument_group("what to delete: --id, --request-id, or both (checked by the library)")
    which.add_argument("--id", action="append", metavar="ID", help="a record id (repeatable)")
    which.add_argument(
        "--request-id",
        metavar="R",
        help="alone: every record the add with this request id added; with --id: this delete's own "
        "id, so a retry whose answer was lost is answered as done",
    )
    p.add_argument("--preset", help="the preset reads use (it shapes which cached units stay)")
    _models_option(p, "reads use (its tokenizer keys the cached vectors)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_cmd_forget)

    p = commands.add_parser(
        "update",
        help="change one record in place (same id, same place); its old text is erased as forget erases",
        description="Change the fields given (TEXT, --speaker, --time, --metadata; --remove drops one) "
        "and keep the record's others, or replace the whole record with --record JSON. Exit 0: done; "
        f"{ERASE_PENDING_EXIT}: updated, but another connection's read keeps the old text on disk "
        "until the store's next open or write; 2: refused.",
    )
    p.add_argument("id", metavar="ID", help="the record's id (muster list shows them)")
    p.add_argument("text", nargs="?", metavar="TEXT", help="the new text (the other fields are kept)")
    p.add_argument("--speaker", help="the new speaker")
    p.add_argument("--time", help="the new time")
    p.add_argument(
        "--metadata", metavar="JSON", help="any JSON value; an object merges into the stored one key by key"
    )
    p.add_argument(
        "--remove",
        action="append",
        choices=("speaker", "time", "metadata"),
        metavar="FIELD",
        help="drop this field: speaker, time or metadata (repeatable)",
    )
    p.add_argument(
        "--record",
        metavar="JSON",
        help='the whole record, replacing every field: {"text": ..., "speaker": ...} (what it leaves out '
        "is gone)",
    )
    _store_options(p, f"{STORE} (never created)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_cmd_update)

    p = commands.add_parser("list", help="a page of a namespace's records, in the order they were added")
    _store_options(p, f"{STORE} (never created)")
    p.add_argument(
        "--limit", type=int, default=DEFAULT_PAGE, help=f"records on the page (default: {DEFAULT_PAGE})"
    )
    p.add_argument("--offset", type=int, default=0, help="records to skip first (default: 0)")
    p.add_argument(
        "--json", action="store_true", help="one export line per record (id, fields, metadata, request id)"
    )
    p.set_defaults(run=_cmd_list, preset=None, models=None)

    p = commands.add_parser(
        "export", help="every record of a store as JSON lines (stdout), for muster import or a backup"
    )
    _store_option(p, f"{STORE} (never created)")
    p.add_argument("--namespace", help="only this namespace (default: every namespace of the file)")
    p.set_defaults(run=_cmd_export, preset=None, models=None)

    p = commands.add_parser(
        "import",
        help="add the records of a muster export; importing the same dump twice adds nothing",
        description="Each line goes to its own namespace; a record already there as in the dump is "
        "skipped; an id held with another record refuses the whole import (nothing is written).",
    )
    p.add_argument("file", nargs="?", default="-", help="the dump (JSON lines); - for stdin")
    _store_option(p, f"{STORE} (created when missing)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _input_limit_option(p)
    p.set_defaults(run=_cmd_import, namespace="default", preset=None, models=None)

    p = commands.add_parser("info", help="a store's namespaces, head and plan")
    _store_option(p)
    p.add_argument("--namespace", default="default")
    p.add_argument("--preset", help="the preset reads use (it shapes the plan)")
    _models_option(p, "reads use")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_cmd_info)

    from muster_exact.core.limits import DEFAULT_MAX_BODY
    from muster_exact.serve.backend import DEFAULT_MAX_OPEN, TOKEN_ENV
    from muster_exact.serve.budget import (
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_MAX_CONNECTIONS,
        FDS_PER_NAMESPACE,
    )

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
        _store_option(p, f"{STORE} (created when missing)")
        p.add_argument("--namespace", default="default", help="the namespace calls use unless they name one")
        p.add_argument("--preset", help="a frozen preset for reads (default: native mode)")
        _models_option(p, "for reads")
        p.add_argument(
            "--max-open-namespaces",
            type=int,
            metavar="N",
            help="namespaces open at once, the least recently used closed first (each holds about "
            f"{FDS_PER_NAMESPACE} file descriptors; default: what ulimit -n leaves room for, at most "
            f"{DEFAULT_MAX_OPEN}; a number that does not fit is refused)",
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
                "--max-body",
                type=int,
                default=DEFAULT_MAX_BODY,
                metavar="BYTES",
                help=f"request body limit in bytes (default: {DEFAULT_MAX_BODY // 2**20} MiB)",
            )
            p.add_argument(
                "--max-connections",
                type=int,
                metavar="N",
                help="connections open at once; a new one closes the one that has waited longest on its "
                "client, else gets 503 (default: what ulimit -n leaves room for, at most "
                f"{DEFAULT_MAX_CONNECTIONS})",
            )
            p.add_argument(
                "--header-timeout",
                type=float,
                default=DEFAULT_HEADER_TIMEOUT,
                metavar="SECONDS",
                help=f"a request head not in after this is 408 (default: {DEFAULT_HEADER_TIMEOUT:g})",
            )
            p.add_argument(
                "--body-timeout",
                type=float,
                default=DEFAULT_BODY_TIMEOUT,
                metavar="SECONDS",
                help="a request body not in this long after its head is 408 (default: "
                f"{DEFAULT_BODY_TIMEOUT:g})",
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

    p = commands.add_parser(
        "fetch",
        help="prepare offline resources: the cl100k_base tokenizer file (the sentence splitter is "
        "rules in the library and needs no file)",
    )
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
