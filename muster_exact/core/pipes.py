"""A closed stdout ends a command quietly: ``muster query F Q | head -1`` prints no "Broken pipe".

When the reader of a pipe exits before the writer is done, the next write raises
BrokenPipeError (Python ignores SIGPIPE). The command has nobody left to tell, so it stops
there: no message, no traceback, and the exit status a C tool stopped by SIGPIPE shows
in the shell (128 + 13), which `set -o pipefail` sees as it sees `yes | head -1`.
"""

from __future__ import annotations

import os
import sys

EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE


def closed_stdout() -> int:
    """Point stdout at /dev/null and give the exit status for a closed pipe.

    What Python's documentation recommends (the "Note on SIGPIPE" in the signal module):
    the interpreter flushes stdout once more at exit, and what is still buffered would raise
    again, as "Exception ignored ... BrokenPipeError", unless that flush writes nowhere.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object with no file
        pass
    return EXIT_CLOSED_PIPE
