"""The ``muster`` command. Typed library errors become one stderr line and exit 2 here."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from muster_exact import __version__, tokens, verify
from muster_exact.derive import derive
from muster_exact.errors import InputError, MusterError
from muster_exact.explain import explain
from muster_exact.records import read_file

log = logging.getLogger("muster_exact.cli")


def _cmd_derive(args: argparse.Namespace) -> int:
    path = Path(args.file)
    plan = derive(read_file(path), mode=args.mode)
    print(plan.to_json() if args.json else explain(plan))
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    path = tokens.prepare()
    print(f"{tokens.ENCODING_NAME}: {path} (SHA-256 {tokens.CL100K_SHA256})")
    print(f"plain tiktoken can use it offline with TIKTOKEN_CACHE_DIR={path.parent}")
    return 0


def _cmd_verify_cuts(args: argparse.Namespace) -> int:
    manifest_path = Path(args.manifest) if args.manifest else verify.default_manifest()
    manifest = verify.load_manifest(manifest_path)
    print(f"verify cuts: {args.data} against {manifest_path}")
    print(verify.HEADER)
    failed = total = 0
    for verdict in verify.verify_cuts(Path(args.data), manifest):
        total += 1
        failed += not verdict.ok
        print(verify.format_row(verdict), flush=True)
    print(f"{total - failed} of {total} stores OK" + (f", {failed} FAIL" if failed else ""))
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="muster", description="MUSTER: long-term memory that keeps every word."
    )
    parser.add_argument("--version", action="version", version=f"muster {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv for debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("derive", help="detect a store's structure and print the plan and why")
    p.add_argument("file", help="a .txt file, or .json/.jsonl records with speaker/time/text")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--mode", choices=("native", "exact"), default="native")
    p.set_defaults(run=_cmd_derive)

    p = commands.add_parser("fetch", help="prepare offline resources (the cl100k_base tokenizer file)")
    p.set_defaults(run=_cmd_fetch)

    p = commands.add_parser("verify", help="check cuts against pinned manifests")
    checks = p.add_subparsers(dest="check", required=True, metavar="CHECK")
    c = checks.add_parser("cuts", help="detection over every benchmark store under --data")
    c.add_argument("--data", required=True, help="benchmark data root (e.g. ../shared/data)")
    c.add_argument("--manifest", help="expected values (default: manifests/cuts.json)")
    c.set_defaults(run=_cmd_verify_cuts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return int(args.run(args))
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
