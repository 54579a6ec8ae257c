"""Files the caches and stores open: made private when new, and switched to the write-ahead log."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path


def created_private(path: Path) -> None:
    """``path`` created empty, readable by its owner only (0600 whatever the umask), unless it is
    there: SQLite gives its write-ahead log and shared-memory files the mode of this file. One
    that is there keeps its mode (the owner chose it); it is never opened here, as closing a
    descriptor would drop the POSIX locks of this process's connections to it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError:
        return  # a folder that cannot be written: SQLite's own open names the problem
    os.chmod(path, 0o600)  # the umask cannot widen 0600, but a default ACL on the folder can


def use_wal(db: sqlite3.Connection, wait_s: float) -> None:
    """Put ``db``'s file in write-ahead-log mode, waiting up to ``wait_s`` for other connections.

    The switch from a rollback journal needs the file to itself, and SQLite gives it up at once,
    without its busy handler (an error, or the old mode answered), while another connection reads
    or switches the same new file: many processes opening one new store or cache together. So it is
    tried again; once one of them has switched, the rest find the file in WAL and change nothing.
    """
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            mode = None
        if mode == "wal":
            return
        if time.monotonic() >= deadline:
            raise sqlite3.OperationalError(
                f"the file stays in journal mode {mode or 'unknown'}: other connections held it "
                f"for {wait_s:g} s; retry when they are done"
            )
        time.sleep(pause)
        pause = min(2 * pause, 0.1)
