"""stage=published, MemoryAgentBench part: the nous-memoryAgentBench outputs re-scored offline.

On the real files (read in place, skipped where the data root lacks them): the
stage writes both tables, the same bytes on every run and the same bytes as
the committed ``results/audit`` tables; each row's n is the file's line count
and its recorded figure the mean of the file's own verdict field, both read
here independently. On synthetic lines written by the test: our verdicts
under the official metric, including where normalisation and parsing decide.
No third-party text is written anywhere.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.benchmarks.mab import published as published_mab
from harness.data import DataRoot, sha256_file
from muster_exact.core.errors import DataError
from tests.conftest import REPO

TABLES = ("published.csv", "published.md", "published_mab.csv", "published_mab.md")


@pytest.fixture(scope="module")
def published_data(data: Path) -> Path:
    missing = [f.relative for f in published_mab.FILES if not (data / f.relative).is_file()]
    if missing:
        pytest.skip(f"data root {data} lacks the published MemoryAgentBench outputs ({missing[0]}, ...)")
    return data


def run_stage(data: Path, tables: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "OPENAI_API_KEY")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "stage=published",
            f"paths.data_root={data}",
            f"paths.tables={tables}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "re-scored offline" in result.stdout


@pytest.fixture(scope="module")
def two_runs(published_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    run_stage(published_data, first)
    run_stage(published_data, second)
    return first / "audit", second / "audit"


def test_the_stage_writes_both_tables_the_same_bytes_every_run(two_runs: tuple[Path, Path]) -> None:
    first, second = two_runs
    for name in TABLES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
        # The committed tables are what this code writes.
        assert (first / name).read_bytes() == (REPO / "results" / "audit" / name).read_bytes(), name


def test_n_and_recorded_figure_are_the_files_own(published_data: Path, two_runs: tuple[Path, Path]) -> None:
    rows = list(csv.DictReader((two_runs[0] / "published_mab.csv").open(encoding="utf-8")))
    by_file = {row["file"]: row for row in rows if row["official"] == "yes"}
    pooled_n = pooled_accepted = 0
    for published in published_mab.FILES:
        lines = (published_data / published.relative).read_text(encoding="utf-8").splitlines()
        verdicts = [json.loads(line)[published.verdict_field] for line in lines]
        row = by_file[published.name]
        assert int(row["n"]) == len(lines)
        assert float(row["theirs"]) == round(sum(verdicts) / len(verdicts), 4)
        if published.in_overall and row["ours"]:
            pooled_n += len(lines)
            pooled_accepted += sum(verdicts)
    pooled = by_file["all (pooled)"]
    assert int(pooled["n"]) == pooled_n
    assert float(pooled["theirs"]) == round(pooled_accepted / pooled_n, 4)


def test_judge_sources_are_not_rescored(two_runs: tuple[Path, Path]) -> None:
    rows = list(csv.DictReader((two_runs[0] / "published_mab.csv").open(encoding="utf-8")))
    judged = [row for row in rows if row["metric"] == published_mab.LLM_JUDGE]
    assert judged and all(row["ours"] == "" and "not re-scored offline" in row["note"] for row in judged)
    assert all(row["official"] == "no" for row in rows if row["note"] == "not the official metric")


# ---------------------------------------------------------------- synthetic lines, known verdicts


def synthetic_root(tmp_path: Path, relative: str, lines: list[dict[str, object]]) -> DataRoot:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return DataRoot(tmp_path, {"files": {relative: {"sha256": sha256_file(path)}}})


def line(source: str, answer: str, gold: str, correct: bool, qid: str = "q") -> dict[str, object]:
    return {"source": source, "qa_pair_id": qid, "answer": answer, "golds": [gold], "correct": correct}


def test_our_verdicts_on_synthetic_lines(tmp_path: Path) -> None:
    published = published_mab.PublishedFile("synthetic", "x/fc.jsonl", "correct", "substring")
    lines = [
        # normalisation decides: case, the article and the full stop go, the gold is inside
        line("factconsolidation_sh_6k", "It is The Eiffel Tower.", "eiffel tower", False, "a"),
        line("factconsolidation_sh_6k", "Paris", "London", True, "b"),
        line("factconsolidation_sh_6k", "London", "London", True, "c"),
    ]
    [comparison] = published_mab.compare(synthetic_root(tmp_path, published.relative, lines), published)
    assert comparison.metric == "substring_exact_match" and comparison.ours == (True, False, True)
    assert [row.qid for row in comparison.disagreeing("we_accept")] == ["a"]
    assert [row.qid for row in comparison.disagreeing("they_accept")] == ["b"]
    row = published_mab.row(comparison)
    assert (row["n"], row["theirs"], row["ours"]) == (3, round(2 / 3, 4), round(2 / 3, 4))


def test_icl_and_eventqa_parse_as_upstream(tmp_path: Path) -> None:
    icl = published_mab.PublishedFile("icl", "x/icl.jsonl", "correct", "label_exact")
    lines = [
        line("icl_banking77_5900shot_balance", "label: 18", "18", True, "a"),  # `label 18` is not `18`
        line("icl_banking77_5900shot_balance", "18", "18", True, "b"),
        line("icl_banking77_5900shot_balance", "Answer: 18\nlabel: 7", "18", False, "c"),  # after Answer:
    ]
    [comparison] = published_mab.compare(synthetic_root(tmp_path, icl.relative, lines), icl)
    assert comparison.metric == "exact_match" and comparison.ours == (False, True, True)
    # their rule (the text after `label:`) gives the file's verdicts back
    assert [published_mab.THEIR_RULES["label_exact"][1](row) for row in comparison.answers] == [
        True,
        True,
        False,
    ]

    eventqa = published_mab.PublishedFile(
        "eventqa", "x/e.jsonl", "correct", "eventqa_recall", also=("eventqa_recall",)
    )
    lines = [line("eventqa_131072", "The next event is:\nKali left the house.", "Kali left the house.", True)]
    official, recall = published_mab.compare(synthetic_root(tmp_path / "e", eventqa.relative, lines), eventqa)
    assert (official.metric, official.ours) == ("substring_exact_match", (False,))  # first line only
    assert (recall.metric, recall.ours, recall.headline) == ("eventqa_recall", (True,), False)


def test_a_judged_source_is_reported_not_rescored(tmp_path: Path) -> None:
    published = published_mab.PublishedFile("lme", "x/lme.jsonl", "correct", published_mab.LLM_JUDGE)
    lines = [
        line("longmemeval_s*", "17 fish", "17", True),
        line("longmemeval_s*", "no idea", "17", False, "b"),
    ]
    [comparison] = published_mab.compare(synthetic_root(tmp_path, published.relative, lines), published)
    row = published_mab.row(comparison)
    assert (row["metric"], row["ours"], row["theirs"]) == (published_mab.LLM_JUDGE, None, 0.5)
    assert row["note"] == "judge metric: not re-scored offline"


def test_a_broken_line_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"source": "ruler_qa1_197K", "answer": "x", "golds": ["x"]}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:1"):
        published_mab.load_answers(path, "correct")
    path.write_text(json.dumps(line("ruler_qa1_197K", "x", "x", True) | {"correct": "yes"}) + "\n")
    with pytest.raises(DataError, match="true/false"):
        published_mab.load_answers(path, "correct")


def test_the_stage_loads_no_model_library() -> None:
    code = (
        "import sys, harness.stages.published\n"
        "print(','.join(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert result.stdout.strip() == ""
