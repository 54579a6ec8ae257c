"""The PostgreSQL store reads exactly as the SQLite store does (issue 33's first acceptance item):
random adds, forgets and updates of real benchmark records (LoCoMo turns, BEAM messages) applied
to a store file and to a PostgreSQL database side by side; after every step each context is
byte-equal and each head the same. A real server (tests/postgres.py), the packaged embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muster_exact.store import Store
from tests.store.test_store import MODELS, beam_records, locomo_records

pytestmark = pytest.mark.slow

SOURCES = {"locomo": lambda: locomo_records(40), "beam": lambda: beam_records(20)}

# One step: ("add", how many of the records not added yet), ("forget", which held ones, as
# fractions of the count), ("update", which held one, whose text it takes).
STEPS = st.one_of(
    st.tuples(st.just("add"), st.integers(1, 16)),
    st.tuples(st.just("forget"), st.lists(st.floats(0, 0.999), min_size=1, max_size=3)),
    st.tuples(st.just("update"), st.tuples(st.floats(0, 0.999), st.floats(0, 0.999))),
)


def contexts(store: Store, questions: list[str]) -> list[str]:
    """Every context of the questions as bytes: text, blocks, records, metadata, provenance, head."""
    out = []
    for q in questions:
        context = store.context(q)
        head = None if context.head is None else context.head.to_dict()
        out.append(json.dumps({**context.to_dict(), "head": head}, sort_keys=True))
    return out


def test_postgres_and_sqlite_stores_give_byte_equal_contexts(tmp_path: Path, postgres_url: str) -> None:
    file = tmp_path / "equal.muster"
    counter = iter(range(10_000))
    loaded = {name: load() for name, load in SOURCES.items()}

    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(source=st.sampled_from(sorted(SOURCES)), steps=st.lists(STEPS, min_size=2, max_size=5))
    def check(source: str, steps: list[tuple]) -> None:
        records, questions = loaded[source]
        namespace = f"{source}-{next(counter)}"
        with (
            Store.open(file, namespace, models=MODELS) as lite,
            Store.open(postgres_url, namespace, models=MODELS) as pg,
        ):
            added = 0
            for n, (kind, arg) in enumerate([("add", 8), *steps]):
                held = [r["id"] for r in lite.records()]
                if kind == "add" and added < len(records):
                    chunk, added = records[added : added + arg], min(len(records), added + arg)
                    results = [s.add(chunk, request_id=f"{namespace}-{n}") for s in (lite, pg)]
                    assert results[0].to_dict() == results[1].to_dict()
                elif kind == "forget" and held:
                    gone = sorted({held[int(f * len(held))] for f in arg})
                    results = [s.delete(gone) for s in (lite, pg)]
                    assert results[0].deleted == results[1].deleted == tuple(gone)
                elif kind == "update" and held:
                    target, text = held[int(arg[0] * len(held))], records[int(arg[1] * len(records))]["text"]
                    for s in (lite, pg):
                        s.update(target, {"text": f"{text} (updated)"})
                assert lite.head() == pg.head()
                assert list(lite.records()) == list(pg.records())
                if lite.head().records:
                    assert contexts(lite, questions) == contexts(pg, questions)
            assert lite.namespace_records()[namespace] == pg.namespace_records()[namespace]

    check()
