"""The SQLite Store: equal to a fresh build, incremental, idempotent, crash-safe, concurrent.

Real SQLite files, real benchmark records (LoCoMo turns, FactConsolidation
lines, BEAM messages from ../shared/data), the packaged embedder, real
processes for the kill and concurrency tests.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muster_exact import store as store_module
from muster_exact.core.errors import InputError
from muster_exact.memory import Memory, build, unit_texts
from muster_exact.store import Store, StoreError
from muster_exact.store import file as store_file
from muster_exact.verify.corpora import locomo_sessions
from tests.conftest import REPO, data_root

pytestmark = pytest.mark.slow
MODELS = "cpu-small"


# --- real records ------------------------------------------------------------------


def locomo_records(limit: int | None = None) -> tuple[list[dict], list[str]]:
    root = data_root()
    assert root is not None, "benchmark data not found"
    sample = json.loads((root / "locomo/locomo10.json").read_text())[0]
    records = [
        {"id": t["dia_id"], "speaker": t["speaker"], "time": date, "text": t["text"]}
        for _, date, turns in locomo_sessions(sample["conversation"])
        for t in turns
    ]
    questions = [qa["question"] for qa in sample["qa"][:3]]
    return records[:limit], questions


def fact_records(limit: int) -> tuple[list[str], list[str]]:
    root = data_root()
    assert root is not None
    rows = json.loads((root / "memoryagentbench/data/Conflict_Resolution.json").read_text())
    row = next(r for r in rows if r["metadata"]["source"] == "factconsolidation_sh_6k")
    # Two multi-hop questions of the same context too: the walk past a slot's value (decision 0199).
    hops = next(r for r in rows if r["metadata"]["source"] == "factconsolidation_mh_6k")
    lines = [line for line in row["context"].split("\n") if line.strip()]
    return lines[:limit], [*row["questions"][:3], *hops["questions"][:2]]


def beam_records(limit: int) -> tuple[list[dict], list[str]]:
    root = data_root()
    assert root is not None
    chat = json.loads((root / "beam/100K/1/chat.json").read_text())
    records = [
        {"id": str(m["id"]), "role": m["role"], "text": m["content"]}
        for batch in chat
        for turn in batch["turns"]
        for m in turn
        if str(m.get("content", "")).strip()
    ]
    probing = json.loads((root / "beam/100K/1/probing_questions.json").read_text())
    questions = [probing[ability][0]["question"] for ability in sorted(probing)[:3]]
    return records[:limit], questions


def branch_changing_records() -> tuple[list, list[str]]:
    """40 numbered fact lines, then 60 LoCoMo turns: a store that starts as a numbered log and
    becomes a record store as it grows (and regroups its parents on the way)."""
    facts, _ = fact_records(40)
    turns, questions = locomo_records(60)
    return [*facts, *turns], questions


KINDS = {
    "locomo": lambda: locomo_records(90),
    "facts": lambda: fact_records(120),
    "beam": lambda: beam_records(40),
    "branch": branch_changing_records,
}


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One file for every example, a fresh namespace each: vectors are shared by text, so the
    # property test embeds each unit text once.
    return tmp_path_factory.mktemp("store") / "equivalence.muster"


def splits(n: int) -> st.SearchStrategy[list[int]]:
    """Random cut points splitting n records into a sequence of adds."""
    return st.lists(st.integers(min_value=1, max_value=n - 1), max_size=6, unique=True).map(sorted)


def assert_same_memory(grown: Memory, fresh: Memory, questions: list[str]) -> None:
    """Two memories equal in everything a read uses: plan, cut, texts, pieces, vectors, token
    counts, each channel's scores and proposals, and the contexts."""
    assert grown.plan == fresh.plan
    assert grown.cut == fresh.cut
    assert grown.unit_texts == fresh.unit_texts and grown.pieces == fresh.pieces
    assert grown.unit_tokens == fresh.unit_tokens
    assert np.array_equal(grown.channel("dense")._vectors, fresh.channel("dense")._vectors)
    for q in questions:
        for name in ("bm25", "graph"):
            assert grown.channel(name).propose(q, 40) == fresh.channel(name).propose(q, 40)
        assert np.array_equal(grown.channel("bm25").scores(q), fresh.channel("bm25").scores(q))
        assert np.array_equal(grown.channel("dense").scores(q), fresh.channel("dense").scores(q))
        a, b = grown.context(q), fresh.context(q)
        assert (a.text, a.provenance) == (b.text, b.provenance)


