"""Tiny stores shaped like each benchmark, written by the tests (never real data)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

PEOPLE = ["Ana", "Bruno", "Chen", "Dara", "Eli", "Farah"]
PLACES = ["Lisbon", "Porto", "Osaka", "Quito", "Tunis", "Oslo"]
THINGS = ["violin", "garden", "bakery", "novel", "bicycle", "telescope"]


FILLER = ("the weather", "a train ride", "old friends", "the market", "a new recipe", "the river", "music")


def _turn(i: int, speaker: str) -> str:
    """About 250 tokens, so a store has more units than U = 10 reads."""
    p, q, t = PLACES[i % 6], PEOPLE[(i + 2) % 6], THINGS[(i * 5) % 6]
    chatter = " ".join(f"Then we spoke of {FILLER[(i + k) % 7]} for a while." for k in range(22))
    return f"{speaker} talked about the {t} near {p} with {q} on day {i}. {chatter}"


def locomo_sample(sample_id: str, offset: int) -> dict:
    conversation = {"speaker_a": "Ana", "speaker_b": "Bruno"}
    for session in (1, 2, 3):
        conversation[f"session_{session}_date_time"] = f"{session}:00 pm on {session + offset} May, 2023"
        conversation[f"session_{session}"] = [
            {
                "speaker": "Ana" if k % 2 else "Bruno",
                "dia_id": f"D{session}:{k}",
                "text": _turn(session * 10 + k + offset, "Ana" if k % 2 else "Bruno"),
            }
            for k in range(1, 9)
        ]
    conversation["session_4_date_time"] = "never held"  # a date key with no session, as in LoCoMo
    qa = [
        {
            "question": f"Where did they talk about the {THINGS[k % 6]}?",
            "answer": PLACES[k % 6],
            "evidence": [f"D{1 + k % 3}:{1 + k % 8}"],
            "category": 1 + k % 4,
        }
        for k in range(10)
    ]
    qa.append(
        {
            "question": "What did Ana say about Mars?",
            "adversarial_answer": "Not mentioned",
            "evidence": [],
            "category": 5,
        }
    )
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def beam_chat(n: int) -> list:
    batches = []
    for b in range(2):
        turns = []
        for t in range(4):
            mid = b * 8 + t * 2
            turns.append(
                [
                    {
                        "role": "user",
                        "id": mid,
                        "time_anchor": f"March-{b + 1}-2024",
                        "content": _turn(mid + n, "User"),
                    },
                    {
                        "role": "assistant",
                        "id": mid + 1,
                        "content": _turn(mid + 1 + n, "Assistant") + "\n\nSecond paragraph.",
                    },
                ]
            )
        batches.append({"batch_number": b + 1, "turns": turns, "time_anchor": None})
    return batches


def beam_questions() -> dict:
    return {
        "information_extraction": [
            {
                "question": "Where is the violin?",
                "answer": "Lisbon",
                "rubric": ["says Lisbon"],
                "source_chat_ids": [0, 2],
            }
        ],
        "knowledge_update": [
            {
                "question": "Who visited Osaka?",
                "answer": "Chen",
                "rubric": ["Chen"],
                "source_chat_ids": {"original_info": [4], "updated_info": [9]},
            }
        ],
        "abstention": [
            {"question": "What is my cat's name?", "ideal_response": "Not stated", "rubric": ["abstains"]}
        ],
        "event_ordering": [
            {
                "question": "In what order did I mention the violin, the garden and the bakery?",
                "answer": "violin, garden, bakery",
                "rubric": ["the violin", "the garden", "the bakery"],
                "source_chat_ids": [0, 2, 4],
            }
        ],
    }


def write(root: Path) -> dict[str, str]:
    """Write the tiny data root; returns {relative path: SHA-256}."""
    files: dict[str, object] = {}
    samples = [locomo_sample("conv-a", 0), locomo_sample("conv-b", 3)]
    files["locomo/locomo10.json"] = samples
    files["locomo_refined/raw/locomo_refined.json"] = samples
    refined = [
        {
            "qa_id": f"{s['sample_id']}#q{k:04d}",
            "sample_id": s["sample_id"],
            "question": qa["question"],
            "answer": [qa.get("answer", "")],
            "category": str(qa["category"]),
            "evidence": qa["evidence"],
        }
        for s in samples
        for k, qa in enumerate(s["qa"])
        if qa["category"] != 5
    ]
    files["locomo_refined/public/questions.jsonl"] = "\n".join(json.dumps(r) for r in refined) + "\n"
    facts = ["Here is a list of facts:"] + [
        f"{i}. The chairperson of {PLACES[i % 6]} Club is {PEOPLE[(i * 7) % 6]} {THINGS[i % 6].title()}."
        for i in range(30)
    ]
    files["memoryagentbench/data/Conflict_Resolution.json"] = [
        {
            "context": "\n".join(facts),
            "questions": [f"Who is the chairperson of {p} Club?" for p in PLACES],
            "answers": [[f"{PEOPLE[(i * 7) % 6]} {THINGS[i % 6].title()}"] for i in range(24, 30)],
            "metadata": {
                "source": "factconsolidation_sh_tiny",
                "qa_pair_ids": [f"fc_tiny_no{i}" for i in range(6)],
            },
        }
    ]
    files["beam/100K/1/chat.json"] = beam_chat(0)
    files["beam/100K/1/probing_questions.json"] = beam_questions()
    files["beam/100K/2/chat_trunecated.json"] = beam_chat(40)
    files["beam/100K/2/chat.json"] = beam_chat(80)  # the truncated chat wins
    files["beam/100K/2/probing_questions.json"] = beam_questions()
    shas = {}
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content, indent=1)
        path.write_text(text, encoding="utf-8")
        shas[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return shas


def write_parquet(root: Path) -> str:
    """One MemoryAgentBench split in the hub's parquet schema; returns its SHA-256."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / "memoryagentbench/hf/data/Accurate_Retrieval-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    context = "\n\n".join(_turn(i, PEOPLE[i % 6]) for i in range(40))
    table = pa.table(
        {
            "context": [context],
            "questions": [[f"Who talked about the {t}?" for t in THINGS[:3]]],
            "answers": [[[p] for p in PEOPLE[:3]]],
            "metadata": [{"source": "ruler_qa_tiny", "qa_pair_ids": ["ar_tiny_0", "ar_tiny_1", "ar_tiny_2"]}],
        }
    )
    pq.write_table(table, path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(root: Path, manifests: Path) -> None:
    shas = write(root)
    parquet = write_parquet(root)
    manifests.mkdir(parents=True, exist_ok=True)
    (manifests / "data.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "files": {path: {"sha256": sha} for path, sha in shas.items()},
                "memoryagentbench_hub": {
                    "repo": "test/none",
                    "revision": "0" * 40,
                    "files": {"Accurate_Retrieval": parquet},
                },
            },
            indent=1,
        )
    )
