"""Peers as systems of the harness, through the one adapter protocol (issue 56; docs/peers.md).

The real peers (mempalace, truememory) live in venvs `make peers` builds, hours of CPU on the
benchmarks, so the protocol is run here through the smallest real adapter: ``peers/run_toy.py``,
a standard-library peer, under this Python. Everything else is the harness as users run it: a
subprocess of ``python -m harness`` on the tiny benchmark-shaped stores, with the real packaged
embedder for native's budget.
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

from tests.conftest import REPO
from tests.harness.test_answer_judge import command as answer_judge_command
from tests.harness.tiny_data import write_manifest

pytestmark = pytest.mark.slow

ADAPTERS = Path(__file__).resolve().parent / "peers"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny-peers")
    write_manifest(root / "data", root / "manifests")
    return root


def harness(
    root: Path, benchmark: str, *overrides: str, runs: str = "runs", preset: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    command = answer_judge_command(root, benchmark, *overrides, runs=runs, preset=preset)
    environment = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "MUSTER_PEER_ADAPTERS": str(ADAPTERS),
        "MUSTER_PEER_PYTHON_TOY": sys.executable,
        "MUSTER_HOME": str(root / "home"),
        **env,
    }
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=environment, timeout=900)


def contexts(root: Path, benchmark: str, system: str) -> list[dict]:
    (path,) = sorted((root / "runs" / benchmark).glob(f"*/*/{system}/*/contexts.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("benchmark", ["locomo", "beam"])
def test_a_peer_runs_as_a_system_filled_to_natives_budget(tiny: Path, benchmark: str, tmp_path: Path) -> None:
    runs_log = tmp_path / "toy.log"
    native = harness(tiny, benchmark, "system=muster_native", "stage.save_text=true")
    assert native.returncode == 0, native.stderr[-3000:]
    done = harness(tiny, benchmark, "system=toy", "stage.save_text=true", TOY_PEER_LOG=str(runs_log))
    assert done.returncode == 0, done.stderr[-3000:]
    ours = {line["qid"]: line for line in contexts(tiny, benchmark, "muster_native")}
    theirs = contexts(tiny, benchmark, "toy")
    assert theirs and len(theirs) == len(ours)
    stores = {line["store"] for line in theirs}
    assert len(runs_log.read_text().splitlines()) == len(stores)  # the peer ran once per store
    for line in theirs:
        assert line["budget"] == ours[line["qid"]]["tokens"]  # native's tokens for the question
        assert line["sha256"] == hashlib.sha256(line["text"].encode()).hexdigest()
        assert line["records"] and line["units"] == []
        # The toy's order: most question words first; each shown memory is the toy's own text.
        assert line["text"].startswith("(") and line["text"].count("\n\n(") + 1 == len(line["records"])
        assert "evidence_recall" in line
    (record_path,) = sorted((tiny / "runs" / benchmark).glob("*/*/toy/*/run.json"))
    recorded = json.loads(record_path.read_text())["peer"]
    assert recorded["adapter_sha256"] == hashlib.sha256((ADAPTERS / "run_toy.py").read_bytes()).hexdigest()
    assert recorded["versions"]["python"] == sys.version.split()[0]
    # A second run reads the kept answer: the peer does not run again.
    for path in (tiny / "runs" / benchmark).glob("*/*/toy/*/contexts.jsonl"):
        path.unlink()
    again = harness(tiny, benchmark, "system=toy", "stage.save_text=true", TOY_PEER_LOG=str(runs_log))
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(runs_log.read_text().splitlines()) == len(stores)
    assert [line["sha256"] for line in contexts(tiny, benchmark, "toy")] == [
        line["sha256"] for line in theirs
    ]


def test_the_protocol_input_holds_every_record_verbatim_with_what_the_benchmark_knows(tiny: Path) -> None:
    from harness import benchmarks
    from harness.config import BenchmarkConfig
    from harness.data import DataRoot
    from harness.systems import external

    data = DataRoot.open(tiny / "data", tiny / "manifests" / "data.json")
    locomo = benchmarks.load("locomo")
    store = next(iter(locomo.stores(data, BenchmarkConfig(name="locomo"))))
    given = external.store_input(store, locomo.peer_fields(data, store))
    ids = list(dict.fromkeys(r.source_id for r in store.source.records))
    assert [r["id"] for r in given["records"]] == ids
    first = given["records"][0]
    assert first["text"] in store.source.text and first["text"].endswith(first["words"])
    assert {"speaker", "time", "group", "index"} <= set(first)
    assert len(given["questions"]) == len({q.text for q in store.questions})


def test_a_failing_or_missing_peer_is_one_clear_error(tiny: Path) -> None:
    # Homes of their own: the toy's good answer, kept by the tests above, is not read back.
    failed = harness(tiny, "locomo", "system=toy", runs="no", TOY_PEER_FAIL="1", MUSTER_HOME=str(tiny / "f"))
    assert failed.returncode == 2
    assert "the peer 'toy' failed (exit 1)" in failed.stderr and "asked to fail" in failed.stderr
    assert "Traceback" not in failed.stderr
    wrong = harness(
        tiny, "locomo", "system=toy", runs="wrong", TOY_PEER_UNKNOWN="1", MUSTER_HOME=str(tiny / "h2")
    )
    assert wrong.returncode == 2 and "does not fit its input" in wrong.stderr
    missing = harness(tiny, "locomo", "system=toy", runs="missing", MUSTER_PEER_PYTHON_TOY=str(tiny / "none"))
    assert missing.returncode == 2 and "no Python for the peer 'toy'" in missing.stderr
    assert "make peers" in missing.stderr


def test_a_reproduction_keeps_the_peer_rows_make_peers_wrote(tmp_path: Path) -> None:
    import pandas as pd

    from harness import systems
    from harness.stages.tables import with_peer_rows

    peer = systems.PEERS[0]
    committed = tmp_path / "comparison.csv"
    pd.DataFrame(
        [
            {"system": "muster", "n": 3, "evidence_recall": 0.5, "old_column": 1},
            {"system": peer, "n": 3, "evidence_recall": 0.25, "old_column": 2},
        ]
    ).to_csv(committed, index=False)
    fresh = pd.DataFrame([{"system": "muster", "n": 3, "evidence_recall": 0.75}])
    kept = with_peer_rows(fresh, committed)
    assert list(kept["system"]) == ["muster", peer] and list(kept.columns) == list(fresh.columns)
    assert kept.loc[1, "evidence_recall"] == 0.25  # as make peers wrote it; muster's row is the new one
    ran = pd.DataFrame([{"system": "muster", "n": 3, "evidence_recall": 0.75}, {"system": peer, "n": 3}])
    assert with_peer_rows(ran, committed).equals(ran)  # a run of the peer replaces the kept row
    assert with_peer_rows(fresh, tmp_path / "none.csv").equals(fresh)


def test_make_peers_puts_the_peer_rows_in_the_tables_and_writes_the_paired_report(tiny: Path) -> None:
    tables = tiny / "tables"
    for preset in ("locomo.u10", "locomo.u20", "locomo.u40"):  # a reproduction's tables first
        made = harness(tiny, "locomo", "system=bm25", runs="make", preset=preset)
        made = harness(tiny, "locomo", "stage=tables", runs="make", preset=preset)
        assert made.returncode == 0, made.stderr[-3000:]
    environment = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "MUSTER_PEER_ADAPTERS": str(ADAPTERS),
        "MUSTER_PEER_PYTHON_TOY": sys.executable,
        "MUSTER_HOME": str(tiny / "home"),
    }
    command = [sys.executable, "scripts/peers.py", "--data", str(tiny / "data"), "--sets", "locomo"]
    command += [
        "--results",
        str(tiny / "make"),
        "--tables",
        str(tables),
        "--manifests",
        str(tiny / "manifests"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=environment, timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    table = (tables / "locomo" / "locomo.u10" / "cpu-small" / "comparison.csv").read_text()
    assert "\ntoy," in table and "\nbm25," in table
    report = (tables / "locomo" / "peers.md").read_text()
    assert "native − toy" in report and "native − hybrid" in report and "### toy" in report
    assert "(not recorded)" in report  # the toy has no venv that make peers built
    # The adapter's account of itself: its docstring past the summary, less how the harness runs it.
    account = report.split("### toy", 1)[1].split("Installed by", 1)[0]
    assert "It keeps one memory per record" in account and "one process per store" not in account
    # A reproduction after it (no run of the peer here: a fresh clone's) keeps the row it wrote.
    for run in (tiny / "make" / "locomo" / "locomo.u10" / "cpu-small" / "toy").iterdir():
        shutil.rmtree(run)
    kept = harness(tiny, "locomo", "stage=tables", runs="make")
    assert kept.returncode == 0, kept.stderr[-3000:]
    again = (tables / "locomo" / "locomo.u10" / "cpu-small" / "comparison.csv").read_text()
    toy_row = next(line for line in table.splitlines() if line.startswith("toy,"))
    assert toy_row.rstrip(",") in again and "\nmuster_native," in again