def rebuilt(store: Store) -> Memory:
    """A fresh build of the store's records, its vectors from the store's own cache (the same
    floats the store read), with a memo of its own."""
    vectors, scores = store._open_caches()
    return build(list(store.records()), store.preset, store.models, cache=vectors, scores=scores)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_store_grown_by_adds_reads_like_a_fresh_build(kind: str, shared_store: Path) -> None:
    records, questions = KINDS[kind]()
    fresh = build(records, models=MODELS)
    expected = [fresh.context(q).text for q in questions]
    counter = iter(range(10_000))

    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(cuts=splits(len(records)), reads=st.lists(st.integers(0, 6), max_size=4))
    def check(cuts: list[int], reads: list[int]) -> None:
        namespace = f"{kind}-{next(counter)}"
        bounds = [0, *cuts, len(records)]
        with Store.open(shared_store, namespace, models=MODELS) as store:
            for k, (start, end) in enumerate(itertools.pairwise(bounds)):
                chunk = records[start:end]
                store.add(chunk if len(chunk) > 1 or k % 2 else chunk[0], request_id=f"{namespace}-{k}")
                if k in reads:  # reading half way must not change what the final read gives
                    store.context(questions[0])
                    # After the first read, the memory grows, or is built afresh for a new branch.
                    reason = store.rebuilt_because
                    assert reason in (None, "the first read") or "branch changed" in reason, reason
            assert [store.context(q).text for q in questions] == expected
            assert [r["text"] for r in store.records()] == [
                r if isinstance(r, str) else r["text"] for r in records
            ]
            assert_same_memory(store.memory(), rebuilt(store), questions)

    check()


def test_a_store_that_changes_branch_is_built_afresh_then_grows_again(tmp_path: Path) -> None:
    records, questions = branch_changing_records()  # 40 numbered fact lines, then LoCoMo turns
    with Store.open(tmp_path / "branch.muster", models=MODELS) as store:
        store.add(records[:40])
        assert store.memory().plan.branch == "numbered_log" and store.rebuilt_because == "the first read"
        store.add(records[40:41])
        assert store.memory().growth is not None and store.rebuilt_because is None
        store.add(records[41:])
        memory = store.memory()
        assert memory.plan.branch == "record_store"
        assert (
            store.rebuilt_because is not None and "branch changed from numbered_log" in store.rebuilt_because
        )
        assert memory.growth is None  # built afresh
        store.add({"text": "One more turn about the support group."})
        assert store.memory().growth is not None and store.rebuilt_because is None
        assert_same_memory(store.memory(), rebuilt(store), questions)


# --- incremental cost --------------------------------------------------------------


