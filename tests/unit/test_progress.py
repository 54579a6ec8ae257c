"""Progress bars: shown only when asked for and only on a terminal; the blocks they compute in
give what one call gives."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

from muster_exact import progress, tokens
from muster_exact.channels.bm25 import BM25Channel
from muster_exact.corpora import find_stores
from muster_exact.memo import Memo

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _lines() -> list[str]:
    store = next(s for s in find_stores(DATA) if s.name.endswith("sh_262k"))
    return [line for line in store.source.text.splitlines() if line.strip()]


def test_analyses_under_a_bar_are_the_analyses_of_one_call() -> None:
    lines = _lines()
    assert len(lines) > 3 * progress.CHUNK  # the bar's blocks: more than one
    calls: list[int] = []

    def counted(texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return tokens.count_many(texts)

    with progress.shown(True):
        shown = Memo().many("tokens", lines, counted)
        bm25_shown = BM25Channel(lines, "standard", Memo())
    plain = Memo().many("tokens", lines, tokens.count_many)
    assert len(calls) > 1 and max(calls) <= progress.CHUNK
    assert shown == plain
    query = "Who is the chairperson of Fatah?"
    assert bm25_shown.propose(query, 20) == BM25Channel(lines, "standard", Memo()).propose(query, 20)


SCRIPT = """
import sys
from muster_exact import progress
from muster_exact.memo import Memo
texts = [f"fact {i} about item {i % 97}" for i in range(6_000)]
with progress.shown(sys.argv[1] == "on"):
    Memo().tokens(texts)
"""


def _stderr_of(switch: str, terminal: bool) -> str:
    """What the script writes on stderr, with stderr a terminal (a pty) or a pipe."""
    command = [sys.executable, "-c", SCRIPT, switch]
    if not terminal:
        return subprocess.run(command, capture_output=True, text=True, check=True).stderr
    main, child = pty.openpty()
    # A terminal 100 columns wide (a new pty has 0, into which tqdm fits no bar).
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(command, stderr=child, stdout=subprocess.DEVNULL)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=120) == 0
    os.close(main)
    return b"".join(chunks).decode(errors="replace")


def test_a_bar_is_drawn_on_a_terminal_when_asked_for_and_never_otherwise() -> None:
    drawn = _stderr_of("on", terminal=True)
    assert "tokens:" in drawn and "/6000" in drawn
    assert _stderr_of("off", terminal=True) == ""
    assert _stderr_of("on", terminal=False) == ""  # a pipe or a log file: no bar
