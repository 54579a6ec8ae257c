"""``make fuzz``'s campaigns for damaged files: a record's bytes changed in a store file, and the
vector caches (the shared ``$MUSTER_HOME/vectors.sqlite`` and a store's own) damaged.

A damaged record is never served: every surface (``muster query``, ``export``, ``info``, ``add``,
the HTTP routes) refuses with one message naming the damage, prints none of the damaged text, and
the refused add writes nothing. A damaged cache is a help lost, never a condition: reads answer as
before, with no traceback and nothing raw on the terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from fuzz_common import (
    AUTH,
    DEADLINE_S,
    Tally,
    add_bytes,
    library,
    muster,
    ran,
    server_log,
    start_http,
    stop,
)

from muster_exact.store import Store, StoreCorrupt

JSON_HEADERS = {**AUTH, "Content-Type": "application/json"}
SECRET = "MARKER-4417 the vault combination is thirty-one twelve seventy-seven"
SPOT = slice(7, 11)  # the bytes of SECRET overwritten on disk ("4417" -> "XXXX")
DAMAGED_TEXT = SECRET[: SPOT.start] + "XXXX" + SECRET[SPOT.stop :]


CARGO = ("salt", "tea", "wool", "iron")


def _records(count: int) -> list[str]:
    """Records long enough that a read ranks them (and caches their vectors): more than one budget."""
    return [
        f"record {k}: the lighthouse keeper logged ship {k} passing the cape at dawn, with {k % 7} masts "
        f"and a cargo of {CARGO[k % 4]} bound for the northern harbour before the storms closed the strait"
        for k in range(count)
    ]


def _stored_rows(store: Path) -> int:
    """Rows of the records table, read with SQLite itself (the store's reads refuse a damaged file)."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    finally:
        db.close()


# --- a record's bytes changed in the store file --------------------------------------------


def fuzz_damaged_records(tmp: Path, examples: int) -> Tally:
    """A record's text damaged before any read (cold), and after a read cached its build and
    vectors (warm); and the file's header zeroed (which must read as damage, not as another
    program's file)."""
    tally = Tally("damaged record bytes and header (CLI, HTTP)")
    start = time.monotonic()
    from muster_exact.serve.http import status_of

    expected = status_of(StoreCorrupt("probe"))
    count = min(max(examples // 4, 5), 30)
    for label in ("cold", "warm", "header"):
        store = tmp / f"damaged-{label}.muster"
        with Store.open(store) as opened:
            opened.add([*_records(count), SECRET])
        at = store.read_bytes().find(SECRET.encode())
        if label == "warm":
            ran(tally, "warm-up query", muster("query", "--store", str(store), "combination"), refused=False)
        raw = bytearray(store.read_bytes())
        if label == "header":
            raw[:100] = bytes(100)
        elif at < 0 or raw[at : at + len(SECRET)] != SECRET.encode():
            tally.problems.append(f"{store.name}: the record's text is not where the add wrote it")
            continue
        else:
            raw[at + SPOT.start : at + SPOT.stop] = b"XXXX"
        store.write_bytes(bytes(raw))
        _refused_everywhere(tally, store, expected, label)
        if label != "header":  # SQLite itself cannot count a file without its header
            tally.acknowledged += count + 1
            stored = _stored_rows(store)
            tally.stored = (tally.stored or 0) + stored
    refusals = tally.statuses[f"{expected} StoreCorrupt"]
    tally.notes.append(
        f"{refusals} HTTP answers were {expected} StoreCorrupt (status_of's status for a damaged store): "
        "counted as refusals, not as 5xx; a server that refuses to start on a damaged file counts as "
        "one refusal, as the CLI's do"
    )
    tally.seconds = time.monotonic() - start
    return tally


def _refused_everywhere(tally: Tally, store: Path, expected: int, label: str) -> None:
    hidden = (DAMAGED_TEXT.encode(),)
    says = ("damaged",)
    for command in (
        ("query", "--store", str(store), "the vault combination"),
        ("export", "--store", str(store)),
        ("info", "--store", str(store)),
        ("add", "--store", str(store), "-"),
    ):
        stdin = b"a note written into a damaged store\n" if command[0] == "add" else None
        done = muster(*command, stdin=stdin)
        ran(
            tally,
            f"{label}: muster {command[0]}",
            done,
            refused=True,
            says=says,
            hidden=hidden,
            one_line=True,
        )
    process, url = start_http(store, wait=False)
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    if process.poll() is not None:  # refused to start: one line, as the CLI refuses
        log = server_log(store).read_bytes()
        done = subprocess.CompletedProcess(["muster", "http"], process.returncode, b"", log)
        ran(tally, f"{label}: muster http", done, refused=True, says=says, hidden=hidden, one_line=True)
        return
    try:
        for method, path, body in (
            ("POST", "/v1/context", {"query": "the vault combination", "units": 5}),
            ("POST", "/v1/search", {"query": "the vault combination", "units": 5}),
            ("GET", "/v1/export", None),
            ("GET", "/v1/info", None),
            ("GET", "/v1/records", None),
            ("POST", "/v1/add", {"records": ["a note written into a damaged store"]}),
        ):
            what = f"{label}: {method} {path}"
            try:
                reply = httpx.request(
                    method,
                    f"{url}{path}",
                    content=None if body is None else add_bytes(body),
                    headers=JSON_HEADERS,
                    timeout=DEADLINE_S,
                )
            except httpx.HTTPError as exc:
                tally.unanswered.append(f"{what}: {type(exc).__name__}")
                continue
            error = (
                reply.json().get("error") if reply.headers.get("content-type") == "application/json" else None
            )
            if reply.status_code == expected and error == "StoreCorrupt":
                tally.requests += 1
                tally.statuses[f"{expected} StoreCorrupt"] += 1
            else:
                tally.saw(reply.status_code, f"{what}: {reply.text[:160]}")
                tally.problems.append(f"{what}: {reply.status_code} {error}, not {expected} StoreCorrupt")
            if "damaged" not in reply.text and reply.status_code == expected:
                tally.problems.append(f"{what}: the answer does not name the damage: {reply.text[:160]}")
            if DAMAGED_TEXT in reply.text:
                tally.problems.append(f"{what}: served the damaged text")
    finally:
        stop(process)


# --- damaged vector caches -----------------------------------------------------------------

# How a shared cache file is damaged: what each leaves of the file's bytes.
CACHE_DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "garbage": lambda raw: os.urandom(len(raw)),
    "truncated": lambda raw: raw[: len(raw) // 2],
    "zeroed": lambda raw: bytes(len(raw)),
    "header garbage": lambda raw: os.urandom(100) + raw[100:],
}
QUESTION = "which ship carried tea to the northern harbour"


def fuzz_damaged_caches(tmp: Path, examples: int) -> Tally:
    tally = Tally("damaged shared and per-store caches (CLI, library, HTTP)")
    start = time.monotonic()
    records = _records(40)
    _shared_cache(tally, tmp, records)
    _store_cache(tally, tmp, records)
    tally.seconds = time.monotonic() - start
    return tally


def _shared_cache(tally: Tally, tmp: Path, records: list[str]) -> None:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {"MUSTER_HOME": str(home)}
    source = tmp / "cache-records.json"
    source.write_text(json.dumps(records))
    first = muster("query", str(source), QUESTION, env=env)
    ran(tally, "shared cache: first query", first, refused=False)
    wanted = first.stdout if first is not None and first.returncode == 0 and first.stdout else None
    cache = home / "vectors.sqlite"
    if not cache.exists():
        tally.problems.append("the first file query left no $MUSTER_HOME/vectors.sqlite to damage")
        return
    pristine = cache.read_bytes()
    build = (
        f"import muster_exact, pathlib\n"
        f"print(muster_exact.build(pathlib.Path({str(source)!r})).context({QUESTION!r}).text)"
    )
    for name, damage in CACHE_DAMAGE.items():
        for beside in home.glob("vectors.sqlite-*"):
            beside.unlink()
        cache.write_bytes(damage(pristine))
        done = muster("query", str(source), QUESTION, env=env)
        ran(tally, f"shared cache {name}: muster query FILE", done, refused=False)
        if done is not None and done.returncode == 0 and done.stdout != wanted:
            tally.problems.append(f"shared cache {name}: muster query FILE answered another context")
        built = library(build, env=env)
        ran(tally, f"shared cache {name}: muster_exact.build", built, refused=False)
        if built is not None and built.returncode == 0 and built.stdout.strip() != (wanted or b"").strip():
            tally.problems.append(f"shared cache {name}: build().context answered another context")
    shutil.rmtree(home, ignore_errors=True)


def _store_cache(tally: Tally, tmp: Path, records: list[str]) -> None:
    """One cached vector in the store made TEXT (raw bytes), another a blob of the wrong size."""
    store = tmp / "cells.muster"
    with Store.open(store) as opened:
        opened.add(records)
    tally.acknowledged += len(records)
    first = muster("query", "--store", str(store), QUESTION)
    ran(tally, "store cache: first query", first, refused=False)
    wanted = first.stdout if first is not None and first.returncode == 0 and first.stdout else None
    db = sqlite3.connect(store)
    try:
        with db:
            keys = [row[0] for row in db.execute("SELECT sha256 FROM vectors LIMIT 2")]
            if len(keys) < 2:
                tally.problems.append(f"the first query cached {len(keys)} vectors in the store, not 2")
                return
            db.execute("UPDATE vectors SET vector = CAST(vector AS TEXT) WHERE sha256 = ?", (keys[0],))
            db.execute("UPDATE vectors SET vector = zeroblob(7) WHERE sha256 = ?", (keys[1],))
    finally:
        db.close()
    for attempt in ("first", "second"):  # the second read meets what the first did with the cells
        done = muster("query", "--store", str(store), QUESTION)
        ran(tally, f"store cache cell as TEXT: {attempt} muster query", done, refused=False)
        if done is not None and done.returncode == 0 and done.stdout != wanted:
            tally.problems.append(f"store cache cell as TEXT: {attempt} query answered another context")
    read = (
        f"from muster_exact.store import Store\nprint(Store.open({str(store)!r}).context({QUESTION!r}).text)"
    )
    ran(tally, "store cache cell as TEXT: Store.context", library(read), refused=False)
    process, url = start_http(store)
    try:
        body = add_bytes({"query": QUESTION, "units": 5})
        try:
            reply = httpx.post(f"{url}/v1/context", content=body, headers=JSON_HEADERS, timeout=DEADLINE_S)
            tally.saw(reply.status_code, f"store cache cell as TEXT: POST /v1/context {reply.text[:160]}")
            if reply.status_code != 200:
                tally.problems.append(f"store cache cell as TEXT: /v1/context answered {reply.status_code}")
        except httpx.HTTPError as exc:
            tally.unanswered.append(f"store cache cell as TEXT: POST /v1/context {type(exc).__name__}")
    finally:
        stop(process)
    tally.stored = (tally.stored or 0) + _stored_rows(store)
