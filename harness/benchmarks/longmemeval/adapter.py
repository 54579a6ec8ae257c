"""LongMemEval (xiaowu0162/LongMemEval): one haystack of chat sessions per question.

Read from LongMemEval's own file format, ``longmemeval/<split>.json`` under
the data root (``longmemeval_s``, ``longmemeval_m``, ``longmemeval_oracle``;
``benchmark.splits`` picks them, ``longmemeval_s`` by default), each file
pinned by SHA-256 in ``manifests/data.json``. A file is a list of entries
with ``question_id``, ``question_type``, ``question``, ``answer``,
``question_date``, ``haystack_session_ids``, ``haystack_dates``,
``haystack_sessions`` (each a list of ``{role, content}`` turns) and
``answer_session_ids``.

Each entry is one store (its own haystack) with one question:

* presentation: one block per session, a header line ``[session <id> |
  <date>]`` then one ``role: content`` line per turn, so a record maps back
  to its session id;
* evidence: the ``answer_session_ids``, so ``stage=contexts`` reports
  evidence recall by session, as LongMemEval's retrieval metric does;
* category: the ``question_type`` (abstention questions, ``*_abs``, keep
  their type);
* judged with one yes/no verdict per run against the gold answer (majority
  and mean over runs); the table is the mean per question type.

No official prompt set: LongMemEval's judge prompts are not pinned here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.benchmark import BenchmarkBase, Judged, Metrics, Verdicts
from harness.config import BenchmarkConfig
from harness.data import DataRoot
from harness.llm.judging import LLM_JUDGE, Request, verdict_metrics, yes_no_request
from muster_exact.core.errors import DataError
from muster_exact.text.records import Source
from muster_exact.verify.corpora import BenchmarkStore, Question, present

SPLITS = ("longmemeval_s", "longmemeval_m", "longmemeval_oracle")


def data_file(split: str) -> str:
    """A split's file, relative to the data root."""
    return f"longmemeval/{split}.json"


def session_text(session_id: str, date: str, turns: list[dict[str, Any]]) -> str:
    header = f"[session {session_id}" + (f" | {date}]" if date else "]")
    return "\n".join([header, *(f"{turn['role']}: {turn['content']}" for turn in turns)])


def entry_source(entry: dict[str, Any]) -> Source:
    """The entry's haystack as one text: one block per session, named by its session id."""
    ids, dates, sessions = entry["haystack_session_ids"], entry["haystack_dates"], entry["haystack_sessions"]
    return present(
        (str(session_id), session_text(str(session_id), str(date), turns))
        for session_id, date, turns in zip(ids, dates, sessions, strict=True)
    )


def entry_store(entry: dict[str, Any]) -> BenchmarkStore:
    qid = str(entry["question_id"])
    question = Question(
        qid,
        str(entry["question"]),
        (str(entry["answer"]),),
        str(entry["question_type"]),
        tuple(str(s) for s in entry.get("answer_session_ids") or ()),
    )
    return BenchmarkStore("longmemeval", qid, entry_source(entry), (question,))


def split_stores(path: Path) -> Iterator[BenchmarkStore]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    if not isinstance(entries, list):
        raise DataError(f"{path}: expected LongMemEval's list of question entries")
    for index, entry in enumerate(entries):
        try:
            yield entry_store(entry)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: entry {index} is not a LongMemEval entry ({exc!r})") from None


class LongMemEval(BenchmarkBase):
    name = "longmemeval"
    preset_family = "locomo"  # chat sessions, as LoCoMo's

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[BenchmarkStore]:
        for split in config.splits or ["longmemeval_s"]:
            if split not in SPLITS:
                raise DataError(f"unknown LongMemEval split {split!r}; choose from {', '.join(SPLITS)}")
            yield from split_stores(data.path(data_file(split)))

    def judge_requests(self, question: Judged, answer: str, corrected: str | None = None) -> list[Request]:
        return [yes_no_request(question, answer)]

    def answer_metrics(self, judged: Judged, answer: str, verdicts: Verdicts, quirks: bool) -> Metrics:
        return verdict_metrics(LLM_JUDGE, verdicts.get("verdict", []))


LONGMEMEVAL = LongMemEval()
