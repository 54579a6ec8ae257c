"""Benchmark the SQLite Store: add throughput, and the first read after adding to a 1M-token store.

Base store: every message of BEAM-1M chat 6 as one record (about 1M tokens).
Added records: messages of other BEAM-1M chats (7, 8, 9, 10, 3, 4, 31, 32).

* add throughput: the base records in one ``add`` (one transaction), and
  one record per ``add`` (a transaction each, with request ids), records/s;
* first read after adding 1, 100 and 10,000 records to the built base store
  (re-derive over all records, embed only the new unit texts, build the
  indexes, answer one query), against a fresh ``build()`` of the same
  records with no vector cache (everything embedded) and with the default
  vector cache warm (nothing embedded).

Wall clock on a shared machine, cpu-small profile; a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from muster_exact import __version__, tokens
from muster_exact.corpora import beam_chat_file, beam_messages
from muster_exact.memory import build
from muster_exact.store import Store

MODELS = "cpu-small"
BASE_CHAT = "beam/1M/6"
EXTRA_CHATS = ("beam/1M/7", "beam/1M/8", "beam/1M/9", "beam/1M/10", "beam/1M/3", "beam/1M/4", "beam/1M/31")
QUERY = "What did I decide about the project timeline?"
ADDED = (1, 100, 10_000)


def chat_records(data: Path, folder: str, prefix: str) -> list[dict[str, str]]:
    chat_file = beam_chat_file(data / folder)
    assert chat_file is not None, folder
    chat = json.loads(chat_file.read_text(encoding="utf-8"))
    return [
        {"id": f"{prefix}{m['id']}", "role": str(m["role"]), "text": str(m["content"])}
        for m, _ in beam_messages(chat)
        if str(m.get("content", "")).strip()
    ]


def timed(action):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--out", default="results/bench/store.md")
    args = parser.parse_args()
    data = Path(args.data)
    base = chat_records(data, BASE_CHAT, "c6-")
    extra = [r for i, folder in enumerate(EXTRA_CHATS) for r in chat_records(data, folder, f"x{i}-")]
    assert len(extra) >= max(ADDED), len(extra)
    base_tokens = sum(tokens.count_many([r["text"] for r in base]))
    lines = [
        "# Store benchmark (cpu-small)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_store.py`; muster {__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores. Wall clock on a shared machine.",
        "",
        f"Base store: BEAM-1M chat 6, {len(base):,} messages as records, {base_tokens:,} tokens of text.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # -- add throughput
        with Store.open(work / "bulk.muster") as store:
            _, bulk_s = timed(lambda: store.add(base))
        singles = extra[:2000]
        with Store.open(work / "single.muster") as store:
            _, single_s = timed(lambda: [store.add(r, request_id=r["id"]) for r in singles])
        lines += [
            "## Add throughput (no model is called)",
            "",
            "| how | records | seconds | records/s |",
            "|---|---|---|---|",
            f"| one add of the whole base (one transaction) | {len(base):,} | {bulk_s:.2f} | "
            f"{len(base) / bulk_s:,.0f} |",
            f"| one record per add, with request ids | {len(singles):,} | {single_s:.2f} | "
            f"{len(singles) / single_s:,.0f} |",
            "",
        ]
        # -- the base store, read once (every unit embedded into the file)
        base_path = work / "bulk.muster"
        with Store.open(base_path, models=MODELS) as store:
            _, first_s = timed(lambda: store.context(QUERY))
            base_units = len(store.memory().unit_texts)
            base_embedded = store.embedded
        lines += [
            "## First read after adding records to the built 1M-token store",
            "",
            f"The base store's own first read (a new file: all {base_embedded:,} of {base_units:,} unit "
            f"texts embedded): {first_s:.1f} s.",
            "",
            "| records added | store: first read s | units embedded | fresh build, no cache s | "
            "fresh build, warm cache s | store / fresh no cache |",
            "|---|---|---|---|---|---|",
        ]
        for added in ADDED:
            path = work / f"plus-{added}.muster"
            shutil.copyfile(base_path, path)
            new = extra[:added]
            with Store.open(path, models=MODELS) as store:
                store.add(new)
                _, read_s = timed(lambda: store.context(QUERY))
                embedded = store.embedded
                records = list(store.records())
            _, cold_s = timed(lambda: build(records, models=MODELS, cache=False).context(QUERY))  # noqa: B023
            build(records, models=MODELS).context(QUERY)  # warm the default vector cache
            _, warm_s = timed(lambda: build(records, models=MODELS).context(QUERY))  # noqa: B023
            lines.append(
                f"| {added:,} | {read_s:.1f} | {embedded:,} | {cold_s:.1f} | {warm_s:.1f} | "
                f"{read_s / cold_s:.2f} |"
            )
    lines += [
        "",
        "A first read re-derives the plan over every record and rebuilds BM25 and the graph; it embeds "
        "only unit texts whose (model, SHA-256) the file has not seen, so its cost over a warm fresh build "
        "is the new units' embedding.",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
