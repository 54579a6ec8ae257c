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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_exact.core.errors import DataError
from muster_exact.core.registry import Registry
from muster_exact.text.records import RECORD_SEPARATOR, Source, from_text

MAB_CONFLICT = Path("memoryagentbench/data/Conflict_Resolution.json")
LOCOMO = Path("locomo/locomo10.json")
LOCOMO_REFINED_RAW = Path("locomo_refined/raw/locomo_refined.json")
LOCOMO_REFINED_QUESTIONS = Path("locomo_refined/public/questions.jsonl")
BEAM_DIR = Path("beam")
BEAM_CHAT_FILES = ("chat_trunecated.json", "chat.json")
_SESSION_KEY = re.compile(r"session_(\d+)$")


@dataclass(frozen=True)
class Question:
    """A benchmark question: its id, text, gold answers, category and evidence ids."""

    id: str
    text: str
    gold: tuple[str, ...]
    category: str
    evidence: tuple[str, ...] = ()
    rubric: tuple[str, ...] = ()


@dataclass(frozen=True)
class BenchmarkStore:
    """One benchmark store as presented: its text with record ids, and its questions.

    Not :class:`muster_exact.store.Store` (a persistent memory on disk): this is
    read-only benchmark data.
    """

    benchmark: str
    name: str
    source: Source
    questions: tuple[Question, ...] = ()


def _strings(value: Any) -> tuple[str, ...]:
    """A gold or evidence field as strings (a value, a list, a dict of lists), once each."""
    return tuple(dict.fromkeys(_flat(value)))


def _flat(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, dict):
        return tuple(s for key in value for s in _flat(value[key]))
    if isinstance(value, (list, tuple)):
        return tuple(s for item in value for s in _flat(item))
    return (str(value),)


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


def mab_stores(path: Path) -> Iterator[BenchmarkStore]:
    rows = _load_json(path)
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a list of rows with 'context' and 'metadata'")
    for index, row in enumerate(rows):
        try:
            name = row["metadata"]["source"]
            context = row["context"]
        except (KeyError, TypeError):
            raise DataError(f"{path}: row {index} has no 'context' or 'metadata.source'") from None
        yield BenchmarkStore("memoryagentbench", name, from_text(context), tuple(mab_questions(row, name)))


def mab_questions(row: dict[str, Any], name: str) -> Iterator[Question]:
    ids = (row.get("metadata") or {}).get("qa_pair_ids") or []
    for i, (text, answers) in enumerate(zip(row["questions"], row["answers"], strict=True)):
        qid = ids[i] if i < len(ids) else f"{name}#{i}"
        yield Question(str(qid), str(text), _strings(answers), name)


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


def locomo_stores(path: Path) -> Iterator[BenchmarkStore]:
    samples = _load_json(path)
    if not isinstance(samples, list):
        raise DataError(f"{path}: expected a list of conversations")
    for sample in samples:
        try:
            questions = tuple(locomo_questions(sample))
            yield BenchmarkStore("locomo", sample["sample_id"], locomo_source(sample), questions)
        except (KeyError, TypeError) as exc:
            raise DataError(f"{path}: conversation is missing {exc}") from None


def locomo_questions(sample: dict[str, Any]) -> Iterator[Question]:
    """LoCoMo's QA; category 5 (adversarial) keeps its gold in ``adversarial_answer``."""
    for i, qa in enumerate(sample["qa"]):
        category = str(qa["category"])
        gold = qa.get("adversarial_answer") if category == "5" else qa.get("answer")
        yield Question(
            f"{sample['sample_id']}#q{i:04d}",
            str(qa["question"]),
            _strings(gold),
            category,
            _strings(qa.get("evidence")),
        )


def locomo_refined_stores(raw: Path, questions: Path) -> Iterator[BenchmarkStore]:
    """LoCoMo-Refined: LoCoMo's conversations (raw file) with the refined questions."""
    by_sample: dict[str, list[Question]] = {}
    for number, line in enumerate(questions.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            qa = json.loads(line)
            by_sample.setdefault(qa["sample_id"], []).append(
                Question(
                    qa["qa_id"],
                    str(qa["question"]),
                    _strings(qa["answer"]),
                    str(qa["category"]),
                    _strings(qa.get("evidence")),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{questions}:{number}: not a LoCoMo-Refined question ({exc})") from None
    for sample in _load_json(raw):
        yield BenchmarkStore(
            "locomo_refined",
            sample["sample_id"],
            locomo_source(sample),
            tuple(by_sample.get(sample["sample_id"], ())),
        )


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


BEAM_GOLD_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")


def beam_questions(path: Path, name: str) -> Iterator[Question]:
    """BEAM's probing questions, ability by ability (sorted), in file order."""
    if not path.is_file():
        return
    data = _load_json(path)
    for ability in sorted(data):
        for i, q in enumerate(data[ability]):
            gold = next((q[k] for k in BEAM_GOLD_KEYS if q.get(k)), None)
            yield Question(
                f"{name}#{ability}-{i}",
                str(q["question"]),
                _strings(gold),
                ability,
                _strings(q.get("source_chat_ids")),
                _strings(q.get("rubric")),
            )


def beam_stores(root: Path, scales: Iterable[str] | None = None) -> Iterator[BenchmarkStore]:
    """BEAM conversations that ship a chat, scale by scale (100K, 1M, ...)."""
    wanted = None if scales is None else set(scales)
    for scale in _numeric_names(root) if root.is_dir() else []:
        if wanted is not None and scale.name not in wanted:
            continue
        for conversation in _numeric_names(scale):
            chat_file = beam_chat_file(conversation)
            if chat_file is not None:
                name = f"beam-{scale.name}-{conversation.name}"
                questions = tuple(beam_questions(conversation / "probing_questions.json", name))
                yield BenchmarkStore("beam", name, beam_source(_load_json(chat_file)), questions)


# --- all of them ---------------------------------------------------------------


def find_stores(data_dir: Path) -> Iterator[BenchmarkStore]:
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


# Each benchmark's stores (with questions) from a data root, by the name the harness gives it.
READERS: Registry[Callable[[Path], Iterator[BenchmarkStore]]] = Registry(
    "benchmark",
    {
        "locomo": lambda root: locomo_stores(root / LOCOMO),
        "locomo_refined": lambda root: locomo_refined_stores(
            root / LOCOMO_REFINED_RAW, root / LOCOMO_REFINED_QUESTIONS
        ),
        "mab": lambda root: mab_stores(root / MAB_CONFLICT),
        "beam": lambda root: beam_stores(root / BEAM_DIR),
    },
    error=DataError,
)


def benchmark_stores(benchmark: str, data_dir: Path) -> Iterator[BenchmarkStore]:
    """The stores (with questions) of one benchmark as the harness names it."""
    return READERS.get(benchmark)(Path(data_dir))
