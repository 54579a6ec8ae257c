"""The Store in PostgreSQL (issue 33): the translation rules of its connection, one by one, and
what a store file does, done on a real server (tests/postgres.py): idempotent adds, conflicts,
updates, forgets with their erase, namespaces, listing, export and import, filters, the schema
and its version, the saved derive result a new process reads, and typed errors. The SQLite
store's own tests are tests/store/test_store.py and its neighbours."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from muster_exact.core.errors import InputError, RequestConflict, StoreError
from muster_exact.store import SCHEMA_VERSION, Store
from muster_exact.store.engines import postgres
from tests.store.test_store import (
    MODELS,
    assert_same_memory,
    counted_in_a_new_process,
    locomo_records,
    rebuilt,
)


def test_each_translation_rule() -> None:
    t = postgres.translated
    # 1. placeholders; a '%' of the store's own is refused rather than misread
    assert (
        t("SELECT a FROM b WHERE c = ? AND d IN (?, ?)") == "SELECT a FROM b WHERE c = %s AND d IN (%s, %s)"
    )
    with pytest.raises(ValueError, match="no '%'"):
        t("SELECT 1 WHERE a LIKE 'x%'")
    # 4. types in DDL only: 8-byte floats and integers, bytes, code-point order, no rowid clause
    assert t(
        "CREATE TABLE v (n INTEGER NOT NULL, s REAL, b BLOB, t TEXT, PRIMARY KEY (n)) WITHOUT ROWID"
    ) == (
        'CREATE TABLE v (n BIGINT NOT NULL, s DOUBLE PRECISION, b BYTEA, t TEXT COLLATE "C", PRIMARY KEY (n))'
    )
    assert t("ALTER TABLE requests ADD COLUMN body_sha256 TEXT") == (
        'ALTER TABLE requests ADD COLUMN body_sha256 TEXT COLLATE "C"'
    )
    assert t("UPDATE meta SET value = CAST(meta.value AS INTEGER) + 1 WHERE key = ?") == (
        "UPDATE meta SET value = CAST(meta.value AS INTEGER) + 1 WHERE key = %s"
    )
    # 5. the listing of tables
    assert t("SELECT name FROM sqlite_master WHERE type = 'table'") == postgres.PG_TABLES


class Recorded:
    """A psycopg connection that records what it is sent (rules 2 and 3 are statements sent)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []

    def execute(self, sql: str, params: object = None) -> None:
        self.sent.append((sql, params))


def test_writers_take_the_lock_and_reads_take_one_snapshot() -> None:
    raw = Recorded()
    db = postgres.Connection(raw)
    db.execute("BEGIN IMMEDIATE")  # 2. a writer
    db.execute("BEGIN")  # 3. a read
    assert raw.sent == [
        ("BEGIN ISOLATION LEVEL READ COMMITTED", None),
        ("SELECT pg_advisory_xact_lock(%s)", (postgres.WRITER_LOCK,)),
        ("BEGIN ISOLATION LEVEL REPEATABLE READ", None),
    ]


def test_a_postgres_store_keeps_the_semantics_of_a_store_file(postgres_url: str, tmp_path: Path) -> None:
    records, questions = locomo_records(40)
    with Store.open(postgres_url, models=MODELS) as store:
        first = store.add(records[:30], request_id="turn-1")
        assert store.add(records[:30], request_id="turn-1").replayed  # a retry writes nothing
        with pytest.raises(RequestConflict):
            store.add(records[30:], request_id="turn-1")
        assert store.head() == first.head and store.head().records == 30
        with pytest.raises(InputError, match="already in namespace"):
            store.add(records[0])
        generated = store.add(["one more line", {"text": "and another"}])
        assert generated.ids == ("r31", "r32")
        store.context(questions[0])
        store.add(records[30:])
        store.context(questions[0])
        assert store.rebuilt_because is None  # grown from the new records, as a store file grows
        store.update(records[2]["id"], {"text": "Caroline moved to Lisbon in May.", "speaker": "Caroline"})
        deleted = store.delete([records[5]["id"], "r31"])
        assert deleted.deleted == (records[5]["id"], "r31") and store.pending_erasures() == 0
        assert assert_same_memory(store.memory(), rebuilt(store), questions) is None
        page = store.list_records(limit=3, offset=1)
        assert [line["record"]["id"] for line in page] == [r["id"] for r in records[1:4]]
        where = store.context(questions[0], where={"speaker": "Caroline"})
        assert all(store_speaker == "Caroline" for store_speaker in _speakers(store, where.record_ids))
    with Store.open(postgres_url, "other", models=MODELS) as other:
        other.add("A line in another namespace.")
        assert other.namespaces() == ["default", "other"] and other.head().records == 1
        lines = list(other.export())
    assert [line["namespace"] for line in lines].count("other") == 1
    with Store.open(postgres_url, "copy", models=MODELS) as again:
        assert again.import_records(lines).skipped == len(lines)  # every line is there already
    with Store.open(tmp_path / "copy.muster", models=MODELS) as copy:  # a file takes the export whole
        assert copy.import_records(lines).to_dict()["total_added"] == len(lines)
        assert list(copy.export()) == lines
    import psycopg

    with psycopg.connect(postgres_url) as db:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["application"] == "muster-store" and meta["schema_version"] == str(SCHEMA_VERSION)


def _speakers(store: Store, ids: tuple[str, ...]) -> list[str]:
    held = {r["id"]: r.get("speaker") for r in store.records()}
    return [held[i] for i in ids]


def test_a_new_process_reads_the_saved_cut_from_the_database(postgres_url: str) -> None:
    records, questions = locomo_records(150)
    with Store.open(postgres_url, models=MODELS) as store:
        store.add(records[:-2])
        store.context(questions[0])
        store.add(records[-2])
        first = store.context(questions[0]).text
    reply = counted_in_a_new_process(postgres_url, questions[0], records[-1])
    # Nothing derived, cut, analysed or embedded: all of it was in the database.
    assert reply["calls"] == {} and reply["computed"] == 0 and reply["embedded"] == 0, reply
    assert reply["text"] == first
    assert reply["after_add"]["rebuilt_because"] is None and reply["after_add"]["recut"] == 1


def test_no_store_a_foreign_database_and_a_bad_url_are_typed_errors(
    postgres_url: str, tmp_path: Path
) -> None:
    with pytest.raises(StoreError, match="no store at"):
        Store.open(postgres_url, create=False)
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (n INTEGER)")
    with pytest.raises(StoreError, match="not a MUSTER store"):
        Store.open(postgres_url)
    with pytest.raises(StoreError) as refused:
        Store.open(postgres_url.rsplit("/", 1)[0] + "/no_such_database")
    password = urlsplit(postgres_url).password
    assert password is None or password not in str(refused.value)
