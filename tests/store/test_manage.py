"""Managing what a store remembers: ``update`` in place, a reused request id that cannot lose
text, and the empty context of an empty namespace. Real SQLite, real LoCoMo records, the
packaged embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muster_exact.core.errors import InputError, RequestConflict
from muster_exact.memory import build
from muster_exact.store import Store
from tests.store.test_store import MODELS, assert_same_memory, locomo_records, rebuilt

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One file, a namespace per example: vectors are shared by text, each text embedded once.
    return tmp_path_factory.mktemp("manage") / "update.muster"


def test_an_update_reads_like_a_fresh_build_of_the_updated_records(shared_store: Path) -> None:
    records, questions = locomo_records(60)
    texts = [r["text"] for r in records]
    counter = iter(range(10_000))

    @settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        target=st.integers(0, len(records) - 1),
        source=st.integers(0, len(records) - 1),
        read_first=st.booleans(),
        speaker=st.sampled_from(["Caroline", "Melanie", None]),
    )
    def check(target: int, source: int, read_first: bool, speaker: str | None) -> None:
        namespace = f"update-{next(counter)}"
        with Store.open(shared_store, namespace, models=MODELS) as store:
            store.add(records)
            if read_first:  # from a built (and saved) memory, not only from the records
                store.context(questions[0])
            new = {"text": f"{texts[source]} (corrected)", "time": records[target]["time"]}
            if speaker is not None:
                new["speaker"] = speaker
            assert store.update(records[target]["id"], new).changed
            updated = [dict(r) for r in records]
            updated[target] = {"id": records[target]["id"], **new}
            assert list(store.records()) == [json.loads(json.dumps(r)) for r in updated]
            fresh = build(updated, models=MODELS)
            assert [store.context(q).text for q in questions] == [fresh.context(q).text for q in questions]
            assert_same_memory(store.memory(), rebuilt(store), questions)

    check()


def test_an_update_keeps_the_id_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    with Store.open(tmp_path / "u.muster", models=MODELS) as store:
        store.add([{"id": "mug", "text": "The red mug is on the table."}, "The kettle is new."])
        head = store.head()
        same = store.update("mug", "The red mug is on the table.")
        assert not same.changed and store.head() == head  # the same record again writes nothing
        with pytest.raises(InputError, match="no record 'cup' in namespace 'default'; nothing updated"):
            store.update("cup", "A cup.")
        with pytest.raises(InputError, match="carries id 'cup' but updates 'mug'"):
            store.update("mug", {"id": "cup", "text": "A cup."})
        with pytest.raises(InputError, match="text"):
            store.update("mug", {"speaker": "Ana"})
        assert store.head() == head
        store.update("mug", {"text": "The red mug is in the sink.", "metadata": {"room": "kitchen"}})
        assert [r["id"] for r in store.records()] == ["mug", "r2"]  # in place, not moved to the end
        assert next(store.records())["metadata"] == {"room": "kitchen"}


def test_a_patch_changes_the_fields_given_and_keeps_the_others(tmp_path: Path) -> None:
    mug = {
        "id": "mug",
        "text": "The red mug is on the table.",
        "speaker": "Ana",
        "time": "2023-05-08",
        "metadata": {"room": "kitchen", "n": 1},
    }
    kettle = {"id": "k", "text": "The kettle is new.", "role": "Ben", "date": "2023-05-09"}
    with Store.open(tmp_path / "p.muster", models=MODELS) as store:

        def held(record_id: str) -> dict[str, object]:
            return next(r for r in store.records() if r["id"] == record_id)

        store.add([mug, kettle])
        assert store.patch("mug", {"text": "The red mug is in the sink."}).changed
        assert held("mug") == {**mug, "text": "The red mug is in the sink."}
        # RFC 7396: None removes a field; an object merges key by key.
        store.patch("mug", {"metadata": {"n": None, "clean": False}, "time": None})
        assert held("mug") == {
            "id": "mug",
            "text": "The red mug is in the sink.",
            "speaker": "Ana",
            "metadata": {"room": "kitchen", "clean": False},
        }
        store.patch("k", {"speaker": "Cleo"})  # a field replaces its stored alias ('role')
        assert held("k") == {"id": "k", "text": "The kettle is new.", "speaker": "Cleo", "date": "2023-05-09"}
        head = store.head()
        assert not store.patch("k", {"speaker": "Cleo"}).changed and store.head() == head
        for fields, refusal in (
            ({"text": None}, "text cannot be removed"),
            ({}, "nothing to change"),
            ("new text", "must be an object"),
            ({"id": "cup", "text": "A cup."}, "carry id 'cup' but change 'k'"),
            ({"text": "   "}, "empty"),
            ({"speaker": {"first": "Ana"}}, "must be a string or a number"),
        ):
            with pytest.raises(InputError, match=refusal):
                store.patch("k", fields)
        with pytest.raises(InputError, match="no record 'cup' in namespace 'default'; nothing updated"):
            store.patch("cup", {"text": "A cup."})
        assert store.head() == head
        assert [r["id"] for r in store.records()] == ["mug", "k"]  # in place


def test_a_reused_request_id_with_another_body_is_a_conflict_and_writes_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.muster", models=MODELS) as store:
        first = store.add("The red mug is on the table.", request_id="turn-1")
        again = store.add(["The red mug is on the table."], request_id="turn-1")  # the same body
        assert again.replayed and again.ids == first.ids
        head = store.head()
        with pytest.raises(
            RequestConflict, match=r"request_id 'turn-1' was used .* different body"
        ) as raised:
            store.add("The red mug is in the sink.", request_id="turn-1")
        assert isinstance(raised.value, InputError)
        assert store.head() == head and [r["text"] for r in store.records()] == [
            "The red mug is on the table."
        ]
        # Another namespace keeps its own request ids.
        with Store.open(tmp_path / "r.muster", "other", models=MODELS) as other:
            assert not other.add("The red mug is in the sink.", request_id="turn-1").replayed


def test_an_empty_namespace_has_an_empty_context(tmp_path: Path) -> None:
    with Store.open(tmp_path / "e.muster", "nobody", models=MODELS) as store:
        context = store.context("Where is the mug?")
        assert (context.text, context.tokens, context.blocks, context.plan) == ("", 0, (), None)
        with pytest.raises(InputError, match="empty query"):
            store.context("  ")
        with pytest.raises(InputError, match="units"):
            store.context("Where is the mug?", 0)


def test_a_schema_3_store_migrates_and_its_old_request_ids_replay_as_before(tmp_path: Path) -> None:
    """A request applied before bodies were recorded has no hash to compare: it replays, as it did."""
    import sqlite3

    path = tmp_path / "v3.muster"
    with Store.open(path, models=MODELS) as store:
        store.add("The red mug is on the table.", request_id="turn-1")
    db = sqlite3.connect(path)
    with db:
        db.execute("DROP TABLE history")
        db.execute("ALTER TABLE requests DROP COLUMN body_sha256")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.close()
    with Store.open(path, models=MODELS) as store:
        assert store.add("Another body.", request_id="turn-1").replayed
        store.update("r1", "The red mug is in the sink.")  # the history table is there
        store.add("One body.", request_id="turn-2")  # new requests record their body
        with pytest.raises(RequestConflict):
            store.add("Another.", request_id="turn-2")


def test_the_cli_reads_an_empty_namespace_as_empty_and_refuses_a_conflicting_request_id(
    tmp_path: Path,
) -> None:
    from tests.conftest import one_line_error, run_muster

    path = str(tmp_path / "cli.muster")
    env = {"MUSTER_MODELS": MODELS}
    assert (
        run_muster(
            "add", "--store", path, "-", "--request-id", "b1", stdin="The mug is red.", env=env
        ).returncode
        == 0
    )
    again = run_muster("add", "--store", path, "-", "--request-id", "b1", stdin="The mug is red.", env=env)
    assert again.returncode == 0 and "already applied" in again.stdout
    conflict = run_muster(
        "add", "--store", path, "-", "--request-id", "b1", stdin="The mug is blue.", env=env
    )
    one_line_error(
        conflict, "request_id 'b1' was used in namespace 'default' for an add with a different body"
    )
    empty = run_muster(
        "query", "--store", path, "--namespace", "nobody", "Where is the mug?", "--json", env=env
    )
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == {
        "plan": None,
        "context": {"query": "Where is the mug?", "text": "", "tokens": 0, "blocks": [], "provenance": []},
    }