def test_adding_one_record_embeds_only_the_pieces_that_changed(tmp_path: Path) -> None:
    records, questions = locomo_records()
    path = tmp_path / "conv26.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(records[:-1])
        before = set(store.memory().pieces.texts)
        assert store.embedded == len(before)  # a new file: every piece is new
        assert len(before) > len(store.memory().unit_texts)  # units longer than MiniLM's window
        store.add(records[-1])
        after = store.memory().pieces.texts
        changed = set(after) - before
        assert 0 < store.embedded == len(changed) < len(after)
        # The new record's own piece (or the tail unit holding it, if that fits the window).
        assert all(records[-1]["text"] in piece for piece in changed), changed
        first = store.context(questions[0]).text
    # A new process opening the same file embeds nothing, and reads the same context.
    script = textwrap.dedent(
        f"""
        import json
        from muster_exact.store import Store
        with Store.open({str(path)!r}, models={MODELS!r}) as store:
            text = store.context({questions[0]!r}).text
            memo = store.memo
            units = len(store.memory().cut.units)
            print(json.dumps({{"embedded": store.embedded, "text": text, "units": units,
                              "computed": sum(memo.computed.values()), "loaded": sum(memo.loaded.values())}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    reply = json.loads(out.stdout.splitlines()[-1])
    # Nothing embedded, and no record counted, no unit indexed or linked again: every analysis
    # (counts, BM25 terms, entities, word pieces) is read from the file.
    assert reply["embedded"] == 0 and reply["text"] == first
    # (At least each unit's BM25 terms and entities were loaded.)
    assert reply["computed"] == 0 and reply["loaded"] >= 2 * reply["units"] > 0, reply


@pytest.mark.parametrize("kind", ["locomo", "facts"])
def test_one_add_analyses_the_new_record_and_the_units_it_changed_not_the_store(
    kind: str, tmp_path: Path
) -> None:
    records, questions = locomo_records() if kind == "locomo" else fact_records(400)
    with Store.open(tmp_path / "grow.muster", models=MODELS) as store:
        store.add(records[:-1])
        store.context(questions[0])
        before = set(store.memory().unit_texts)
        first = Counter(store.memo.computed)
        # A first read analyses every record and every unit.
        assert first["tokens"] >= len(records) - 1
        assert first["bm25:standard.2"] == first["entities"] == len(before) >= 40
        store.add(records[-1])
        store.context(questions[0])
        again = Counter(store.memo.computed) - first
        memory = store.memory()
        changed = set(memory.unit_texts) - before
        # The new record is counted, and only the units that changed (the tail that now holds
        # it) are cut, indexed, linked and embedded again: not the store.
        growth = memory.growth
        assert growth is not None and store.rebuilt_because is None
        recut = len(memory.cut.units) - growth.first_unit
        assert recut == len(changed) == 1, (recut, changed)
        assert len(growth.parents) == 1 and not growth.regrouped
        assert again["tokens"] == 1, again
        assert again["bm25:standard.2"] == again["entities"] == 1, again
        assert sum(n for kind, n in again.items() if kind.startswith("window:")) <= 2, again
        assert 1 <= store.embedded <= 2, again
        assert_same_memory(memory, rebuilt(store), questions)
        # Twenty more adds: the memo holds the units the store has, not every unit it ever had.
        for k in range(20):
            store.add(f"Another note, number {k}, about the {kind} store.")
            store.context(questions[0])
        assert store.rebuilt_because is None
        live = set(store.memory().unit_texts)
        assert store.memo.held("bm25:standard.2") == store.memo.held("entities") == len(live)


COUNTING_CHILD = textwrap.dedent(
    """
    import importlib, json, sys
    from collections import Counter
    from muster_exact.channels import bm25
    from muster_exact.memory import settings
    from muster_exact.store import Store

    derive = importlib.import_module("muster_exact.derive")  # the module, not the function

    calls = Counter()

    def counted(owner, name):
        real = getattr(owner, name)
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        setattr(owner, name, wrapper)

    # Where the build looks them up: deriving, detecting, cutting, growing a cut, analysing
    # text for BM25 (the memo's counts say the same of every kind of analysis).
    counted(settings, "analyse")
    counted(derive, "detect")
    counted(derive.cutting, "cut")
    counted(derive.growing, "grown")
    counted(bm25.BM25Channel, "_analysed")
    path, models, question, extra = sys.argv[1:5]
    with Store.open(path, models=models) as store:
        first = store.context(question).text
        reply = {"calls": dict(calls), "text": first, "embedded": store.embedded,
                 "computed": sum(store.memo.computed.values())}
        calls.clear()
        before = Counter(store.memo.computed)
        store.add(json.loads(extra))
        store.context(question)
        reply["after_add"] = {"calls": dict(calls), "rebuilt_because": store.rebuilt_because,
                              "recut": len(store.memory().cut.units) - store.memory().growth.first_unit,
                              "analysed": dict(Counter(store.memo.computed) - before)}
    print(json.dumps(reply))
    """
)


def counted_in_a_new_process(store: str, question: str, extra: dict) -> dict:
    """What a new process opening ``store`` computes for its first read of ``question`` and for a
    read after adding ``extra`` (:data:`COUNTING_CHILD`)."""
    out = subprocess.run(
        [sys.executable, "-c", COUNTING_CHILD, store, MODELS, question, json.dumps(extra)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_a_new_process_reads_the_saved_cut_and_cuts_and_indexes_nothing(tmp_path: Path) -> None:
    records, questions = locomo_records()
    path = tmp_path / "saved.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(records[:-2])
        store.context(questions[0])  # built (and its derive result saved)
        store.add(records[-2])
        first = store.context(questions[0]).text  # grown (and saved again)
    reply = counted_in_a_new_process(str(path), questions[0], records[-1])
    # The first query of the new process: nothing derived, detected, cut, analysed or embedded.
    assert reply["calls"] == {} and reply["computed"] == 0 and reply["embedded"] == 0, reply
    assert reply["text"] == first
    # Then one add: detection extended, the tail cut again, one unit analysed (not the store).
    after = reply["after_add"]
    assert after["rebuilt_because"] is None and after["recut"] == 1, after
    assert after["calls"] == {"detect": 1, "grown": 1, "_analysed": 1}, after
    assert after["analysed"]["bm25:standard.2"] == after["analysed"]["entities"] == 1, after
    assert after["analysed"]["tokens"] == 1, after  # the new record: counted once
    with Store.open(path, models=MODELS) as store:
        assert_same_memory(store.memory(), rebuilt(store), questions)


def test_a_damaged_or_stale_saved_cut_is_derived_afresh(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records, questions = locomo_records(40)
    path = tmp_path / "damaged.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(records)
        expected = store.context(questions[0]).text
    for damage in (b"not an archive", b"PK\x03\x04" + bytes(200)):
        db = sqlite3.connect(path)
        with db:
            db.execute("UPDATE built SET state = ?", (damage,))
        db.close()
        with Store.open(path, models=MODELS) as store:
            assert store.context(questions[0]).text == expected
        assert "saved derive result is unreadable" in caplog.text
        caplog.clear()
        # Derived afresh, and saved again whole.
        db = sqlite3.connect(path)
        assert db.execute("SELECT state FROM built").fetchone()[0] != damage
        db.close()
    # Saved for other records (the head moved on in a way the row does not know): not used.
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE built SET head = 'another head'")
    db.close()
    with Store.open(path, models=MODELS) as store:
        assert store.context(questions[0]).text == expected
        assert store.memory().derived is not None and store.memory().derived.timings  # derived now


# --- idempotency ---------------------------------------------------------------------


def test_a_request_id_is_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "once.muster"
    with Store.open(path, models=MODELS) as store:
        results = [store.add(["one", "two"], request_id="req-1") for _ in range(3)]
        assert [r.replayed for r in results] == [False, True, True]
        assert results[1].ids == results[0].ids and results[2].head == results[0].head
        assert store.head().records == 2
    adder = textwrap.dedent(
        f"""
        import sys, time
        from muster_exact.store import Store
        start = float(sys.argv[1])
        with Store.open({str(path)!r}) as store:
            while time.time() < start:
                pass
            print(store.add(["alpha", "beta", "gamma"], request_id="req-2").replayed)
        """
    )
    start = str(time.time() + 2.0)  # both processes wake at the same moment
    procs = [
        subprocess.Popen([sys.executable, "-c", adder, start], stdout=subprocess.PIPE, text=True, cwd=REPO)
        for _ in range(2)
    ]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["False", "True"]
    with Store.open(path) as store:
        texts = [r["text"] for r in store.records()]
    assert texts == ["one", "two", "alpha", "beta", "gamma"]


# --- crash safety ----------------------------------------------------------------------

BIG_ADD = 200_000


def test_a_killed_add_leaves_all_or_nothing(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from muster_exact.store import Store
        records = [f"record {{i}}: " + "words " * 20 for i in range({BIG_ADD})]
        with Store.open(sys.argv[1]) as store:
            store.add(["before"], request_id="first")
            print("adding", flush=True)
            store.add(records, request_id="big")
            print("done", flush=True)
        """
    )
    seen = set()
    for attempt, delay in enumerate((0.3, 0.8, 1.5, 3.0)):
        path = tmp_path / f"crash-{attempt}.muster"
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "adding"
        time.sleep(delay)
        alive = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        with Store.open(path) as store:
            count = store.head().records
            assert count in (1, 1 + BIG_ADD), count
            assert len(list(store.records())) == count
            seen.add((alive, count))
        check = sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0]
        assert check == "ok"
    # At least one kill landed in the middle of the add (the process was still writing).
    assert (True, 1) in seen, seen


