"""The ``muster`` command. Typed library errors become one stderr line and exit 2 here, the
library's :class:`ModelFallbackWarning` one ``muster: warning:`` line; a closed stdout ends it
quietly (:mod:`muster_exact.core.pipes`).

:mod:`.parser` holds every subcommand and option; the commands are :mod:`.reading` (derive, query,
presets, fetch), :mod:`.writing` (add, forget, info), :mod:`.serving` (mcp, http) and
:mod:`.checking` (verify).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from muster_exact.cli.parser import STORE_ENV, build_parser
from muster_exact.core import pipes
from muster_exact.core.errors import InputError, ModelFallbackWarning, MusterError

log = logging.getLogger("muster_exact.cli")


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
    with warnings.catch_warnings():  # restores Python's own display when the command returns
        warnings.showwarning = _one_line(warnings.showwarning)
        return _command(args)


def _command(args: argparse.Namespace) -> int:
    try:
        store_from_env(args)
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


def store_from_env(args: argparse.Namespace) -> None:
    """``--store``'s default, ``$MUSTER_STORE``: a PostgreSQL URL with a password given there never
    reaches a command line (``ps`` shows command lines to every user). ``muster query`` reads the
    variable's store only when given the question alone (``muster query "QUESTION"``); with a FILE
    and a question it reads the file, as without the variable."""
    if "store_required" not in args or args.store is not None:
        return
    store = os.environ.get(STORE_ENV, "").strip()
    if args.store_required:
        if not store:
            raise InputError(
                f"no store given: pass --store (a file or a postgresql:// URL), or set {STORE_ENV} "
                "(which keeps a URL's password off the command line)"
            )
        args.store = store
    elif store and args.question is None:
        args.store = store


def _one_line(python_s: Callable[..., None]) -> Callable[..., None]:
    """The library's warning as the CLI says everything, one line on stderr (Python's own display
    adds the file, the line number and the source line); any other warning as Python shows it."""

    def show(message: Warning | str, category: type[Warning], *where: Any) -> None:
        if issubclass(category, ModelFallbackWarning):
            print(f"muster: warning: {message}", file=sys.stderr)
        else:
            python_s(message, category, *where)

    return show


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
