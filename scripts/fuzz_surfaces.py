"""``make fuzz``'s campaigns for one rule on every surface: lone surrogates and bytes that are not
UTF-8 on the CLI and in the library, the exact types and fields of the HTTP schema (and the same
unknown field on MCP, the CLI and the library), and the caps (``units``, a record's size) on the
library, the CLI, HTTP and MCP.

Each input is refused once, cleanly (a typed ``InputError``; a 422 over HTTP; one line and exit 2 on
the CLI; no traceback anywhere), with the library's own words on every surface, quickly (a 20 MB
record is refused before any model runs), and nothing is written by what was refused.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
from fuzz_common import (
    AUTH,
    DEADLINE_S,
    RawMCP,
    Tally,
    add_bytes,
    library,
    muster,
    ran,
    start_http,
    stop,
    stored_records,
)

from muster_exact.core.limits import MAX_RECORD_CHARS, MAX_UNITS
from muster_exact.store import Store

JSON_HEADERS = {**AUTH, "Content-Type": "application/json"}
UNITS_SAY = f"units must be a whole number from 1 to {MAX_UNITS}"  # the library's words
SIZE_SAY = f"a record holds at most {MAX_RECORD_CHARS:,}"
CAP_SECONDS = 30.0  # a refusal slower than this is work started before the check
RECORDS = [f"note {k}: the orchard by the river gave {k * 3} crates of pears this year" for k in range(12)]


def _seeded(store: Path, tally: Tally) -> None:
    with Store.open(store) as opened:
        opened.add(RECORDS)
    tally.acknowledged += len(RECORDS)


def _http(
    tally: Tally, url: str, path: str, body: Any, *, status: int = 422, says: tuple[str, ...] = ()
) -> str:
    """POST ``body`` (bytes as they are, else JSON) and check the answer is ``status``; its text."""
    what = f"POST {path} {body if isinstance(body, bytes) else add_bytes(body)!r}"[:200]
    started = time.monotonic()
    try:
        reply = httpx.post(
            f"{url}{path}",
            content=body if isinstance(body, bytes) else add_bytes(body),
            headers=JSON_HEADERS,
            timeout=DEADLINE_S,
        )
    except httpx.HTTPError as exc:
        tally.unanswered.append(f"{what}: {type(exc).__name__}")
        return ""
    tally.saw(reply.status_code, f"{what}: {reply.text[:160]}")
    if reply.status_code == 200 and path == "/v1/add" and not reply.json()["replayed"]:
        tally.acknowledged += reply.json()["added"]
    if reply.status_code == 200 and path == "/v1/delete":
        tally.acknowledged -= len(reply.json()["deleted"])
    if reply.status_code != status:
        tally.problems.append(f"{what}: {reply.status_code}, not {status}: {reply.text[:160]}")
    missing = [s for s in says if s not in reply.text]
    if missing:
        tally.problems.append(f"{what}: the answer does not say {missing}: {reply.text[:200]}")
    if time.monotonic() - started > CAP_SECONDS:
        tally.problems.append(f"{what}: answered in {time.monotonic() - started:.0f} s")
    return reply.text


def _mcp(tally: Tally, mcp: RawMCP, tool: str, arguments: dict[str, Any], says: tuple[str, ...]) -> None:
    """A tool call that must be refused, its message saying each of ``says``."""
    what = f"MCP {tool} {add_bytes(arguments)[:120]!r}"
    started = time.monotonic()
    reply = mcp.request("tools/call", {"name": tool, "arguments": arguments})
    if reply is None:
        tally.unanswered.append(what)
        return
    result = reply.get("result", {})
    failed = "error" in reply or result.get("isError", False)
    tally.saw(400 if failed else 200, what)
    said = reply["error"].get("message", "") if "error" in reply else json.dumps(result.get("content", ""))
    if not failed:
        tally.problems.append(f"{what}: accepted")
    missing = [s for s in says if s not in said]
    if failed and missing:
        tally.problems.append(f"{what}: the answer does not say {missing}: {said[:200]}")
    if time.monotonic() - started > CAP_SECONDS:
        tally.problems.append(f"{what}: answered in {time.monotonic() - started:.0f} s")


def _timed(tally: Tally, what: str, run: Any, **check: Any) -> None:
    """A CLI or library run that must be refused within ``CAP_SECONDS``."""
    started = time.monotonic()
    ran(tally, what, run(), refused=True, one_line=True, **check)
    took = time.monotonic() - started
    tally.seconds = max(tally.seconds, took)  # the slowest refusal, until the campaign's own time
    if took > CAP_SECONDS:
        tally.problems.append(f"{what}: refused after {took:.0f} s (bound {CAP_SECONDS:.0f} s)")


# --- lone surrogates and bytes that are not UTF-8 ------------------------------------------------


def fuzz_surrogates(tmp: Path, examples: int) -> Tally:
    tally = Tally("lone surrogates and non-UTF-8 (CLI, library)")
    start = time.monotonic()
    store = tmp / "surrogates.muster"
    _seeded(store, tally)
    records = tmp / "surrogate.json"
    records.write_bytes(b'["the orchard by the river", "pears \\ud800 alone"]')
    plain = tmp / "plain.txt"
    plain.write_text("\n\n".join(RECORDS))
    for what, args, stdin in (
        ("muster query --store S 'hello \\xff'", ("query", "--store", str(store), b"hello \xff"), None),
        ("muster query FILE 'hello \\xff'", ("query", str(plain), b"hello \xff"), None),
        ("muster query FILE.json (a \\ud800 escape)", ("query", str(records), "pears"), None),
        ("muster add --store S - (byte 0xe9)", ("add", "--store", str(store), "-"), b"caf\xe9 au lait\n"),
        ("muster add --store S FILE.json (\\ud800)", ("add", "--store", str(store), str(records)), None),
        (
            "muster add --namespace '\\xff'",
            ("add", "--store", str(store), "--namespace", b"\xff", "-"),
            b"x\n",
        ),
    ):
        ran(tally, what, muster(*args, stdin=stdin), refused=True, one_line=True)
    opened = f"from muster_exact.store import Store\nstore = Store.open({str(store)!r})"
    for what, body in (
        (
            "muster_exact.build(['hello \\udcff'])",
            "import muster_exact\nmuster_exact.build(['hello \\udcff'])",
        ),
        (
            "Memory.context('hello \\udcff')",
            "import muster_exact\nmuster_exact.build(['the orchard']).context('hello \\udcff')",
        ),
        ("Store.context('hello \\udcff')", f"{opened}\nstore.context('hello \\udcff')"),
        ("Store.add(['hello \\udcff'])", f"{opened}\nstore.add(['hello \\udcff'])"),
        (
            "Store.open(namespace='\\udcff')",
            f"from muster_exact.store import Store\nStore.open({str(store)!r}, '\\udcff')",
        ),
    ):
        ran(tally, what, library(body), refused=True, says=("InputError",), one_line=True)
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


# --- the schema's exact types, and unknown fields -------------------------------------------------


def fuzz_schema_types(tmp: Path, examples: int) -> Tally:
    tally = Tally("schema-exact types and unknown fields (HTTP, MCP, CLI, library)")
    start = time.monotonic()
    store = tmp / "types.muster"
    _seeded(store, tally)  # ids r1 .. r12
    process, url = start_http(store)
    try:
        for path, body, says in (
            ("/v1/delete", {"ids": "r1"}, ("ids",)),
            ("/v1/delete", {"ids": [["r1"]]}, ()),
            ("/v1/delete", {"ids": ["r1"], "namespace": 5}, ("namespace",)),
            ("/v1/add", {"records": [{"text": "a", "speaker": True}]}, ("speaker",)),
            ("/v1/add", {"records": [{"text": "a", "time": True}]}, ("time",)),
            ("/v1/add", {"records": [{"text": "a", "time": {"at": 1}}]}, ("time",)),
            ("/v1/add", {"records": [{"text": 5}]}, ("text",)),
            ("/v1/add", {"records": "one record"}, ("records",)),
            ("/v1/add", {"records": ["a"], "namespace": 7}, ("namespace",)),
            ("/v1/add", {"records": [{"text": "a", "speakr": "ann"}]}, ("speakr",)),
            ("/v1/add", {"records": ["a"], "namespce": "b"}, ("namespce",)),
            ("/v1/add", b'{"records": [{"text": "a", "time": NaN}]}', ("time",)),
            ("/v1/context", {"query": "pears", "units": "5"}, ("units",)),
            ("/v1/context", {"query": "pears", "units": True}, ("units",)),
            ("/v1/context", {"query": "pears", "units": 2.5}, ("units",)),
            ("/v1/context", {"query": 5}, ("query",)),
            ("/v1/context", {"query": ["pears"]}, ("query",)),
            ("/v1/context", {"query": "pears", "unitz": 3}, ("unitz",)),
            ("/v1/search", {"query": "pears", "where": {"speakr": "ann"}}, ("speakr",)),
        ):
            _http(tally, url, path, body, says=says)
        # What the schema allows still works: the same calls with the right types.
        _http(tally, url, "/v1/context", {"query": "pears", "units": 5}, status=200)
        _http(tally, url, "/v1/add", {"records": [{"text": "kept", "speaker": "ann", "time": 5}]}, status=200)
    finally:
        stop(process)
    unknown = {"text": "a", "speakr": "ann"}
    mcp = RawMCP(store)
    try:
        _mcp(tally, mcp, "remember", unknown, ("speakr",))
        _mcp(tally, mcp, "remember_many", {"records": [unknown]}, ("speakr",))
        _mcp(tally, mcp, "remember", {"text": "a", "speaker": True}, ("speaker",))
        _mcp(tally, mcp, "forget", {"ids": "r1"}, ("ids",))
        _mcp(tally, mcp, "recall", {"query": "pears", "units": "5"}, ("units",))
    finally:
        mcp.close()
    source = tmp / "unknown.json"
    source.write_text(json.dumps([unknown]))
    ran(
        tally,
        "muster add (speakr)",
        muster("add", "--store", str(store), str(source)),
        refused=True,
        says=("speakr",),
    )
    code = f"from muster_exact.store import Store\nStore.open({str(store)!r}).add([{unknown!r}])"
    ran(tally, "Store.add (speakr)", library(code), refused=True, says=("InputError", "speakr"))
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


# --- caps on every surface ----------------------------------------------------------------------


def fuzz_caps(tmp: Path, examples: int) -> Tally:
    tally = Tally("caps on every surface (units, record size: library, CLI, HTTP, MCP)")
    start = time.monotonic()
    store = tmp / "caps.muster"
    _seeded(store, tally)
    huge = 1_000_000_000
    big = tmp / "big.txt"
    big.write_text("word " * ((2 * MAX_RECORD_CHARS + 4_000_000) // 5))  # one 20 MB block
    small = tmp / "small.txt"
    small.write_text("\n\n".join(RECORDS))
    over = "word " * (MAX_RECORD_CHARS // 5) + "x"  # one character over the cap, under HTTP's body cap
    s = str(store)
    opened = f"from muster_exact.store import Store\nstore = Store.open({s!r})"
    units = {"says": (UNITS_SAY,)}
    size = {"says": (SIZE_SAY,)}
    for what, run, check in (
        (
            "muster query --store S --units 1e9",
            lambda: muster("query", "--store", s, "pears", "--units", str(huge)),
            units,
        ),
        (
            "muster query FILE --units 1e9",
            lambda: muster("query", str(small), "pears", "--units", str(huge)),
            units,
        ),
        ("Store.context(units=1e9)", lambda: library(f"{opened}\nstore.context('pears', {huge})"), units),
        (
            "Memory.context(units=1e9)",
            lambda: library(f"import muster_exact\nmuster_exact.build(['pears']).context('pears', {huge})"),
            units,
        ),
        (
            "build(units=1e9)",
            lambda: library(f"import muster_exact\nmuster_exact.build(['pears'], units={huge})"),
            units,
        ),
        ("muster add --store S (a 20 MB record)", lambda: muster("add", "--store", s, str(big)), size),
        ("muster query FILE (a 20 MB record)", lambda: muster("query", str(big), "pears"), size),
        (
            "build([a 20 MB record])",
            lambda: library(f"import muster_exact\nmuster_exact.build(['w ' * {10**7}])"),
            size,
        ),
        ("Store.add([a 20 MB record])", lambda: library(f"{opened}\nstore.add(['w ' * {10**7}])"), size),
    ):
        _timed(tally, what, run, **check)
    tally.notes.append(
        f"the slowest CLI or library refusal (a process started for each) took {tally.seconds:.1f} s"
    )
    process, url = start_http(store)
    try:
        _http(tally, url, "/v1/context", {"query": "pears", "units": huge}, says=(UNITS_SAY,))
        _http(tally, url, "/v1/search", {"query": "pears", "units": huge}, says=(UNITS_SAY,))
        _http(tally, url, "/v1/add", {"records": [over]}, says=(SIZE_SAY,))
    finally:
        stop(process)
    mcp = RawMCP(store)
    try:
        _mcp(tally, mcp, "recall", {"query": "pears", "units": huge}, (UNITS_SAY,))
        _mcp(tally, mcp, "remember", {"text": over}, (SIZE_SAY,))
    finally:
        mcp.close()
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally
