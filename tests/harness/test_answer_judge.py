"""answer -> judge -> rescore end to end, against an OpenAI-compatible server on 127.0.0.1.

The server (tests/harness/fake_llm.py) is the test double for a hosted
model: deterministic replies, chosen requests failing with 429 and 500. The
harness runs as users run it (``python -m harness`` in a subprocess) on the
tiny benchmark-shaped stores, with this repo's own prompt set (the official
ones are third-party files this machine cannot fetch: see test_pinned.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.conftest import run
from tests.harness.fake_llm import Behaviour, FakeLLM
from tests.harness.tiny_data import write_manifest

pytestmark = pytest.mark.slow

PRESET = {"locomo": "locomo.u10", "locomo_refined": "locomo.u10", "mab": "mab.u10", "beam": "beam.u10"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny-llm")
    write_manifest(root / "data", root / "manifests")
    shutil.copyfile(REPO / "manifests" / "scorers.json", root / "manifests" / "scorers.json")
    return root


def command(
    root: Path, benchmark: str, *overrides: str, runs: str = "runs", preset: str | None = None
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "harness",
        f"benchmark={benchmark}",
        f"preset={preset or PRESET[benchmark]}",
        "models=cpu-small",
        f"paths.data_root={root / 'data'}",
        f"paths.manifests={root / 'manifests'}",
        f"paths.results={root / runs}",
        f"paths.tables={root / 'tables'}",
        f"paths.llm_cache={root / 'llm.sqlite'}",
        "stage.progress=false",
        *overrides,
    ]


def endpoint(fake: FakeLLM, role: str, **extra: object) -> list[str]:
    settings = {
        "base_url": fake.base_url,
        "api_key_env": "MUSTER_TEST_KEY",
        "model": f"fake-{role}",
        "prompts": "muster",
        "max_retries": 3,
        **extra,
    }
    return [f"{role}.{key}={value}" for key, value in settings.items()]


def harness(
    root: Path, benchmark: str, *overrides: str, key: str | None = "test-key"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "MUSTER_TEST_KEY")}
    if key is not None:
        env["MUSTER_TEST_KEY"] = key
    return run(command(root, benchmark, *overrides)[3:], env)


def only(root: Path, pattern: str) -> Path:
    found = sorted(root.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("benchmark", list(PRESET))
def test_answer_judge_rescore_on_every_benchmark(tiny: Path, benchmark: str) -> None:
    save_text = "false" if benchmark == "locomo" else "true"  # locomo: the answer stage rebuilds contexts
    done = harness(tiny, benchmark, "stage=contexts", f"stage.save_text={save_text}")
    assert done.returncode == 0, done.stderr[-3000:]
    contexts = lines(only(tiny / "runs" / benchmark, "*/*/muster/*/contexts.jsonl"))
    with FakeLLM(Behaviour(fail_nth={2: 429, 5: 500})) as fake:
        answered = harness(tiny, benchmark, "stage=answer", *endpoint(fake, "reader"))
        assert answered.returncode == 0, answered.stderr[-3000:]
        statuses = [entry.status for entry in fake.log]
        assert statuses[1] == 429 and statuses[4] == 500  # injected, then retried
        # Each distinct request answered once (questions asked twice over one context share one).
        answered_now = fake.answered_hashes()
        distinct = {
            a["request_sha256"]
            for a in lines(
                only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-*/answers.jsonl")
            )
        }
        assert len(answered_now) == len(set(answered_now)) == len(distinct)
        judged = harness(tiny, benchmark, "stage=judge", *endpoint(fake, "reader"), *endpoint(fake, "judge"))
        assert judged.returncode == 0, judged.stderr[-3000:]
        sent = len(fake.log)
        # A finished run resumes to nothing; answering again from scratch costs nothing either:
        # every reply comes from the response cache.
        answers_file = only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-*/answers.jsonl")
        first_answers = sorted(answers_file.read_text().splitlines())
        resumed = harness(tiny, benchmark, "stage=answer", *endpoint(fake, "reader"))
        assert resumed.returncode == 0 and len(fake.log) == sent
        answers_file.unlink()
        again = harness(tiny, benchmark, "stage=answer", *endpoint(fake, "reader"))
        assert again.returncode == 0 and len(fake.log) == sent
        again_answers = [json.loads(x) for x in answers_file.read_text().splitlines()]
        assert all(a["cached"] for a in again_answers)
        assert sorted(json.dumps({**a, "cached": False}) for a in again_answers) == sorted(
            json.dumps({**json.loads(x), "cached": False}) for x in first_answers
        )
    rescored = harness(tiny, benchmark, "stage=rescore", *endpoint(fake, "reader"), *endpoint(fake, "judge"))
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert "rescored tables equal the judge stage's" in rescored.stdout

    answers_dir = only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-*")
    judge_dir = only(answers_dir, "judge/fake-judge-*")
    answers = lines(answers_dir / "answers.jsonl")
    assert sorted(a["qid"] for a in answers) == sorted(c["qid"] for c in contexts)
    by_qid = {c["qid"]: c for c in contexts}
    assert all(a["context_sha256"] == by_qid[a["qid"]]["sha256"] for a in answers)
    assert all(a["answer"] and a["prompt_tokens"] > 0 and len(a["request_sha256"]) == 64 for a in answers)
    for name in ("judged.csv", "judged.md"):
        assert (judge_dir / name).read_bytes() == (judge_dir / "rescored" / name).read_bytes()

    record = json.loads((judge_dir / "run.json").read_text())
    assert record["judge"]["model"] == "fake-judge" and record["reader"]["model"] == "fake-reader"
    assert record["prompts"]["set"] == "muster"
    assert all(len(t["sha256"]) == 64 for t in record["prompts"]["templates"].values())
    assert all(len(sha) == 64 for sha in record["scorers"].values())
    reader_record = json.loads((answers_dir / "run.json").read_text())
    usage = reader_record["usage"]
    assert usage["requests_cached"] == len(answers) and usage["requests_sent"] == 0  # the rerun's record
    assert usage["prompt_tokens"] > 0
    # Over every invocation: the first sent all, the resume nothing, the rerun read all from the cache.
    total = reader_record["usage_total"]
    assert total["requests_sent"] == len({a["request_sha256"] for a in answers})  # each distinct one once
    assert total["requests_sent"] + total["requests_cached"] == 2 * len(answers)
    assert reader_record["totals"]["questions"] == len(answers)
    # FactConsolidation is scored by substring match alone: no judge request there.
    assert (record["usage_total"]["requests_sent"] > 0) == (benchmark != "mab")


def test_judged_metrics_per_benchmark(tiny: Path) -> None:
    """The tables carry each benchmark's own metrics (needs the runs of the test above)."""
    expected = {
        "locomo": {"f1", "llm_judge"},
        "locomo_refined": {"f1", "bleu1", "llm_judge"},
        "mab": {"substring_exact_match"},
        "beam": {"rubric", "rubric_official"},
    }
    for benchmark, metrics in expected.items():
        csv = only(tiny / "runs" / benchmark, "*/*/muster/*/answers/*/judge/*/judged.csv")
        header = csv.read_text().splitlines()[0].split(",")
        assert metrics <= set(header), (benchmark, header)


