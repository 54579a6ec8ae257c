"""``make fuzz``: the real HTTP and MCP servers, the CLI and the library under generated and
damaged input, bounded to a few minutes.

Fourteen campaigns, each on a fresh store, the servers and the CLI started here in subprocesses:

1. **OpenAPI** (schemathesis): every operation of ``/openapi.json`` with
   generated bodies and parameters, then the stateful phase that follows the
   document's links (add -> context, search, info on the namespace just
   written).
2. **Records over HTTP** (hypothesis): records with any Unicode (lone
   surrogates included, sent as JSON escapes), nested metadata up to well
   past the library's depth bound, sizes from empty to a megabyte, odd ids.
3. **Records over MCP stdio**: the same records as raw JSON-RPC lines, plus
   lines that are not UTF-8, each with a deadline.
4. **Slow and idle clients** (``fuzz_edges.py``): under ``ulimit -n 256``,
   300 connections that stop part-way (nothing sent, half a request line,
   half the headers, a body that never comes) while normal requests go on;
   the server must answer those and close every stalled one, and keep its
   log short.
5. **Cold start**: one first read of each of 8 namespaces at the same moment
   on a server still starting, three times.
6. **Crafted names**: namespace names with control, escape, bidi and
   zero-width characters and NFC/NFD spellings, over HTTP and MCP; the store
   must hold only normalised, visible names and ``muster info`` must print
   nothing raw.
7. **Damaged record bytes** (``fuzz_damage.py``): four bytes of a record's
   text changed in the store file, before any read and after one cached its
   build, and the file's header zeroed: ``muster query``, ``export``,
   ``info``, ``add`` and the HTTP routes each refuse with one line naming the
   damage (``StoreCorrupt``, the status ``status_of`` gives it over HTTP),
   print none of the damaged text, and the refused adds write nothing.
8. **Damaged caches**: ``$MUSTER_HOME/vectors.sqlite`` garbage, truncated,
   zeroed, its header garbage; one cached vector in a store made TEXT and
   another the wrong size: ``muster query``, ``build``, ``Store.context``
   and ``/v1/context`` answer the same context as before, no traceback,
   nothing raw.
9. **Lone surrogates** (``fuzz_surfaces.py``): an argv byte 0xff, a JSON
   ``\\ud800`` in a file, stdin that is not UTF-8 on the CLI; ``"\\udcff"``
   in ``build``, ``Memory.context``, ``Store.context``, ``Store.add`` and a
   namespace: one line, ``InputError``, no traceback.
10. **Schema-exact types and unknown fields**: ``{"ids": "r1"}``,
    ``speaker: true``, numbers as strings, NaN, a misspelt field (``speakr``)
    over HTTP (422, naming the field, nothing changed), MCP, ``muster add``
    and ``Store.add``.
11. **Caps on every surface**: ``units`` of 10^9 and a 20 MB record on the
    CLI and in the library, and over the cap on HTTP and MCP: refused within
    seconds, each with the library's words.
12. **A write during a slow read** (``fuzz_service.py``): an add sent during
    the first read (the embedding) of 300 records answers within a second
    and before the read ends.
13. **A lost delete answer**: deletes with a ``request_id``, one abandoned
    before its answer and retried, others sent two and three times: each
    answered 200; the deleted text is then in no file of the store (main,
    -wal, -shm), while the server runs and after.
14. **The database down**: ``muster http`` on a throw-away PostgreSQL
    (``tests/postgres.py``), which is stopped and started again: ``/readyz``
    503 then 200, ``/healthz`` 200, a read while down ``StoreUnavailable``;
    skipped with a note where no cluster can be started.

What it counts: replies by status class, 5xx, requests that got no answer
before the deadline, and the adds each server acknowledged (less the
records its acknowledged deletes removed) against the records its store
holds at the end (they must be equal: nothing lost, nothing counted twice).
On the CLI and in the library an exit 0 counts as a 2xx, a clean refusal as a 4xx and a
traceback as a 5xx. The figures go to ``results/bench/fuzz.md``; the exit status is 1 when any
5xx, unanswered request, count mismatch or failed campaign check is seen.

    python scripts/fuzz.py --out results/bench/fuzz.md [--examples 60] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
from fuzz_common import (  # noqa: E402
    AUTH,
    DEADLINE_S,
    RawMCP,
    Tally,
    add_bytes,
    hypothesis_settings,
    start_http,
    stop,
    stored_records,
)
from fuzz_damage import fuzz_damaged_caches, fuzz_damaged_records  # noqa: E402
from fuzz_edges import fuzz_cold_start, fuzz_crafted_names, fuzz_slow_clients  # noqa: E402
from fuzz_service import fuzz_database_down, fuzz_lost_delete, fuzz_write_during_read  # noqa: E402
from fuzz_surfaces import fuzz_caps, fuzz_schema_types, fuzz_surrogates  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402

# --- generated records --------------------------------------------------------------------

# Any code point, lone surrogates included (JSON carries them as \\udXXX escapes).
ANY_TEXT = st.text(alphabet=st.characters(codec=None, min_codepoint=0), max_size=300)
BIG_TEXT = st.integers(min_value=1, max_value=1_000_000).map(lambda n: "word " * (n // 5) + "x")


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


METADATA = st.one_of(
    st.none(),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ANY_TEXT,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
        max_leaves=20,
    ),
    st.integers(min_value=1, max_value=2_000).map(nested),
)
RECORD = st.one_of(
    ANY_TEXT,
    st.fixed_dictionaries(
        {"text": st.one_of(ANY_TEXT, BIG_TEXT)},
        optional={
            "speaker": st.one_of(ANY_TEXT, st.integers(), st.booleans()),
            "time": st.one_of(ANY_TEXT, st.integers(), st.floats(allow_nan=False)),
            "id": st.one_of(ANY_TEXT, st.integers(), st.booleans()),
            "metadata": METADATA,
        },
    ),
)
ADD = st.fixed_dictionaries(
    {"records": st.lists(RECORD, min_size=0, max_size=4)},
    optional={
        "request_id": st.one_of(ANY_TEXT, st.integers()),
        "namespace": st.sampled_from(["default", "fuzz-a", "fuzz-b", "", "\udc80"]),
    },
)


# --- campaign 1: OpenAPI, stateless then stateful -----------------------------------------


def fuzz_openapi(url: str, examples: int) -> Tally:
    import schemathesis

    tally = Tally("OpenAPI (schemathesis, stateless + stateful links)")
    start = time.monotonic()
    raw = httpx.get(f"{url}/openapi.json", headers=AUTH).json()
    links = sum(
        len(r.get("links", {}))
        for p in raw["paths"].values()
        for o in p.values()
        for r in o["responses"].values()
    )
    if not links:
        raise SystemExit("the OpenAPI document declares no links: the stateful phase would test nothing")
    schema = schemathesis.openapi.from_dict(raw)

    def call(case: Any) -> Any:
        try:
            response = case.call(base_url=url, headers=AUTH, timeout=DEADLINE_S)
        except httpx.TimeoutException:
            tally.unanswered.append(f"{case.method} {case.path}")
            raise
        tally.saw(response.status_code, f"{case.method} {case.path} {case.body!r}")
        if case.path == "/v1/add" and response.status_code == 200:
            reply = response.json()
            tally.acknowledged += 0 if reply["replayed"] else reply["added"]
        if case.path == "/v1/delete" and response.status_code in (200, 202):
            # A generated delete can name an id a generated add gave (a small integer, say).
            tally.acknowledged -= len(response.json()["deleted"])
        return response

    from schemathesis.generation import GenerationMode

    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):  # what the schema allows, and not

            @hypothesis_settings(examples)
            @given(case=operation.as_strategy(mode))
            def stateless(case: Any) -> None:
                call(case)

            try:
                stateless()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # an operation with no input to get wrong

    # Scenarios follow a link only from a 200, so the stateful phase sends what the schema allows
    # (the stateless phase above sent the negative cases too).
    schema.config.generation.update(modes=["positive"])
    machine = schema.as_state_machine()

    class Machine(machine):  # type: ignore[misc, valid-type]
        def step(self, input: Any) -> Any:
            tally.linked += getattr(input, "transition", None) is not None
            return super().step(input)

        def call(self, case: Any, **kwargs: Any) -> Any:
            return call(case)

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            pass  # counted in call(); the campaign asks for no 5xx, not for schema conformance

    # One scenario per run: the server keeps its state between scenarios, so Hypothesis's memory of
    # earlier scenarios (its choice tree) would meet a different server and call the strategy flaky.
    # Each run is seeded with the scenario number, so the campaign replays the same scenarios.
    for scenario in range(max(examples // 3, 5)):
        seed(scenario)(Machine)
        Machine.run(
            settings=settings(
                max_examples=1,
                stateful_step_count=10,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
        )
    tally.seconds = time.monotonic() - start
    return tally


# --- campaign 2: generated records over HTTP ----------------------------------------------


def fuzz_http_records(url: str, examples: int) -> Tally:
    tally = Tally("records over HTTP (hypothesis)")
    start = time.monotonic()

    @hypothesis_settings(examples)
    @given(body=ADD, query=ANY_TEXT)
    def one(body: dict[str, Any], query: str) -> None:
        headers = {**AUTH, "Content-Type": "application/json"}
        try:
            reply = httpx.post(f"{url}/v1/add", content=add_bytes(body), headers=headers, timeout=DEADLINE_S)
        except httpx.TimeoutException:
            tally.unanswered.append(f"add {add_bytes(body)[:200]!r}")
            return
        tally.saw(reply.status_code, f"add {add_bytes(body)[:200]!r}")
        if reply.status_code == 200 and not reply.json()["replayed"]:
            tally.acknowledged += reply.json()["added"]
        read = {"query": query or "?", "namespace": body.get("namespace", "default"), "units": 3}
        try:
            answer = httpx.post(
                f"{url}/v1/context", content=add_bytes(read), headers=headers, timeout=DEADLINE_S
            )
        except httpx.TimeoutException:
            tally.unanswered.append(f"context {read!r}")
            return
        tally.saw(answer.status_code, f"context {read!r}")

    one()
    tally.seconds = time.monotonic() - start
    return tally


# --- campaign 3: generated records over MCP stdio -----------------------------------------


def fuzz_mcp_records(store: Path, examples: int) -> Tally:
    tally = Tally("records over MCP stdio (hypothesis + raw bytes)")
    start = time.monotonic()
    mcp = RawMCP(store)

    def tool(name: str, arguments: dict[str, Any] | None = None, raw: bytes | None = None) -> None:
        what = f"{name} {(raw or add_bytes(arguments or {}))[:200]!r}"
        params = {"name": name, "arguments": arguments}
        body = None if raw is None else b'{"name":"' + name.encode() + b'","arguments":' + raw + b"}"
        reply = mcp.request("tools/call", params, raw=body)
        if reply is None:
            tally.unanswered.append(what)
            return
        failed = "error" in reply or reply.get("result", {}).get("isError", False)
        tally.saw(400 if failed else 200, what)
        if not failed and name in ("remember", "remember_many"):
            result = reply["result"].get("structuredContent") or json.loads(
                reply["result"]["content"][0]["text"]
            )
            tally.acknowledged += 0 if result["replayed"] else result["added"]

    @hypothesis_settings(examples)
    @given(body=ADD)
    def one(body: dict[str, Any]) -> None:
        records = body["records"]
        first = records[0] if records else ""
        single = {"text": first} if isinstance(first, str) else {k: v for k, v in first.items() if k != "id"}
        for key in ("request_id", "namespace"):
            if key in body:
                single[key] = body[key]
        tool("remember", single)
        tool("remember_many", body)
        tool("recall", {"query": str(first)[:200] or "?", "namespace": body.get("namespace")})

    one()
    # Lines a JSON encoder would not write: bytes that are not UTF-8, a lone surrogate, deep nesting.
    tool("remember", raw=b'{"text":"caf\xe9 au lait"}')
    tool("remember", raw=b'{"text":"\\ud800 alone"}')
    tool("remember", raw=b'{"text":"deep","metadata":' + b"[" * 5000 + b"]" * 5000 + b"}")
    mcp.close()
    tally.stored = stored_records(store)
    tally.seconds = time.monotonic() - start
    return tally


# --- the report ------------------------------------------------------------------------


def report(tallies: list[Tally], examples: int) -> str:
    lines = [
        "# Fuzzing the servers (`make fuzz`)",
        "",
        f"`scripts/fuzz.py --examples {examples}`: the real `muster http` (token set, 127.0.0.1) and "
        "`muster mcp` (stdio) on fresh stores, cpu-small models; the CLI and the library each in a "
        "process of its own (exit 0 counted as 2xx, a clean refusal as 4xx, a traceback as 5xx). "
        "Hypothesis is derandomised, so a run replays the same inputs. A request with no reply within "
        f"{DEADLINE_S:.0f} s counts as unanswered. Answers a campaign expects outside the status "
        "classes (a damaged store's or a stopped database's 503) are counted in `requests` only, "
        "and named in the notes.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| campaign | requests | 2xx | 4xx | 5xx | unanswered | adds acknowledged | records stored "
        "| seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tallies:
        stored = "" if t.stored is None else str(t.stored)
        lines.append(
            f"| {t.name} | {t.requests} | {t.statuses['2xx']} | {t.statuses['4xx']} | {t.statuses['5xx']} | "
            f"{len(t.unanswered)} | {t.acknowledged} | {stored} | {t.seconds:.0f} |"
        )
    linked = sum(t.linked for t in tallies)
    lines += ["", f"Stateful steps that followed a link of the OpenAPI document: {linked}."]
    lines += ["", *(f"- {t.name}: {note}." for t in tallies for note in t.notes)]
    problems = [
        p for t in tallies for p in t.server_errors + [f"unanswered: {u}" for u in t.unanswered] + t.problems
    ]
    lines += ["", "All campaigns clean." if all(t.ok for t in tallies) else "Problems:", ""]
    lines += [f"- `{p}`" for p in problems[:50]]
    return "\n".join(lines).rstrip() + "\n"


def on_http_server(campaign: Callable[[str, int], Tally]) -> Callable[[Path, int], Tally]:
    """A campaign against one HTTP server on a fresh store, the store's records counted after."""

    def run(tmp: Path, examples: int) -> Tally:
        store = tmp / "http.muster"
        process, url = start_http(store)
        try:
            tally = campaign(url, examples)
        finally:
            stop(process)
        tally.stored = stored_records(store)
        return tally

    return run


