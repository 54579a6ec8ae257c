"""Benchmark stores as detection sees them (SPEC 8), for ``verify`` and the harness.

Each store is presented as one text, the way the benchmark ships it:

* MemoryAgentBench: the row's ``context`` string as is.
* LoCoMo: one turn per blank-line-separated record, ``[dia_id | session
  date] speaker: text`` (plus the shared image's caption, which some
  questions ask about). Date keys without a session are skipped.
* BEAM: one message per blank-line-separated block, a header line
  ``[role #id | time anchor]`` and then the message with its own blank lines
  kept. ``chat_trunecated.json`` (sic) wins over ``chat.json``, as in the
  official loader.

Every block carries its benchmark id (``dia_id``, message id), so units map
back to evidence ids. Only reading happens here; questions and scoring live
in the harness.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_exact.errors import DataError
from muster_exact.records import RECORD_SEPARATOR, Source, from_text

MAB_CONFLICT = Path("memoryagentbench/data/Conflict_Resolution.json")
LOCOMO = Path("locomo/locomo10.json")
BEAM_DIR = Path("beam")
BEAM_CHAT_FILES = ("chat_trunecated.json", "chat.json")
_SESSION_KEY = re.compile(r"session_(\d+)$")


@dataclass(frozen=True)
class Store:
    benchmark: str
    name: str
    source: Source


def present(blocks: Iterable[tuple[str, str]]) -> Source:
    """Join ``(id, text)`` blocks with blank lines; blocks keep their ids."""
    parts: list[str] = []
    named: list[tuple[int, int, str]] = []
    pos = 0
    for block_id, text in blocks:
        if parts:
            parts.append(RECORD_SEPARATOR)
            pos += len(RECORD_SEPARATOR)
        parts.append(text)
        named.append((pos, pos + len(text), block_id))
        pos += len(text)
    return from_text("".join(parts), named)


def _load_json(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None


# --- MemoryAgentBench -------------------------------------------------------


def mab_stores(path: Path) -> Iterator[Store]:
    rows = _load_json(path)
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a list of rows with 'context' and 'metadata'")
    for index, row in enumerate(rows):
        try:
            name = row["metadata"]["source"]
            context = row["context"]
        except (KeyError, TypeError):
            raise DataError(f"{path}: row {index} has no 'context' or 'metadata.source'") from None
        yield Store("memoryagentbench", name, from_text(context))


# --- LoCoMo ------------------------------------------------------------------


def locomo_turn_text(turn: dict[str, Any], date: str) -> str:
    text = f"[{turn['dia_id']} | {date}] {turn['speaker']}: {turn['text']}"
    if caption := turn.get("blip_caption"):
        text += f" [image: {caption}]"
    return text


def locomo_sessions(conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """(number, date, turns) for each session that exists, in session order."""
    sessions = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.match(key)
        if match and isinstance(turns, list):
            number = int(match.group(1))
            sessions.append((number, str(conversation.get(f"{key}_date_time", "")), turns))
    return sorted(sessions, key=lambda s: s[0])


def locomo_source(sample: dict[str, Any]) -> Source:
    conversation = sample["conversation"]
    return present(
        (turn["dia_id"], locomo_turn_text(turn, date))
        for _, date, turns in locomo_sessions(conversation)
        for turn in turns
    )


def locomo_stores(path: Path) -> Iterator[Store]:
    samples = _load_json(path)
    if not isinstance(samples, list):
        raise DataError(f"{path}: expected a list of conversations")
    for sample in samples:
        try:
            yield Store("locomo", sample["sample_id"], locomo_source(sample))
        except (KeyError, TypeError) as exc:
            raise DataError(f"{path}: conversation is missing {exc}") from None


# --- BEAM --------------------------------------------------------------------


def beam_chat_file(conversation_dir: Path) -> Path | None:
    for name in BEAM_CHAT_FILES:
        if (conversation_dir / name).is_file():
            return conversation_dir / name
    return None


def beam_messages(chat: Any) -> Iterator[tuple[dict[str, Any], str | None]]:
    """(message, batch time anchor) in chat order."""
    if not isinstance(chat, list):
        raise DataError("a BEAM chat must be a list of batches")
    for batch in chat:
        for turn in batch.get("turns", []):
            for message in turn if isinstance(turn, list) else [turn]:
                yield message, batch.get("time_anchor")


def beam_message_text(message: dict[str, Any], batch_anchor: str | None) -> str:
    anchor = message.get("time_anchor") or batch_anchor
    header = f"[{message['role']} #{message['id']}" + (f" | {anchor}]" if anchor else "]")
    return f"{header}\n{message['content']}"


def beam_source(chat: Any) -> Source:
    return present(
        (str(message["id"]), beam_message_text(message, anchor))
        for message, anchor in beam_messages(chat)
        if str(message.get("content", "")).strip()
    )


def _numeric_names(directory: Path) -> list[Path]:
    return sorted(
        (p for p in directory.iterdir() if p.is_dir()),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )


def beam_stores(root: Path) -> Iterator[Store]:
    for scale in _numeric_names(root) if root.is_dir() else []:
        for conversation in _numeric_names(scale):
            chat_file = beam_chat_file(conversation)
            if chat_file is not None:
                yield Store(
                    "beam", f"beam-{scale.name}-{conversation.name}", beam_source(_load_json(chat_file))
                )


# --- all of them ---------------------------------------------------------------


def find_stores(data_dir: Path) -> Iterator[Store]:
    """Every benchmark store found under ``data_dir``, in a fixed order."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(f"data directory {data_dir} does not exist; pass --data DIR (e.g. ../shared/data)")
    found = False
    if (data_dir / MAB_CONFLICT).is_file():
        found = True
        yield from mab_stores(data_dir / MAB_CONFLICT)
    if (data_dir / LOCOMO).is_file():
        found = True
        yield from locomo_stores(data_dir / LOCOMO)
    if (data_dir / BEAM_DIR).is_dir():
        for store in beam_stores(data_dir / BEAM_DIR):
            found = True
            yield store
    if not found:
        raise DataError(
            f"no benchmark stores under {data_dir}: expected {MAB_CONFLICT}, {LOCOMO} or {BEAM_DIR}/"
        )
