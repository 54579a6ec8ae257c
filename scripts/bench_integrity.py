"""What checking a store's integrity costs at 1M tokens (decision 0214).

Builds a store of one BEAM-1M chat's messages (records only: no model is called), then times,
each the best of five runs: reading every record (the read a rebuild does), the same read with
every record's stored SHA-256 checked, and SQLite's own ``PRAGMA quick_check`` and
``integrity_check`` of the whole file; then changes four bytes of one record's text in place and
says what each check finds.

    .venv/bin/python scripts/bench_integrity.py [CHAT_JSON]
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from muster_exact.store import Store

CHAT = Path("/work/shared/data/beam/1M/3/chat.json")


def messages(chat: Path) -> list[dict[str, str]]:
    batches = json.loads(chat.read_text())
    return [
        {"text": turn["content"], "speaker": turn["role"]}
        for batch in batches
        for turns in batch["turns"]
        for turn in turns
        if turn.get("content")
    ]


def best(run: Callable[[], object], times: int = 5) -> float:
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return min(seconds)


def main() -> None:
    chat = Path(sys.argv[1]) if len(sys.argv) > 1 else CHAT
    records = messages(chat)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "beam-1m.muster"
        with Store.open(path) as store:
            start = time.perf_counter()
            store.add(records)
            added = time.perf_counter() - start
            tokens = sum(len(r["text"]) for r in records) / 4  # about 4 characters a token
        db = sqlite3.connect(path)
        select = "SELECT id, CAST(record AS BLOB), sha256 FROM records WHERE namespace = ? ORDER BY seq"

        def read() -> None:
            db.execute(select, ("default",)).fetchall()

        def read_checked() -> None:
            rows = db.execute(select, ("default",)).fetchall()
            bad = [i for i, body, sha in rows if hashlib.sha256(body).hexdigest() != sha]
            assert not bad

        def through_store() -> None:
            with Store.open(path) as store:
                list(store.records())

        result = {
            "records": len(records),
            "tokens_approx": round(tokens),
            "file_mb": round(path.stat().st_size / 1e6, 1),
            "add_s": round(added, 3),
            "read_s": round(best(read), 4),
            "read_and_hash_check_s": round(best(read_checked), 4),
            "open_and_records_s": round(best(through_store), 4),
            "quick_check_s": round(best(lambda: db.execute("PRAGMA quick_check").fetchall()), 4),
            "integrity_check_s": round(best(lambda: db.execute("PRAGMA integrity_check").fetchall()), 4),
        }
        db.close()
        result["after_4_bytes_changed"] = damage_found(path)
    print(json.dumps(result, indent=2))


def damage_found(path: Path) -> dict[str, object]:
    """Four bytes of one record's text changed in place: what each check says."""
    data = path.read_bytes()
    at = data.index(b'"text":"') + 20
    with open(path, "r+b") as file:
        file.seek(at)
        file.write(b"@@@@")
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, CAST(record AS BLOB), sha256 FROM records").fetchall()
    found = {
        "integrity_check": db.execute("PRAGMA integrity_check").fetchall()[0][0],
        "quick_check": db.execute("PRAGMA quick_check").fetchall()[0][0],
        "hash_check_mismatches": sum(hashlib.sha256(b).hexdigest() != sha for _, b, sha in rows),
    }
    db.close()
    return found


if __name__ == "__main__":
    main()
