"""List, export and import on real benchmark records: a round trip gives a byte-equal export,
importing twice adds nothing, and a dump that cannot be imported whole writes nothing. Through the
library and the real CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from muster_exact.core.errors import InputError
from muster_exact.store import Store
from tests.conftest import one_line_error, run_muster
from tests.store.test_store import beam_records, fact_records, locomo_records

pytestmark = pytest.mark.slow
MODELS = "cpu-small"  # listing, export and import call no model


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three namespaces of real records: a LoCoMo chat, FactConsolidation lines, BEAM messages;
    with request ids, generated and given ids, metadata and an update."""
    path = tmp_path_factory.mktemp("dump") / "source.muster"
    turns, _ = locomo_records(120)
    facts, _ = fact_records(80)
    messages, _ = beam_records(30)
    with Store.open(path, "locomo", models=MODELS) as store:
        for start in range(0, len(turns), 40):
            chunk = [
                {**t, "metadata": {"session": start // 40, "source": "locomo"}}
                for t in turns[start : start + 40]
            ]
            store.add(chunk, request_id=f"batch-{start}")
        store.update(turns[5]["id"], {**turns[5], "text": turns[5]["text"] + " (edited)"})
    with Store.open(path, "facts", models=MODELS) as store:
        store.add(facts)  # strings: ids r1, r2, ... generated
    with Store.open(path, "beam", models=MODELS) as store:
        store.add(messages, request_id="beam-1")
    return path


def export_text(path: Path) -> str:
    from muster_exact.store.dump import dumped

    with Store.open(path, models=MODELS) as store:
        return "".join(dumped(line) for line in store.export())


def test_export_import_round_trip_is_byte_equal_and_importing_twice_adds_nothing(
    source: Path, tmp_path: Path
) -> None:
    dump = export_text(source)
    lines = dump.splitlines()
    assert len(lines) == 120 + 80 + 30
    assert [json.loads(line)["namespace"] for line in lines] == ["beam"] * 30 + ["facts"] * 80 + [
        "locomo"
    ] * 120
    first = json.loads(lines[110])
    assert (
        first["record"]["metadata"] == {"session": 0, "source": "locomo"} and first["request_id"] == "batch-0"
    )
    target = tmp_path / "target.muster"
    with Store.open(target, models=MODELS) as store:
        result = store.import_records(lines)
        assert result.added == {"beam": 30, "facts": 80, "locomo": 120} and result.skipped == 0
        heads = {ns: Store.open(target, ns, models=MODELS).head() for ns in ("beam", "facts", "locomo")}
        again = store.import_records(lines)
        assert again.added == {} and again.skipped == 230
    assert export_text(target) == dump
    for namespace, head in heads.items():
        with Store.open(target, namespace, models=MODELS) as store:
            assert store.head() == head  # the second import wrote nothing
    # The same records in the same order: the same content hash as the source's namespace.
    for namespace in ("beam", "facts", "locomo"):
        with (
            Store.open(source, namespace, models=MODELS) as a,
            Store.open(target, namespace, models=MODELS) as b,
        ):
            assert a.head().sha256 == b.head().sha256
    # A request id travels with its records: retrying the original add is a replay.
    with Store.open(target, "beam", models=MODELS) as store:
        messages, _ = beam_records(30)
        assert store.add(messages, request_id="beam-1").replayed


def test_a_listing_is_a_page_of_export_lines(source: Path) -> None:
    with Store.open(source, "locomo", models=MODELS) as store:
        every = list(store.export(every_namespace=False))
        assert store.list_records(10, 0) == every[:10]
        assert store.list_records(50, 100) == every[100:]
        assert store.list_records(5, 500) == []
        with pytest.raises(InputError, match="limit must be a whole number from 1 to 10,000"):
            store.list_records(0)


def test_a_dump_that_cannot_be_imported_whole_writes_nothing(source: Path, tmp_path: Path) -> None:
    lines = export_text(source).splitlines()
    target = tmp_path / "partial.muster"
    with Store.open(target, "facts", models=MODELS) as store:
        store.add({"id": "r7", "text": "Another record under the same id."})
        head = store.head()
        with pytest.raises(InputError, match=r"line 37: namespace 'facts' holds another record with id 'r7'"):
            store.import_records(lines)
        bad = [*lines[:3], '{"namespace": "beam", "record": {"text": "no id"}}']
        with pytest.raises(InputError, match="line 4: the record has no 'id'"):
            store.import_records(bad)
        with pytest.raises(InputError, match="line 2 is not JSON"):
            store.import_records([lines[0], "not json"])
        with pytest.raises(InputError, match="line 1 is not an export line"):
            store.import_records(['{"record": {"id": "a", "text": "x"}}'])
        with pytest.raises(InputError, match="empty text"):
            store.import_records(['{"namespace": "a", "record": {"id": "a", "text": "  "}}'])
        assert store.head() == head and store.namespaces() == ["facts"]


def test_the_cli_lists_exports_imports_and_updates(source: Path, tmp_path: Path) -> None:
    env = {"MUSTER_MODELS": MODELS}
    exported = run_muster("export", "--store", str(source), env=env)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == export_text(source)
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported.stdout)
    target = tmp_path / "cli.muster"
    for expected in (
        "imported 230 records (30 into beam, 80 into facts, 120 into locomo); 0 already there",
        "imported 0 records (none); 230 already there",
    ):
        imported = run_muster("import", "--store", str(target), str(dump), env=env)
        assert imported.returncode == 0 and imported.stdout.strip() == expected, (
            imported.stdout + imported.stderr
        )
    again = run_muster("export", "--store", str(target), env=env)
    assert again.stdout == exported.stdout
    one = run_muster("export", "--store", str(target), "--namespace", "beam", env=env)
    assert one.stdout.splitlines() == exported.stdout.splitlines()[:30]
    listed = run_muster("list", "--store", str(target), "--namespace", "locomo", "--limit", "3", env=env)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 3
    assert listed.stderr.strip() == "records 1-3 of 120 (namespace locomo)"
    as_json = run_muster(
        "list", "--store", str(target), "--namespace", "locomo", "--json", "--offset", "118", env=env
    )
    assert as_json.stdout.splitlines() == exported.stdout.splitlines()[-2:]
    original = json.loads(as_json.stdout.splitlines()[0])["record"]
    record_id = original["id"]
    assert original.get("speaker") and original.get("time"), original  # what the update must keep

    def update(*args: str) -> subprocess.CompletedProcess[str]:
        return run_muster(
            "update", "--store", str(target), "--namespace", "locomo", record_id, *args, env=env
        )

    updated = update("Now it says something else.", "--metadata", '{"edited": true}')
    assert updated.returncode == 0 and f"record {record_id} updated" in updated.stdout, updated.stderr
    # TEXT and the field options change those fields; the speaker and the time stay.
    metadata = original.get("metadata") if isinstance(original.get("metadata"), dict) else {}
    changed = {**original, "text": "Now it says something else.", "metadata": {**metadata, "edited": True}}
    assert stored(target, record_id) == changed
    removed = update("--remove", "time")
    assert removed.returncode == 0, removed.stderr
    assert stored(target, record_id) == {k: v for k, v in changed.items() if k != "time"}
    # --record replaces the whole record: what it leaves out is gone.
    whole = update("--record", '{"text": "Only this."}')
    assert whole.returncode == 0, whole.stderr
    assert stored(target, record_id) == {"id": record_id, "text": "Only this."}
    one_line_error(update(), "nothing to change")
    one_line_error(run_muster("update", "--store", str(target), "nope", "x", env=env), "no record 'nope'")
    one_line_error(run_muster("import", "--store", str(target), str(source), env=env), "binary file")


def stored(store: Path, record_id: str, namespace: str = "locomo") -> dict[str, Any]:
    with Store.open(store, namespace, models=MODELS) as opened:
        return next(r for r in opened.records() if r["id"] == record_id)
