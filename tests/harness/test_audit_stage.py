"""stage=audit: a judge run over the published wrong and real LoCoMo answers, with the errata.

The judge is the loopback test double with a rule the test can recompute:
an answer is CORRECT when the gold's text occurs in it. The stage's
false-accept rate and real-answer score must equal that rule applied to the
same answers, read independently here from the published files.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.benchmarks.locomo import audit
from tests.conftest import REPO
from tests.harness.fake_llm import Behaviour, FakeLLM
from tests.harness.test_published_mab import run_stage

pytestmark = pytest.mark.slow
LIMIT = 40
OUTPUTS = "locomo/outputs"


def gold_in_answer(prompt: str) -> str:
    found = re.search(r"Gold answer: (.*?)\nAnswer to grade: (.*?)\n\nReply with", prompt, re.DOTALL)
    if not found:
        return "WRONG"
    gold, answer = found.group(1), found.group(2).replace("\n", " ")
    return "CORRECT" if gold.strip().lower() in answer.lower() else "WRONG"


def expected(path: Path, data: Path, errata: dict[str, audit.Erratum] | None = None) -> float:
    rows = audit.load_judged(path, data / "locomo/locomo10.json")[:LIMIT]
    accepted = 0
    for row in rows:
        gold = audit.corrected_gold(row.qid, row.gold, errata) if errata else row.gold
        accepted += gold.strip().lower() in row.answer.replace("\n", " ").lower()
    return round(accepted / len(rows), 4)


def test_the_audit_reports_false_accepts_beside_real_scores(data: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["MUSTER_TEST_KEY"] = "test-key"
    with FakeLLM(Behaviour(judge_label=gold_in_answer)) as fake:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "stage=audit",
                f"stage.limit={LIMIT}",
                f"paths.data_root={data}",
                f"paths.tables={tmp_path / 'tables'}",
                f"paths.llm_cache={tmp_path / 'llm.sqlite'}",
                f"judge.base_url={fake.base_url}",
                "judge.api_key_env=MUSTER_TEST_KEY",
                "judge.model=fake-judge",
                "judge.prompts=muster",
                "judge.errata=true",
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=600,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    directory = next((tmp_path / "tables" / "audit").glob("fake-judge-*"))
    rows = {(r["file"], r["category"]): r for r in csv.DictReader((directory / "audit.csv").open())}
    errata = audit.load_errata(data / "locomo/errata/locomo-audit_errors.json", data / "locomo/locomo10.json")
    files = {
        "ap-v1": data / OUTPUTS / "locomo-audit_ap-baseline/v1/ap_eval_results_scored.json",
        "ap-v2": data / OUTPUTS / "locomo-audit_ap-baseline/v2/ap_eval_results_scored.json",
        "fc-gpt-4o-mini-cot": data / OUTPUTS / "locomo-audit_fc-baseline/gpt-4o-mini-cot/eval_results.json",
    }
    for name, path in files.items():
        row = rows[(name, "all")]
        assert int(row["n"]) == LIMIT
        assert float(row["our_judge"]) == expected(path, data)
        assert float(row["our_judge_corrected"]) == expected(path, data, errata)
        published = audit.accuracy(audit.load_judged(path, data / "locomo/locomo10.json")[:LIMIT], how="mean")
        assert float(row["published_judge"]) == round(published["all"].value, 4)
    assert (
        rows[("ap-v1", "all")]["answers"] == "wrong"
        and rows[("fc-gpt-4o-mini-cot", "all")]["answers"] == "real"
    )
    record = json.loads((directory / "run.json").read_text())
    assert record["judge"]["model"] == "fake-judge" and record["usage"]["requests_sent"] > 0
    assert "false-accept" in (directory / "audit.md").read_text()


def test_published_outputs_are_rescored_offline(data: Path, tmp_path: Path) -> None:
    """stage=published: the accuracy the published files imply (figures pinned in
    tests/harness/test_audit_outputs.py), as the harness writes them."""
    run_stage(data, tmp_path)
    rows = {(r["file"], r["how"]): r for r in csv.DictReader((tmp_path / "audit" / "published.csv").open())}
    assert float(rows[("fc-gpt-4o-mini-cot", "mean")]["all"]) == 0.7989
    assert float(rows[("fc-gpt-4o-mini-cot", "majority")]["all"]) == 0.7994
    assert float(rows[("fc-gpt-4.1-mini-cot", "mean")]["3"]) == 0.809
    assert float(rows[("ap-v1", "mean")]["all"]) == 0.1061 and float(rows[("ap-v2", "mean")]["all"]) == 0.6281
    assert all(int(r["n"]) == 1540 for r in rows.values())