# Each campaign: a fresh folder and the example count in, its tally out.
CAMPAIGNS: dict[str, Callable[[Path, int], Tally]] = {
    "openapi": on_http_server(fuzz_openapi),
    "http-records": on_http_server(fuzz_http_records),
    "mcp-records": lambda tmp, n: fuzz_mcp_records(tmp / "mcp.muster", n),
    "slow-clients": lambda tmp, n: fuzz_slow_clients(tmp / "slow.muster", max(n // 6, 5)),
    "cold-start": lambda tmp, n: fuzz_cold_start(tmp / "cold.muster", n),
    "crafted-names": fuzz_crafted_names,
    "damaged-records": fuzz_damaged_records,
    "damaged-caches": fuzz_damaged_caches,
    "surrogates": fuzz_surrogates,
    "schema-types": fuzz_schema_types,
    "caps": fuzz_caps,
    "write-during-read": fuzz_write_during_read,
    "lost-delete": fuzz_lost_delete,
    "database-down": fuzz_database_down,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "results" / "bench" / "fuzz.md")
    parser.add_argument(
        "--examples", type=int, default=60, help="generated examples per operation / campaign"
    )
    parser.add_argument(
        "--only", action="append", choices=sorted(CAMPAIGNS), help="run only this campaign (repeatable)"
    )
    args = parser.parse_args(argv)
    tallies = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, campaign in CAMPAIGNS.items():
            if args.only and name not in args.only:
                continue
            folder = Path(tmp) / name
            folder.mkdir()
            tallies.append(campaign(folder, args.examples))
    text = report(tallies, args.examples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0 if all(t.ok for t in tallies) else 1


if __name__ == "__main__":
    raise SystemExit(main())
