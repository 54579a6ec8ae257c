"""Many processes at one file: creating a new store or cache at once, and a read overlapping a delete.

Real processes (spawned, each with its own SQLite connection) released together by a barrier,
so their opens overlap as a burst of ``muster add --store NEW.muster`` (or of test workers
sharing a new vector cache) does; and two connections to one real file, interleaved
deterministically by a hook, for the read that a delete overlaps.
"""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from muster_exact.store import Store

MODELS = "cpu-small"
OPENERS = 12  # enough that most of them raced the creator's schema on the old code
# New files per test: on 2 cores one burst in about five lost the race to switch the new file to
# WAL (SQLite answers "locked" at once there, without waiting), so eight make a miss unlikely.
ROUNDS = 8


def _open_and_add(job: tuple[Path, Any, int]) -> str:
    path, barrier, i = job
    barrier.wait()  # every process opens at the same moment
    try:
        with Store.open(path, models=MODELS) as store:
            store.add({"id": f"n{i}", "text": f"Note {i}: the bike in shed {i} has a flat tyre."})
    except Exception as exc:  # the answer under test: every process must say "ok"
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_processes_creating_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")  # fresh processes, as separate CLI runs are
    with context.Manager() as manager, context.Pool(OPENERS) as pool:
        for attempt in range(ROUNDS):
            path = tmp_path / f"new{attempt}.muster"
            barrier = manager.Barrier(OPENERS)
            answers = pool.map(_open_and_add, [(path, barrier, i) for i in range(OPENERS)])
            assert Counter(answers) == {"ok": OPENERS}, Counter(answers)
            with Store.open(path, create=False) as store:
                assert sorted(r["id"] for r in store.records()) == sorted(f"n{i}" for i in range(OPENERS))
                assert store.head().records == OPENERS


def _open_cache_and_write(job: tuple[str, Path, Any, int]) -> str:
    kind, path, barrier, i = job
    barrier.wait()
    try:
        if kind == "vectors":
            from muster_exact.cache.vectors import VectorCache

            cache = VectorCache(path)
            cache.put("m", [(f"k{i}", b"\0" * 16, 4)])
        else:
            from harness.llm import ResponseCache

            cache = ResponseCache(path)
            cache.put(f"k{i}", "request", "reply", 1, 1)
        cache.close()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


@pytest.mark.parametrize("kind", ["vectors", "llm replies"])
def test_processes_creating_one_new_cache_at_once_all_write_to_it(tmp_path: Path, kind: str) -> None:
    """The vector cache (shared by every test worker and CLI run) and the harness's reply cache:
    each of many processes opening the new file at once gets it, and its write lands."""
    import sqlite3

    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(OPENERS) as pool:
        for attempt in range(ROUNDS):
            path = tmp_path / f"cache{attempt}.sqlite"
            barrier = manager.Barrier(OPENERS)
            jobs = [(kind, path, barrier, i) for i in range(OPENERS)]
            answers = pool.map(_open_cache_and_write, jobs)
            assert Counter(answers) == {"ok": OPENERS}, Counter(answers)
            db = sqlite3.connect(path)
            try:
                table = "vectors" if kind == "vectors" else "replies"
                assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == OPENERS
                assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            finally:
                db.close()


# --- a read that another connection's delete overlaps -----------------------------------------

SECRET = "The locker code of Quillborne Vantrask is 55190."


@pytest.mark.parametrize("call", ["recall", "search", "inspect"])
def test_a_read_overlapping_a_delete_is_labelled_with_the_head_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """The read's snapshot is taken, then another connection deletes a record it holds, then the
    read assembles its answer: the answer holds the deleted text, so its head must be the one
    from before the delete (the head of what it read), never the later one; for a context, a
    search and an inspected read alike."""
    from muster_exact.memory.pipeline import Memory
    from muster_exact.serve.backend import Backend

    path = tmp_path / "overlap.muster"
    with Store.open(path, models=MODELS) as store:
        store.add([f"Note {i}: the plants on shelf {i} need water on Mondays." for i in range(12)])
        before = store.add({"id": "secret", "text": SECRET}).head
    backend = Backend(path, models=MODELS)
    writer = Store.open(path, models=MODELS)
    deleted: list[Any] = []

    def deleting_first(method: Any) -> Any:
        def read(memory: Memory, *args: Any, **kwargs: Any) -> Any:
            if not deleted:  # once: after the read's snapshot, before its answer is assembled
                deleted.append(writer.delete(["secret"]).head)
            return method(memory, *args, **kwargs)

        return read

    monkeypatch.setattr(Memory, "context", deleting_first(Memory.context))
    monkeypatch.setattr(Memory, "explain_query", deleting_first(Memory.explain_query))
    try:
        answer = getattr(backend, call)("What is the locker code of Quillborne?")
        assert deleted and deleted[0] != before  # the delete fell inside the read
        assert "55190" in json.dumps(answer)  # read from the snapshot before the delete
        assert answer["head"] == before.to_dict(), "labelled with a head that does not hold its text"
        context = backend.store().context("What is the locker code of Quillborne?")
        assert "55190" not in context.text and context.head == deleted[0]  # the next read: after
    finally:
        writer.close()
        backend.close()
