"""Progress: shown only when asked for, on stderr only, a bar on a terminal and plain lines
elsewhere; the blocks it computes in give what one call gives."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from muster_exact.cache.memo import Memo
from muster_exact.channels.bm25 import BM25Channel
from muster_exact.core import progress
from muster_exact.text import tokens
from muster_exact.verify.corpora import find_stores

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

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
from muster_exact.core import progress
from muster_exact.cache.memo import Memo
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


# One line of the form a log gets: count, share, rate and (until the end) the time left.
LINE = re.compile(
    r"(?P<desc>.+): (?P<done>\d+)/(?P<total>\d+) (?P<unit>\S+) \(\d+%\), [\d.]+ (?P=unit)/s(, ETA \S+)?"
)


def test_a_bar_is_drawn_on_a_terminal_when_asked_for_and_never_otherwise() -> None:
    drawn = _stderr_of("on", terminal=True)
    assert "tokens:" in drawn and "/6000" in drawn and "\r" in drawn  # redrawn in place
    assert _stderr_of("off", terminal=True) == ""
    assert _stderr_of("off", terminal=False) == ""


def test_on_a_pipe_or_a_log_progress_is_a_few_plain_lines() -> None:
    logged = _stderr_of("on", terminal=False)
    assert "\r" not in logged and "\x1b" not in logged  # no redrawing, no terminal codes
    lines = logged.splitlines()
    # The memo counts 6000 texts in blocks of 2000: a line at each tenth crossed, and no more.
    assert [LINE.fullmatch(line)["done"] for line in lines] == ["2000", "4000", "6000"], logged  # type: ignore[index]
    assert "ETA" in lines[0] and lines[-1].startswith("tokens: 6000/6000 texts (100%), ")


def test_lines_at_each_tenth_and_where_it_stopped(capsys) -> None:
    with progress.shown(True):
        counted = progress.bar(25, "locomo muster", "q", shown_from=1, initial=5)
    for _ in range(12):
        counted.update()
    counted.close()  # stopped at 17 of 25, between two tenths: one more line says where
    out, err = capsys.readouterr()
    assert out == ""  # stdout is the user's: never progress
    done = [int(LINE.fullmatch(line)["done"]) for line in err.splitlines()]  # type: ignore[index]
    assert done == [8, 10, 13, 15, 17]  # the tenths 3, 4, 5, 6 (from 2, the resumed ones), then 17
    assert all(line.startswith("locomo muster: ") for line in err.splitlines())


def test_nothing_unless_asked_and_a_step_says_when_it_starts_and_ends(capsys) -> None:
    progress.bar(100, "x", shown_from=1).update(100)
    with progress.step("embed (m)", 500, "pieces"):
        pass
    assert capsys.readouterr() == ("", "")
    with progress.shown(True):
        with progress.step("embed (m)", progress.STEP_FROM - 1, "pieces"):  # too small to say
            pass
        with progress.step("embed (m)", 500, "pieces"):
            pass
    out, err = capsys.readouterr()
    assert out == ""
    started, ended = err.splitlines()
    assert started == "embed (m): 500 pieces ..."
    assert re.fullmatch(r"embed \(m\): 500 pieces in \d+:\d\d, [\d.]+ pieces/s", ended)
    assert progress.clock(3725) == "1:02:05" and progress.clock(65) == "1:05" and progress.clock(None) == "?"
