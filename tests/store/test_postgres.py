"""The Store in PostgreSQL (issue 33): the translation rules of its connection, one by one, and
what a store file does, done on a real server (tests/postgres.py): idempotent adds, conflicts,
updates, forgets with their erase, namespaces, listing, export and import, filters, the schema
and its version, the saved derive result a new process reads, and typed errors. The SQLite
store's own tests are tests/store/test_store.py and its neighbours."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from muster_exact.core.errors import (
    ErasePending,
    InputError,
    RequestConflict,
    StoreError,
    StoreReadOnly,
    StoreUnavailable,
)
from muster_exact.store import SCHEMA_VERSION, Store
from muster_exact.store.engines import postgres
from tests.conftest import REPO
from tests.postgres import PostgresCluster
from tests.store.test_store import (
    MODELS,
    assert_same_memory,
    counted_in_a_new_process,
    locomo_records,
    muster,
    rebuilt,
)

pytestmark = pytest.mark.slow  # real LoCoMo records, the packaged embedder


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

    closed = False

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
    for url in (postgres_url, postgres_url.replace("postgresql://", "postgres://", 1)):
        with pytest.raises(StoreError, match="no store at postgres"):  # a database, not a file path
            Store.open(url, create=False)
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (n INTEGER)")
    with pytest.raises(StoreError, match="not a MUSTER store"):
        Store.open(postgres_url)
    with pytest.raises(StoreError) as refused:
        Store.open(postgres_url.rsplit("/", 1)[0] + "/no_such_database")
    password = urlsplit(postgres_url).password
    assert password is None or password not in str(refused.value)


CANARY = "zqcanaryfox"


def database_files_holding(cluster: PostgresCluster, url: str, needle: bytes) -> list[str]:
    """The files of the database ``url`` names that hold ``needle``, after a checkpoint wrote
    every page to them (the write-ahead log is not looked in: docs/security.md)."""
    name = urlsplit(url).path.lstrip("/")
    with cluster.admin() as admin:
        admin.execute("CHECKPOINT")
        oid = admin.execute("SELECT oid FROM pg_database WHERE datname = %s", (name,)).fetchone()[0]
    folder = cluster.data_dir / "base" / str(oid)
    return sorted(f.name for f in folder.iterdir() if f.is_file() and needle in f.read_bytes())


def test_forget_leaves_the_text_in_none_of_the_database_files(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    records, questions = locomo_records(20)
    secret = {"speaker": "Caroline", "text": f"My locker code is {CANARY} 4471."}
    with Store.open(postgres_url, models=MODELS) as store:
        store.add([*records, secret], request_id="with-secret")
        store.context(questions[0])  # analyses, vectors and the derive result of the text written too
        store.context(f"What is the {CANARY} code?")
        assert database_files_holding(postgres_cluster, postgres_url, CANARY.encode())  # the check can fail
        store.delete(["r21"])
        assert store.pending_erasures() == 0
    assert database_files_holding(postgres_cluster, postgres_url, CANARY.encode()) == []


def test_a_forget_waits_for_an_older_snapshot_then_erases_when_it_ends(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.setattr("muster_exact.store.store.ERASE_WAIT_MS", 300)
    with Store.open(postgres_url, models=MODELS) as store:
        store.add(["The spare key is under the blue pot.", "The bins go out on Tuesday."])
        with psycopg.connect(postgres_url) as reader:  # another replica's read, mid-snapshot
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            reader.execute("SELECT count(*) FROM records").fetchone()
            with pytest.raises(ErasePending) as pending:
                store.delete(["r1"])
            assert pending.value.result.deleted == ("r1",) and store.pending_erasures() == 1
            reader.execute("COMMIT")
        # The background retry finishes it once the snapshot is gone.
        deadline = time.monotonic() + 30
        while store.pending_erasures() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.pending_erasures() == 0
        assert [r["text"] for r in store.records()] == ["The bins go out on Tuesday."]


def test_the_cli_takes_a_database_url_for_store(postgres_url: str, tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text(
        '{"speaker": "Ana", "text": "My cat is called Miso."}\n{"speaker": "Bo", "text": "Cute!"}\n'
    )
    first = muster("add", "--store", postgres_url, str(records), "--request-id", "r1")
    assert first.returncode == 0 and "2 records added" in first.stdout, first.stderr
    again = muster("add", "--store", postgres_url, str(records), "--request-id", "r1")
    assert "already applied; nothing written" in again.stdout
    answer = muster("query", "--store", postgres_url, "What is the cat called?")
    assert answer.returncode == 0 and "My cat is called Miso." in answer.stdout, answer.stderr
    forgot = muster("forget", "--store", postgres_url, "--id", "r2")
    assert forgot.returncode == 0 and "1 records deleted" in forgot.stdout, forgot.stderr
    info = json.loads(muster("info", "--store", postgres_url, "--json").stdout)
    password = urlsplit(postgres_url).password
    assert info["head"]["records"] == 1 and info["pending_erasures"] == 0
    assert password is not None and password not in info["path"] and "***" in info["path"]
    exported = muster("export", "--store", postgres_url)
    assert [json.loads(line)["record"]["id"] for line in exported.stdout.splitlines()] == ["r1"]
    wrong = postgres_url.replace(password, "not-the-password")
    refused = muster("info", "--store", wrong)
    assert refused.returncode == 2 and "refused the login" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert "not-the-password" not in refused.stderr


def test_a_role_that_may_only_read_opens_the_store_read_only(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    with Store.open(postgres_url, models=MODELS) as store:
        store.add(["The spare key is under the blue pot.", "The bins go out on Tuesday."])
        expected = store.context("Where is the key?").text
    name = urlsplit(postgres_url).path.lstrip("/")
    reader = f"reader_{name}"
    with postgres_cluster.admin(name) as admin:
        admin.execute(f"CREATE ROLE \"{reader}\" LOGIN PASSWORD 'read-only'")
        admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{reader}"')
    try:
        with Store.open(postgres_cluster.url(name, reader, "read-only"), models=MODELS) as store:
            assert store.read_only
            assert store.context("Where is the key?").text == expected  # reads work, cache nothing
            with pytest.raises(StoreReadOnly):
                store.add("A new line.")
    finally:
        with postgres_cluster.admin(name) as admin:
            admin.execute(f'DROP OWNED BY "{reader}"')
            admin.execute(f'DROP ROLE "{reader}"')


def test_two_processes_adding_with_one_request_id_apply_it_once(postgres_url: str) -> None:
    adder = textwrap.dedent(
        """
        import sys, time
        from muster_exact.store import Store
        start = float(sys.argv[2])
        with Store.open(sys.argv[1]) as store:
            while time.time() < start:
                pass
            print(store.add(["alpha", "beta", "gamma"], request_id="req-2").replayed)
        """
    )
    with Store.open(postgres_url, models=MODELS) as store:
        store.add(["one", "two"], request_id="req-1")
    start = str(time.time() + 3.0)  # both processes wake at the same moment
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", adder, postgres_url, start], stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        for _ in range(2)
    ]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["False", "True"]
    with Store.open(postgres_url, models=MODELS) as store:
        assert [r["text"] for r in store.records()] == ["one", "two", "alpha", "beta", "gamma"]


def test_a_lost_connection_fails_one_call_typed_and_the_next_connects_again(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    with Store.open(postgres_url, models=MODELS) as store:
        store.add(["The spare key is under the blue pot.", "The bins go out on Tuesday."])
        expected = store.context("Where is the key?").text
        with postgres_cluster.admin() as admin:  # the server ends every session of the store
            name = urlsplit(postgres_url).path.lstrip("/")
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )
        with pytest.raises(StoreUnavailable, match="lost mid-request"):
            store.head()
        assert store.context("Where is the key?").text == expected  # the store and its caches reconnect
        assert store.add("A third line.").head.records == 3


def test_the_http_server_serves_a_database(postgres_url: str) -> None:
    import httpx

    from tests.serve.test_http import Server

    server = Server(postgres_url)  # type: ignore[arg-type]
    try:
        added = httpx.post(
            f"{server.url}/v1/add",
            json={"records": ["The spare key is under the blue pot."], "request_id": "h1"},
        )
        assert added.status_code == 200 and added.json()["head"]["records"] == 1, added.text
        read = httpx.post(f"{server.url}/v1/context", json={"query": "Where is the key?"}, timeout=120)
        assert read.status_code == 200 and "blue pot" in read.json()["context"], read.text
        gone = httpx.post(f"{server.url}/v1/delete", json={"ids": ["r1"]})
        assert gone.status_code == 200 and gone.json()["deleted"] == ["r1"], gone.text
    finally:
        server.stop()
    password = urlsplit(postgres_url).password
    assert "serving postgresql://" in server.stderr and password and password not in server.stderr


def test_an_older_schema_in_the_database_is_migrated_on_open(postgres_url: str) -> None:
    import psycopg

    with Store.open(postgres_url, models=MODELS) as store:
        store.add(["The spare key is under the blue pot."], request_id="old")
    with psycopg.connect(postgres_url, autocommit=True) as db:  # back to schema 3: no history yet
        db.execute("DROP TABLE history")
        db.execute("ALTER TABLE requests DROP COLUMN body_sha256")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with Store.open(postgres_url, models=MODELS) as store:
        assert store.add(["The spare key is under the blue pot."], request_id="old").replayed
        store.update("r1", "The spare key is under the red pot.")
    with psycopg.connect(postgres_url) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "4"
        assert db.execute("SELECT id, action FROM history").fetchall() == [("r1", "updated")]
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer MUSTER"):
        Store.open(postgres_url)