# --- concurrency ---------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys, time
    from muster_exact.store import Store
    path, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    added = 0
    with Store.open(path) as store:
        end = time.time() + seconds
        while time.time() < end:
            batch = [f"{name} batch {added} item {k}" for k in range(5)]
            store.add(batch, request_id=f"{name}-{added}")
            added += 1
    print(added)
    """
)

READER = textwrap.dedent(
    """
    import sys, time
    from muster_exact.store import Store
    path, seconds = sys.argv[1], float(sys.argv[2])
    reads = 0
    with Store.open(path) as store:
        end = time.time() + seconds
        while time.time() < end:
            records = list(store.records())
            texts = [r["text"] for r in records]
            assert len(texts) % 5 == 0, len(texts)  # never part of an add
            for i in range(0, len(texts), 5):
                batch = {t.rsplit(" item ", 1)[0] for t in texts[i : i + 5]}
                assert len(batch) == 1, texts[i : i + 5]  # an add's records stay together, in order
            reads += 1
    print(reads)
    """
)


@pytest.fixture(params=["sqlite", "postgres"])
def store_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: a new file, or a new PostgreSQL database (tests/postgres.py)."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "store.muster")


def test_four_writers_and_four_readers_lose_nothing(store_at: str) -> None:
    path = store_at
    Store.open(path).close()
    seconds = "6"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"w{i}", seconds], stdout=subprocess.PIPE, text=True
        )
        for i in range(4)
    ]
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(path), seconds],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    added = [int(p.communicate(timeout=300)[0].strip()) for p in writers]
    for reader in readers:
        out, err = reader.communicate(timeout=300)
        assert reader.returncode == 0, err[-2000:]
        assert int(out.strip()) > 0
    with Store.open(path) as store:
        assert store.head().records == 5 * sum(added) == len(list(store.records()))
    assert all(n > 0 for n in added)


# --- delete and namespaces ---------------------------------------------------------------------


def test_deleted_text_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "forget.muster"
    secret = "The vault code is ZEBRA-7741-QUOKKA."
    records, _ = locomo_records(60)
    with Store.open(path, models=MODELS) as store:
        store.add(records)
        store.add({"id": "s1", "text": secret}, request_id="secret")
        assert "ZEBRA-7741" in store.context("What is the vault code?", units=50).text
        result = store.delete(request_id="secret")
        assert result.deleted == ("s1",) and result.vectors_dropped > 0
        assert "ZEBRA-7741" not in store.context("What is the vault code?", units=50).text
        # A retry of the deleted request stays applied: it does not bring the text back.
        assert store.add({"id": "s1", "text": secret}, request_id="secret").replayed
        assert all(r["id"] != "s1" for r in store.records())
        live = {sha for (sha,) in sqlite3.connect(path).execute("SELECT sha256 FROM vectors")}
        # Exactly the vectors of the pieces the remaining records make, no more.
        assert live == {hashlib.sha256(t.encode()).hexdigest() for t in store.memory().pieces.texts}
        with pytest.raises(InputError, match="no record 'nope'"):
            store.delete(["nope"])
    raw = path.read_bytes() + (
        path.with_name(path.name + "-wal").read_bytes()
        if path.with_name(path.name + "-wal").exists()
        else b""
    )
    assert b"ZEBRA-7741" not in raw


def test_generated_ids_never_collide_with_given_ones(store_at: str) -> None:
    with Store.open(store_at) as store:
        store.add({"id": "r2", "text": "given the id the store would generate next"})
        result = store.add(["no id", {"id": "r3", "text": "given in the same add"}, "no id either"])
        assert result.ids == ("r2.2", "r3", "r4")
        assert len({r["id"] for r in store.records()}) == 4


def test_namespaces_never_mix(store_at: str) -> None:
    with (
        Store.open(store_at, "user-1", models=MODELS) as one,
        Store.open(store_at, "user-2", models=MODELS) as two,
    ):
        one.add("Ana keeps bees in Porto.")
        two.add("Bruno repairs clocks in Oslo.")
        assert "Bruno" not in one.context("Who repairs clocks?").text
        assert "Ana" not in two.context("Who keeps bees?").text
        assert one.namespaces() == ["user-1", "user-2"] and one.head().records == 1
        one.delete(["r1"])
        assert "Bruno repairs clocks" in two.context("Who repairs clocks?").text  # untouched


# --- bad input ------------------------------------------------------------------------------------


def snapshot(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ({"speaker": "A"}, "has no text"),
        ({"text": 42}, "'text' must be a string"),
        ({"text": "x" * 50_000_000}, "a record holds at most"),
        ({"text": b"caf\xc3\xa9 \xff"}, "bytes; decode it"),
        ("bad \udcff surrogate", "not valid Unicode"),
        ({"text": "ok", "metadata": {"when": object()}}, "not JSON-serialisable"),
        ([], "nothing to add"),
        ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], "appears twice"),
    ],
)
def test_bad_records_are_refused_and_the_file_is_unchanged(
    tmp_path: Path, records: object, message: str
) -> None:
    path = tmp_path / "bad.muster"
    with Store.open(path) as store:
        store.add("a good record", request_id="good")
    before = snapshot(path)
    with Store.open(path) as store:
        with pytest.raises(InputError, match=message):
            store.add(records, request_id="bad")
        assert store.head().records == 1
    assert snapshot(path) == before


def test_bad_paths_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        Store.open(tmp_path / "missing" / "x.muster")
    assert not (tmp_path / "missing").exists()
    text_file = tmp_path / "notes.txt"
    text_file.write_text("just some notes\n")
    with pytest.raises(StoreError, match="not a MUSTER store"):
        Store.open(text_file)
    assert text_file.read_text() == "just some notes\n"
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    before = other.read_bytes()
    with pytest.raises(StoreError, match="SQLite file but not a MUSTER store"):
        Store.open(other)
    assert other.read_bytes() == before
    newer = tmp_path / "newer.muster"
    Store.open(newer).close()
    db = sqlite3.connect(newer)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    before = newer.read_bytes()
    with pytest.raises(StoreError, match=r"newer MUSTER .*schema 99"):
        Store.open(newer)
    assert newer.read_bytes() == before


def test_an_older_schema_is_migrated_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.muster"
    with Store.open(path) as store:
        store.add("kept across the migration")
    current = store_file.SCHEMA_VERSION
    monkeypatch.setattr(store_file, "SCHEMA_VERSION", current + 1)  # where opening reads them
    migrations = {**store_file.MIGRATIONS, current: "CREATE TABLE notes (note TEXT)"}
    monkeypatch.setattr(store_file, "MIGRATIONS", migrations)
    with Store.open(path) as store:
        assert [r["text"] for r in store.records()] == ["kept across the migration"]
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(current + 1),)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'notes'").fetchone() == ("notes",)


def test_a_damaged_analysis_in_the_file_is_recomputed_not_an_error(tmp_path: Path) -> None:
    """The store file is input: rows of ``analyses`` that are not JSON, or not the right shape,
    cost a recomputation (written back), never a traceback or a different answer."""
    path = tmp_path / "damaged.muster"
    records, questions = locomo_records(60)
    with Store.open(path, models=MODELS) as store:
        store.add(records)
        expected = store.context(questions[0]).text
    damage = ["{not json", '"text"', "[1, 2", '[["a", "a"], [1, 1], 2]', "-1", "[[1, true]]", "null"]
    db = sqlite3.connect(path)
    with db:
        kinds = [kind for (kind,) in db.execute("SELECT DISTINCT kind FROM analyses ORDER BY kind")]
        assert len(kinds) >= 4, kinds
        for kind, bad in zip(kinds, itertools.cycle(damage)):
            db.execute("UPDATE analyses SET value = ? WHERE kind = ?", (bad, kind))
    db.close()
    with Store.open(path, models=MODELS) as store:
        assert store.context(questions[0]).text == expected
        assert sum(store.memo.computed.values()) > 0
    with Store.open(path, models=MODELS) as store:
        assert store.context(questions[0]).text == expected
        assert sum(store.memo.computed.values()) == 0  # the damaged rows were written again


def test_a_schema_1_store_gains_the_analyses_table_and_reads_as_before(tmp_path: Path) -> None:
    """Schema 1 is schema 4 without ``analyses``, ``built``, ``history`` and the requests' body
    hashes: such a file opens, migrates, and reads the same."""
    path = tmp_path / "v1.muster"
    records, questions = locomo_records(40)
    with Store.open(path, models=MODELS) as store:
        store.add(records)
        expected = store.context(questions[0]).text
    db = sqlite3.connect(path)
    with db:
        db.execute("DROP TABLE analyses")
        db.execute("DROP TABLE built")
        db.execute("DROP TABLE history")
        db.execute("ALTER TABLE requests DROP COLUMN body_sha256")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.close()
    with Store.open(path, models=MODELS) as store:
        assert store.context(questions[0]).text == expected
        assert store.embedded == 0 and sum(store.memo.computed.values()) > 0  # analysed once more
    with Store.open(path, models=MODELS) as store:
        assert store.context(questions[0]).text == expected
        assert sum(store.memo.computed.values()) == 0  # and from then on read from the file
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(store_module.SCHEMA_VERSION),
    )


# --- cross-encoder scores -----------------------------------------------------------------------------


def test_reranker_scores_are_cached_in_the_file(tmp_path: Path) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    from muster_exact.models import PACKAGED_MINILM, ModelRef, Models, resolve

    torch.manual_seed(0)
    model_dir = tmp_path / "tiny-cross-encoder"
    CrossEncoder(str(resolve(ModelRef(PACKAGED_MINILM))), num_labels=1, device="cpu").save(str(model_dir))
    models = Models("test", ModelRef(PACKAGED_MINILM), ModelRef(str(model_dir)))
    records, questions = locomo_records(120)
    path = tmp_path / "scores.muster"
    with Store.open(path, models=models) as store:
        store.add(records)
        first = store.context(questions[0]).text
        assert store.memory().scored > 0
    with Store.open(path, models=models) as store:  # a new Memory: only the file remembers
        assert store.context(questions[0]).text == first
        assert store.memory().scored == 0
        assert store.memory().embedded == 0
    rows = sqlite3.connect(path).execute("SELECT COUNT(*) FROM rerank_scores").fetchone()[0]
    assert rows > 0
    fresh = build(records, models=models, cache=False)
    assert fresh.context(questions[0]).text == first


def test_unit_texts_helper_matches_the_memory(tmp_path: Path) -> None:
    records, _ = fact_records(50)
    memory = build(records, models=MODELS)
    assert unit_texts(memory.cut) == memory.unit_texts


# One text file, read by `muster query FILE` (read_file) and by `muster add --store` (read_records_file):
# the same records, the same context. Notes, each its own block; the file's line ends and separators vary.
NOTES = [
    "Ana adopted a cat last spring.\nIts name is Miso and it sleeps on the piano.",
    "Bo moved to Lisbon in May to work at a bakery.",
    "Ana and Bo met at a concert in Porto.",
]


@pytest.mark.parametrize(
    ("line_end", "separator"), [("\r\n", "\n\n"), ("\r", "\n\n"), ("\n", "\n \t\n"), ("\n", "\n\n\n\n")]
)
def test_a_text_file_added_to_a_store_reads_like_the_file(
    tmp_path: Path, line_end: str, separator: str
) -> None:
    from muster_exact.store import read_records_file
    from muster_exact.text.records import read_file

    path = tmp_path / "notes.txt"
    path.write_bytes((separator.join(NOTES) + line_end).replace("\n", line_end).encode())
    source = read_file(path)
    assert [source.record_text(r) for r in source.records] == NOTES
    question = "Where did Bo move?"
    fresh = build(source, models=MODELS, cache=False).context(question).text
    with Store.open(tmp_path / "notes.muster", models=MODELS) as store:
        store.add(read_records_file(path))
        assert [record["text"] for record in store.records()] == NOTES
        stored = store.context(question).text
    # The file's reader sees the blank lines as written; the store joins its records with one.
    assert stored == fresh.replace(separator, "\n\n")


# --- the CLI ---------------------------------------------------------------------------------------------


def muster(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MUSTER_MODELS": MODELS}
    return subprocess.run(
        [sys.executable, "-m", "muster_exact", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )


def test_cli_add_query_info(tmp_path: Path) -> None:
    path = tmp_path / "cli.muster"
    records = tmp_path / "r.jsonl"
    records.write_text(
        '{"speaker": "Ana", "text": "My cat is called Miso."}\n{"speaker": "Bo", "text": "Cute!"}\n'
    )
    first = muster("add", "--store", str(path), str(records), "--request-id", "r1")
    assert first.returncode == 0 and "2 records added" in first.stdout, first.stderr
    again = muster("add", "--store", str(path), str(records), "--request-id", "r1")
    assert "already applied; nothing written" in again.stdout
    piped = muster("add", "--store", str(path), "-", stdin="A note from standard input.\n\nAnd a second one.")
    assert "2 records added" in piped.stdout
    answer = muster("query", "--store", str(path), "What is the cat called?")
    assert answer.returncode == 0 and "My cat is called Miso." in answer.stdout, answer.stderr
    info = muster("info", "--store", str(path), "--json")
    assert json.loads(info.stdout)["head"]["records"] == 4
    for bad, message in (
        (("add", "--store", str(tmp_path / "no" / "x.muster"), str(records)), "does not exist"),
        (("query", "--store", str(records), "q"), "not a MUSTER store"),
        (("add", "--store", str(path), "-"), "is empty"),
        (("query", "--store", str(tmp_path / "never.muster"), "q"), "no store at"),
    ):
        result = muster(*bad, stdin="")
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "never.muster").exists()  # a read leaves no file behind
