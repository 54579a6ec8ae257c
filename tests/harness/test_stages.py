"""The harness end to end on tiny stores shaped like each benchmark (written by the tests).

Runs the real app (``python -m harness``) in subprocesses: contexts for every
benchmark against golden hashes, resume after an interruption, sharding,
both launchers, tables, and the bad-input answers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.conftest import run
from tests.harness.tiny_data import write_manifest

pytestmark = pytest.mark.slow

GOLDEN = REPO / "tests" / "golden" / "harness_tiny.json"
PRESET = {"locomo": "locomo.u10", "locomo_refined": "locomo.u10", "mab": "mab.u10", "beam": "beam.u10"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny")
    write_manifest(root / "data", root / "manifests")
    return root


def harness(
    root: Path, *overrides: str, results: str = "runs", data: str = "data", progress: bool = False
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "harness",
        *overrides,
        "models=cpu-small",
        f"paths.data_root={root / data}",
        f"paths.manifests={root / 'manifests'}",
        f"paths.results={root / results}",
        f"paths.tables={root / 'tables'}",
        f"stage.progress={str(progress).lower()}",
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}  # the app sets it itself
    return run(command[3:], env)


def contexts_file(root: Path, benchmark: str, system: str = "muster", results: str = "runs") -> Path:
    found = sorted(
        (root / results / benchmark / PRESET[benchmark] / "cpu-small" / system).glob("*/contexts.jsonl")
    )
    assert len(found) == 1, found
    return found[0]


def hashes(path: Path) -> dict[str, str]:
    return {line["qid"]: line["sha256"] for line in map(json.loads, path.read_text().splitlines())}


def test_contexts_for_every_benchmark_match_the_golden_hashes(tiny: Path) -> None:
    got: dict[str, dict[str, str]] = {}
    for benchmark, preset in PRESET.items():
        result = harness(tiny, f"benchmark={benchmark}", f"preset={preset}")
        assert result.returncode == 0, result.stderr[-3000:]
        path = contexts_file(tiny, benchmark)
        got[benchmark] = hashes(path)
        record = json.loads((path.parent / "run.json").read_text())
        assert record["environment"]["pythonhashseed"] == "0"  # the app re-executed itself
        assert record["identity"]["system"] == "muster" and record["git"]["commit"]
        assert set(record["data"]) and all(len(sha) == 64 for sha in record["data"].values())
        assert (path.parent / "scores.md").is_file() and (path.parent / "scores.csv").is_file()
    parquet = harness(
        tiny,
        "benchmark=mab",
        "preset=mab.u10",
        "benchmark.splits=[Accurate_Retrieval]",
        results="runs-parquet",
    )
    assert parquet.returncode == 0, parquet.stderr[-3000:]
    got["mab:Accurate_Retrieval"] = hashes(contexts_file(tiny, "mab", results="runs-parquet"))
    assert len(got["locomo"]) == 22 and len(got["locomo_refined"]) == 20 and len(got["beam"]) == 8
    assert set(got["mab:Accurate_Retrieval"]) == {"ar_tiny_0", "ar_tiny_1", "ar_tiny_2"}
    if os.environ.get("MUSTER_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(GOLDEN.read_text())


def test_an_interrupted_run_resumes_to_the_same_files(tiny: Path) -> None:
    assert harness(tiny, "benchmark=locomo", "preset=locomo.u10", results="runs-resume").returncode == 0
    path = contexts_file(tiny, "locomo", results="runs-resume")
    complete = path.read_bytes()
    lines = complete.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5]) + lines[5][:40])  # what a kill mid-write leaves
    result = harness(tiny, "benchmark=locomo", "preset=locomo.u10", results="runs-resume")
    assert result.returncode == 0, result.stderr[-3000:]
    assert path.read_bytes() == complete
    resumed = json.loads((path.parent / "run.json").read_text())
    assert resumed["counts"]["resumed"] == 5 and resumed["first_run"]["counts"]["questions"] == 22


def test_progress_in_a_log_is_a_line_per_tenth_and_leaves_the_contexts_alone(tiny: Path) -> None:
    run = ("benchmark=locomo", "preset=locomo.u10")
    assert harness(tiny, *run, results="runs-quiet").returncode == 0
    shown = harness(tiny, *run, results="runs-progress", progress=True)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "\r" not in shown.stderr  # stderr is a pipe: lines, not a bar redrawn in place
    counted = [line for line in shown.stderr.splitlines() if line.startswith("locomo.u10 muster: ")]
    done = {int(line.split(": ")[1].split("/")[0]) for line in counted}
    # 22 questions: a line at each tenth (and between two only where 30 s passed without one)
    assert {3, 5, 7, 9, 11, 14, 16, 18, 20, 22} <= done and len(done) == len(counted), shown.stderr[-3000:]
    assert "q/s, ETA " in counted[0] and counted[-1].startswith("locomo.u10 muster: 22/22 q (100%), ")
    quiet = contexts_file(tiny, "locomo", results="runs-quiet")
    assert contexts_file(tiny, "locomo", results="runs-progress").read_bytes() == quiet.read_bytes()


def test_a_sharded_run_equals_the_unsharded_one(tiny: Path) -> None:
    assert harness(tiny, "benchmark=locomo", "preset=locomo.u10", results="runs-whole").returncode == 0
    for shard in (1, 0):
        result = harness(
            tiny,
            "benchmark=locomo",
            "preset=locomo.u10",
            f"stage.shard={shard}",
            "stage.shards=2",
            results="runs-sharded",
        )
        assert result.returncode == 0, result.stderr[-3000:]
    merged = harness(
        tiny, "benchmark=locomo", "preset=locomo.u10", "stage=merge", "stage.shards=2", results="runs-sharded"
    )
    assert merged.returncode == 0, merged.stderr[-3000:]
    whole = contexts_file(tiny, "locomo", results="runs-whole")
    sharded = contexts_file(tiny, "locomo", results="runs-sharded")
    assert sharded.read_bytes() == whole.read_bytes()
    assert (sharded.parent / "scores.csv").read_bytes() == (whole.parent / "scores.csv").read_bytes()
    # Each shard timed its own questions in a file of its own; the merge joined them.
    timed = [json.loads(x) for x in (sharded.parent / "timings.jsonl").read_text().splitlines()]
    assert {t["qid"] for t in timed if "qid" in t} == set(hashes(whole))


def test_both_launchers_and_the_side_by_side_table(tiny: Path) -> None:
    joblib = harness(
        tiny,
        "-m",
        "benchmark=beam",
        "preset=beam.u10",
        "system=muster,bm25,full_context",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        results="runs-sweep",
    )
    assert joblib.returncode == 0, joblib.stderr[-3000:]
    submitit = harness(
        tiny,
        "-m",
        "benchmark=beam",
        "preset=beam.u10",
        "system=dense,no_graph",
        "hydra/launcher=submitit_local",
        results="runs-sweep",
    )
    assert submitit.returncode == 0, submitit.stderr[-3000:]
    for system in ("muster", "bm25", "full_context", "dense", "no_graph"):
        assert len(contexts_file(tiny, "beam", system, results="runs-sweep").read_text().splitlines()) == 8
    budgets = [
        json.loads(x)["budget"]
        for x in contexts_file(tiny, "beam", "bm25", "runs-sweep").read_text().splitlines()
    ]
    muster = [
        json.loads(x)["tokens"]
        for x in contexts_file(tiny, "beam", "muster", "runs-sweep").read_text().splitlines()
    ]
    assert budgets == muster  # baselines read at MUSTER's token budget
    tables = harness(tiny, "benchmark=beam", "preset=beam.u10", "stage=tables", results="runs-sweep")
    assert tables.returncode == 0, tables.stderr[-3000:]
    table = (tiny / "tables/beam/beam.u10/cpu-small/comparison.md").read_text()
    for system in ("muster", "bm25", "full_context", "dense", "no_graph"):
        assert f"| {system} |" in table
    # The committed table holds deterministic figures only; the measured ones stay with the runs.
    assert "build_s" not in table and "query_ms" not in table
    assert not (tiny / "tables/beam/beam.u10/cpu-small/runs").exists()
    timing = (tiny / "runs-sweep/beam/beam.u10/cpu-small/timings.csv").read_text().splitlines()
    assert timing[0] == "system,build_s,query_ms_p50,run" and len(timing) == 1 + 5


def test_a_changed_data_file_is_named_with_its_expected_hash(tiny: Path) -> None:
    shutil.copytree(tiny / "data", tiny / "data-changed")
    target = tiny / "data-changed/locomo/locomo10.json"
    target.write_text(target.read_text() + " ")
    result = harness(
        tiny, "benchmark=locomo", "preset=locomo.u10", data="data-changed", results="runs-changed"
    )
    expected = json.loads((tiny / "manifests/data.json").read_text())["files"]["locomo/locomo10.json"][
        "sha256"
    ]
    assert result.returncode == 2
    assert "has changed" in result.stderr and str(target) in result.stderr and expected in result.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("benchmark=lcomo", "did you mean locomo"),
        ("preset=beam.u02", "did you mean"),
        ("system=bm52", "did you mean bm25"),
    ],
)
def test_unknown_choices_answer_with_the_closest_names(tiny: Path, override: str, message: str) -> None:
    result = harness(tiny, override)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_missing_data_root(tiny: Path) -> None:
    result = harness(tiny, "benchmark=locomo", data="no-such-dir")
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_tables_before_any_run_says_so_in_one_line(tiny: Path) -> None:
    result = harness(tiny, "benchmark=beam", "preset=beam.u10", "stage=tables", results="runs-none")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: no runs of beam, preset beam.u10"), lines
    assert "run stage=contexts first" in lines[0] and "Traceback" not in result.stderr
