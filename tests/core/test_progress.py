"""Progress: shown only when asked for, on stderr only, a bar on a terminal and plain lines
elsewhere (at each tenth or every 30 s, whichever comes first: proved on a clock moved by hand);
an embedding's estimate comes before its first line; the blocks it computes in give what one
call gives."""

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


class Clock:
    """A clock a test moves by hand: the time rules are proved without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _at(clock: Clock, shown: progress.Progress, steps: list[tuple[float, int]]) -> None:
    for seconds, n in steps:
        clock.now = seconds
        shown.update(n)


def test_lines_at_each_tenth_or_every_30_s_whichever_comes_first(capsys) -> None:
    clock = Clock()
    lines = progress.Lines(1000, "x", "q", now=clock)
    assert lines.every == progress.EVERY_S == 30
    # 100 at 12 s: a tenth. 120 at 42 s: 30 s since the last line. 200 at 60 s: a tenth, though
    # only 18 s later. 210 at 95 s: 35 s since the last line.
    _at(clock, lines, [(10, 50), (12, 50), (41, 10), (42, 10), (50, 10), (60, 70), (89, 5), (95, 5)])
    err = capsys.readouterr().err.splitlines()
    assert [int(LINE.fullmatch(line)["done"]) for line in err] == [100, 120, 200, 210]  # type: ignore[index]
    assert err[1] == "x: 120/1000 q (12%), 2.9 q/s, ETA 5:08"  # 120 in 42 s; 880 left at that rate


def test_the_interval_is_a_parameter(capsys) -> None:
    clock = Clock()
    lines = progress.Lines(1000, "x", "q", now=clock, every=5)
    _at(clock, lines, [(4, 1), (5, 1), (9, 1), (10, 1)])
    done = [int(LINE.fullmatch(line)["done"]) for line in capsys.readouterr().err.splitlines()]  # type: ignore[index]
    assert done == [2, 4]  # at 5 s and at 10 s


def test_an_embedding_says_its_estimate_before_its_first_line(capsys) -> None:
    clock = Clock()
    with progress.shown(True):
        shown = progress.embedding(1000, now=clock)
    assert isinstance(progress.embedding(1000), progress.Silent)  # not asked for
    # The sample ends at 5% of the pieces (50, at 2 s: 25 pieces/s); then a line at each tenth.
    _at(clock, shown, [(0.5, 10), (1.0, 10), (2.0, 30), (4.0, 50), (6.0, 50), (8.0, 50)])
    shown.close()
    estimate, *lines = capsys.readouterr().err.splitlines()
    assert estimate == (
        "embedding 1,000 pieces: about 40 s on this machine (measured 25.0 pieces/s on the first 50)"
    )
    assert lines == [
        "embedding: 100/1000 pieces (10%), 25.0 pieces/s, ETA 0:36",
        "embedding: 200/1000 pieces (20%), 25.0 pieces/s, ETA 0:32",
    ]


def test_a_long_embedding_is_estimated_after_its_first_seconds(capsys) -> None:
    clock = Clock()
    with progress.shown(True):
        shown = progress.embedding(1_000_000, now=clock)
        quick = progress.embedding(300, now=clock)
    _at(clock, shown, [(1.0, 100), (progress.SAMPLE_S, 100)])
    quick.update(300)  # over within its sample: nothing to estimate
    quick.close()
    assert capsys.readouterr().err.splitlines() == [
        "embedding 1,000,000 pieces: about 2 h 47 min on this machine "
        "(measured 100.0 pieces/s on the first 200)"
    ]


def test_a_small_slow_embedding_is_estimated_by_time_not_by_count(capsys) -> None:
    clock = Clock()
    small = progress.STEP_FROM - 1
    with progress.shown(True):
        shown = progress.embedding(small, now=clock)
    # Its 5% is one pass: no estimate then, only once it has worked for SAMPLE_S.
    _at(clock, shown, [(0.5, 10), (1.5, 10), (progress.SAMPLE_S, 10)])
    shown.close()
    assert capsys.readouterr().err.splitlines()[0] == (
        f"embedding {small} pieces: about 13 s on this machine (measured 15.0 pieces/s on the first 30)"
    )


def test_a_slow_small_step_and_slow_work_say_so_after_the_heartbeat(capsys) -> None:
    import time

    with progress.shown(True):
        with progress.step("embed (m)", 3, "pieces"):  # quick and small: nothing
            pass
        with progress.working("building a memory", after=0.05):  # quick: nothing
            pass
        with (
            progress.working("building a memory", after=0.05),
            progress.working("inner work", after=0.01),  # the outer one speaks for it
        ):
            time.sleep(0.2)
        with progress.step("embed (m)", 3, "pieces", shown_from=200):
            pass
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "building a memory ..."
    assert re.fullmatch(r"building a memory: done in 0:00", err[1])
    assert len(err) == 2


def test_work_not_shown_says_so_in_the_log(caplog) -> None:
    import logging
    import time

    with (
        caplog.at_level(logging.INFO, logger="muster_exact.core.progress"),
        progress.working("reading s.muster: its memory of 9 records", after=0.05),
    ):
        time.sleep(0.2)
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "reading s.muster: its memory of 9 records ..."
    assert said[1].startswith("reading s.muster: its memory of 9 records: done in ")


def test_a_spread_order_takes_a_fair_share_of_every_part_first() -> None:
    for count in (0, 1, 7, 105, 1000):
        assert sorted(progress.spread(count)) == list(range(count))
    first_tenth = progress.spread(1000)[:100]
    assert all(9 <= sum(i // 100 == part for i in first_tenth) <= 11 for part in range(10))
    assert [progress.about(s) for s in (0.2, 40, 59.4, 170, 3600, 7830)] == [
        "about 1 s", "about 40 s", "about 59 s", "about 3 min", "about 1 h", "about 2 h 10 min"
    ]  # fmt: skip
