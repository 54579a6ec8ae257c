"""A fifth benchmark through the Benchmark protocol alone: LongMemEval, on a file the test writes.

The file has LongMemEval's own format (entries with question_id, question_type,
haystack sessions with dates and ids, answer_session_ids). It runs through every
stage as users run them: contexts (with evidence recall by session), answer and
judge against the loopback server, rescore, and the side-by-side tables. Nothing
outside ``harness/benchmarks/longmemeval/``, its registration,
``conf/benchmark/longmemeval.yaml`` and this test was written for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import benchmarks
from harness.benchmarks.longmemeval.adapter import data_file
from harness.config import BenchmarkConfig
from harness.data import DataRoot
from tests.conftest import REPO, torch_blocked_env
from tests.harness.fake_llm import FakeLLM
from tests.harness.tiny_data import PEOPLE, PLACES, THINGS

pytestmark = pytest.mark.slow

TYPES = ("single-session-user", "temporal-reasoning", "knowledge-update")


def _session(n: int) -> list[dict[str, str]]:
    chatter = " ".join(f"We also spoke of day {n} and {THINGS[(n + k) % 6]} for a while." for k in range(20))
    return [
        {
            "role": "user",
            "content": f"I took the {THINGS[n % 6]} to {PLACES[n % 6]} with {PEOPLE[n % 6]}. {chatter}",
        },
        {"role": "assistant", "content": f"That sounds lovely; {PLACES[n % 6]} is nice. {chatter}"},
    ]


def entry(k: int) -> dict:
    """One question with a haystack of six sessions; session ``answer_k`` holds the answer."""
    ids = [f"s{k}_{i}" if i != 2 else f"answer_{k}" for i in range(6)]
    return {
        "question_id": f"lme_{k}" + ("_abs" if k == 3 else ""),
        "question_type": TYPES[k % 3],
        "question": f"Where did I take the {THINGS[(k + 2) % 6]}?",
        "answer": PLACES[(k + 2) % 6],
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ids,
        "haystack_dates": [f"2023/05/{10 + i:02d} (Mon) 0{i}:00" for i in range(6)],
        "haystack_sessions": [_session(k + i) for i in range(6)],
        "answer_session_ids": [f"answer_{k}"],
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("longmemeval")
    path = root / "data" / data_file("longmemeval_s")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([entry(k) for k in range(4)], indent=1), encoding="utf-8")
    (root / "manifests").mkdir()
    pins = {data_file("longmemeval_s"): {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}}
    (root / "manifests" / "data.json").write_text(json.dumps({"schema_version": 1, "files": pins}))
    shutil.copyfile(REPO / "manifests" / "scorers.json", root / "manifests" / "scorers.json")
    return root


def harness(root: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """The harness on the tiny split, with the CPU profile and torch unimportable (issue 29: the
    harness's cpu-small runs never need it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env.update(torch_blocked_env(root))
    env["MUSTER_TEST_KEY"] = "test-key"
    command = [
        sys.executable, "-m", "harness", "benchmark=longmemeval", "preset=locomo.u10", "models=cpu-small",
        f"paths.data_root={root / 'data'}", f"paths.manifests={root / 'manifests'}",
        f"paths.results={root / 'runs'}", f"paths.tables={root / 'tables'}",
        f"paths.llm_cache={root / 'llm.sqlite'}", "stage.progress=false", *overrides,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)


def endpoint(fake: FakeLLM, role: str) -> list[str]:
    settings = {"base_url": fake.base_url, "api_key_env": "MUSTER_TEST_KEY", "model": f"fake-{role}"}
    return [f"{role}.{key}={value}" for key, value in {**settings, "prompts": "muster"}.items()]


def only(root: Path, pattern: str) -> Path:
    found = sorted(root.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def test_stores_are_presented_one_block_per_session(tiny: Path) -> None:
    data = DataRoot.open(tiny / "data", tiny / "manifests" / "data.json")
    stores = list(benchmarks.load("longmemeval").stores(data, BenchmarkConfig(name="longmemeval")))
    assert [s.name for s in stores] == ["lme_0", "lme_1", "lme_2", "lme_3_abs"]
    first = stores[0]
    assert first.source.text.startswith("[session s0_0 | 2023/05/10 (Mon) 00:00]\nuser: I took the")
    (question,) = first.questions
    assert question.category == "single-session-user" and question.evidence == ("answer_0",)
    assert question.gold == (PLACES[2],)
    data.checked.clear()
    with pytest.raises(Exception, match="unknown LongMemEval split"):
        list(benchmarks.load("longmemeval").stores(data, BenchmarkConfig(name="longmemeval", splits=["x"])))


def test_contexts_answer_judge_rescore_and_tables(tiny: Path) -> None:
    done = harness(tiny, "stage=contexts")
    assert done.returncode == 0, done.stderr[-3000:]
    contexts = [
        json.loads(x) for x in only(tiny / "runs", "**/muster/*/contexts.jsonl").read_text().splitlines()
    ]
    assert [c["qid"] for c in contexts] == ["lme_0", "lme_1", "lme_2", "lme_3_abs"]
    # Evidence recall is by session id: every record a context shows is a session of its haystack.
    assert all(c["evidence_recall"] in (0.0, 1.0) for c in contexts)
    assert all(r.startswith(("s", "answer_")) for c in contexts for r in c["records"])
    with FakeLLM() as fake:
        answered = harness(tiny, "stage=answer", *endpoint(fake, "reader"))
        assert answered.returncode == 0, answered.stderr[-3000:]
        judged = harness(tiny, "stage=judge", *endpoint(fake, "reader"), *endpoint(fake, "judge"))
        assert judged.returncode == 0, judged.stderr[-3000:]
        assert sum("Gold answer:" in json.dumps(entry.body) for entry in fake.log) == 4  # one verdict each
    rescored = harness(tiny, "stage=rescore", *endpoint(fake, "reader"), *endpoint(fake, "judge"))
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert "rescored tables equal the judge stage's" in rescored.stdout
    judge_dir = only(tiny / "runs", "**/muster/*/answers/fake-reader-*/judge/fake-judge-*")
    table = (judge_dir / "judged.csv").read_text().splitlines()
    assert {"llm_judge", "llm_judge_mean"} <= set(table[0].split(","))
    assert [row.split(",")[0] for row in table[1:]] == [
        "all",
        "knowledge-update",
        "single-session-user",
        "temporal-reasoning",
    ]
    tables = harness(tiny, "stage=tables")
    assert tables.returncode == 0, tables.stderr[-3000:]
    comparison = (tiny / "tables/longmemeval/locomo.u10/cpu-small/comparison.md").read_text()
    assert "| muster |" in comparison and "evidence_recall" in comparison
