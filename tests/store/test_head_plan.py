"""``Store.head().plan``: the plan of the head's records, read from the saved derive result
when the store holds one (no record read, nothing derived), on a real SQLite store of LoCoMo
turns with the packaged embedder."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import muster_exact
from muster_exact import memory
from muster_exact.core.errors import InputError
from muster_exact.store import Head, Store
from tests.store.test_store import locomo_records

pytestmark = pytest.mark.slow
MODELS = "cpu-small"


def test_head_plan_is_the_stores_plan_read_from_its_saved_derive_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records, questions = locomo_records(61)
    path = tmp_path / "head.muster"

    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("head().plan derived the plan or read the records")

    with Store.open(path, models=MODELS) as store:
        store.add(records[:-1])
        fresh = memory.planned(list(store.records()), None, MODELS)[0]  # a fresh derive's plan
        store.context(questions[0])  # built, and its derive result saved
        with monkeypatch.context() as patched:
            patched.setattr(memory, "planned", refused)
            patched.setattr(Store, "_records", refused)
            patched.setattr(Store, "_saved_state", refused)
            assert store.head().plan == fresh  # the built memory's, not even the saved bytes read
    with Store.open(path, models=MODELS) as store:  # a new reader: the saved result's
        with monkeypatch.context() as patched:
            patched.setattr(memory, "planned", refused)
            patched.setattr(Store, "_records", refused)
            head = store.head()
            assert head.plan == fresh
            assert muster_exact.explain(head.plan) == store.explain()  # the plan explain() reads
        # The head's value is as it was: its fields, equality and JSON form.
        assert [f.name for f in dataclasses.fields(Head)] == ["namespace", "records", "last_seq", "sha256"]
        assert head == Head(head.namespace, head.records, head.last_seq, head.sha256)
        assert head.to_dict() == {
            "namespace": "default",
            "records": len(records) - 1,
            "last_seq": head.last_seq,
            "sha256": head.sha256,
        }
        # After an add no saved result is for these records: derived, as a fresh derive gives it.
        store.add(records[-1])
        with pytest.raises(InputError, match="changed since this head was read"):
            head.plan  # noqa: B018 -- a head the store has moved on from
        grown = store.head().plan
        assert grown == memory.planned(list(store.records()), None, MODELS)[0] != fresh
        assert grown.stats.records == len(records)


def test_a_head_with_no_records_or_no_store_has_no_plan(tmp_path: Path) -> None:
    with (
        Store.open(tmp_path / "empty.muster", models=MODELS) as store,
        pytest.raises(InputError, match="is empty; add records first"),
    ):
        store.head().plan  # noqa: B018
    with pytest.raises(InputError, match="not read from an open store"):
        Head("default", 3, 3, "0" * 64).plan  # noqa: B018