def test_killed_half_way_the_rerun_sends_no_answered_request_again(tiny: Path) -> None:
    benchmark = "locomo_refined"
    done = harness(tiny, benchmark, "stage=contexts", "stage.save_text=true")
    assert done.returncode == 0, done.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["MUSTER_TEST_KEY"] = "test-key"
    overrides = [*endpoint_args("reader-kill"), "stage=answer"]
    with FakeLLM(Behaviour(hold_after=7)) as fake:
        args = command(tiny, benchmark, *overrides, f"reader.base_url={fake.base_url}")
        process = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert fake.wait_for_arrivals(8, timeout=300), "the run never reached the held request"
        time.sleep(0.2)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        first = fake.answered_hashes()
        assert len(first) == 7
        fake.behaviour.hold_after = None
        fake.release.set()
        rerun = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        answered = fake.answered_hashes()
    assert len(answered) == len(set(answered)), "a request answered once was sent again"
    answers = lines(only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-kill-*/answers.jsonl"))
    assert len(answers) == len({a["qid"] for a in answers}) == 20  # every question once
    # Questions asked twice over one context are one request: each distinct request answered once.
    assert len({a["request_sha256"] for a in answers}) == len(answered)


def endpoint_args(model: str) -> list[str]:
    return [
        "reader.api_key_env=MUSTER_TEST_KEY",
        f"reader.model=fake-{model}",
        "reader.prompts=muster",
        "reader.concurrency=1",
        "reader.max_retries=0",
    ]


def test_failures_are_recorded_per_question_and_errors_are_clear(tiny: Path) -> None:
    benchmark = "locomo"
    done = harness(tiny, benchmark, "stage=contexts")  # resumes to nothing when an earlier test ran it
    assert done.returncode == 0, done.stderr[-3000:]
    # The reader answers one question with nothing; the judge answers prose where JSON is needed.
    empty = "Where did they talk about the violin?"
    with FakeLLM(Behaviour(empty_marker=empty, not_json_marker="garden")) as fake:
        reader = endpoint(fake, "reader", model="fake-reader-failing")
        judge = endpoint(fake, "judge", model="fake-judge-failing")
        answered = harness(tiny, benchmark, "stage=answer", *reader)
        assert answered.returncode == 0, answered.stderr[-3000:]
        judged = harness(tiny, benchmark, "stage=judge", *reader, *judge)
        assert judged.returncode == 0, judged.stderr[-3000:]
        no_key = harness(tiny, benchmark, "stage=answer", *reader, key=None)
    answers_dir = only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-failing-*")
    answers = lines(answers_dir / "answers.jsonl")
    failed = [a for a in answers if a.get("failure")]
    assert failed and all(a["failure"] == "empty reply" and a["answer"] is None for a in failed)
    judgments = lines(only(answers_dir, "judge/*/judgments.jsonl"))
    assert any("not a JSON object" in f["reason"] for j in judgments for f in j.get("judge_failures", []))
    table = (only(answers_dir, "judge/*/judged.csv")).read_text().splitlines()
    header, overall = table[0].split(","), table[1].split(",")
    assert int(overall[header.index("failed")]) == len(failed)
    assert int(overall[header.index("judge_failed")]) > 0

    assert no_key.returncode == 2 and "MUSTER_TEST_KEY is not set" in no_key.stderr
    assert "Traceback" not in no_key.stderr
    wrong_url = harness(
        tiny,
        benchmark,
        "stage=answer",
        *reader,
        "reader.base_url=http://127.0.0.1:9/v1",
        "reader.max_retries=0",
    )
    assert wrong_url.returncode == 2 and "cannot reach http://127.0.0.1:9/v1" in wrong_url.stderr
    assert "Traceback" not in wrong_url.stderr
    # The answers written before stay: nothing is lost by a failed rerun.
    assert len(lines(answers_dir / "answers.jsonl")) == len(answers)
    no_answers = harness(
        tiny,
        "locomo_refined",
        "stage=judge",
        *endpoint_args("never-ran"),
        "judge.api_key_env=MUSTER_TEST_KEY",
    )
    assert no_answers.returncode == 2 and "run stage=answer first" in no_answers.stderr
