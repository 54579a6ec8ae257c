"""The ``muster`` command. Typed library errors become one stderr line and exit 2 here; a closed
stdout ends it quietly (:mod:`muster_exact.core.pipes`).

:mod:`.parser` holds every subcommand and option; the commands are :mod:`.reading` (derive, query,
presets, fetch), :mod:`.writing` (add, forget, info), :mod:`.serving` (mcp, http) and
:mod:`.checking` (verify).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from muster_exact.cli.parser import build_parser
from muster_exact.core import pipes
from muster_exact.core.errors import InputError, MusterError

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
