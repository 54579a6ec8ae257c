"""The official prompts, read for real (issue 56): the 22 pinned third-party files from the mirror
beside the checkout (``../shared/scorers``, or ``$MUSTER_SCORERS``), SHA-256 checked, and the answer
and judge stages run with ``prompts=official`` on LoCoMo, BEAM and MemoryAgentBench against the
OpenAI-compatible server on 127.0.0.1 (tests/harness/fake_llm.py).

The prompts' words are third-party text: nothing of them is written here. The test reads each
template from the mirror at run time, through the harness's own loader, and checks that what the
server received was built from it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import benchmarks
from harness.pinned import PinnedFiles
from harness.prompts import load as load_prompts
from tests.conftest import REPO
from tests.harness.fake_llm import Behaviour, FakeLLM
from tests.harness.test_answer_judge import endpoint, harness, lines, only
from tests.harness.tiny_data import write_manifest

pytestmark = pytest.mark.slow

MANIFEST = REPO / "manifests" / "scorers.json"


def scorers_mirror() -> Path:
    """The mirror of the pinned files: $MUSTER_SCORERS, else ../shared/scorers beside the checkout."""
    env = os.environ.get("MUSTER_SCORERS")
    mirror = Path(env) if env else REPO.parent / "shared" / "scorers"
    if not mirror.is_dir():
        pytest.skip(f"the pinned scorers' mirror is not at {mirror} (set MUSTER_SCORERS)")
    return mirror


def _check(mirror: Path) -> subprocess.CompletedProcess[str]:
    """``python -m harness.pinned --check`` against ``mirror``, as a user runs it."""
    command = [sys.executable, "-m", "harness.pinned", "--check", "--mirror", str(mirror)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120)


def test_every_pinned_file_is_served_by_the_mirror_and_its_sha256_checked() -> None:
    mirror = scorers_mirror()
    pins = json.loads(MANIFEST.read_text())
    done = _check(mirror)
    assert done.returncode == 0, done.stderr[-2000:]
    count = len(PinnedFiles(MANIFEST, mirror, base_url=None).pins)
    assert count == len(pins["files"]) == 22
    assert f"{count} of {count} pinned files available" in done.stdout
    assert done.stdout.count("ok       ") == count


def test_a_changed_byte_in_the_mirror_is_refused_by_name(tmp_path: Path) -> None:
    mirror = scorers_mirror()
    copy = tmp_path / "mirror"
    shutil.copytree(mirror, copy)
    files = PinnedFiles(MANIFEST, copy, base_url=None)
    name, pin = next(iter(files.pins.items()))
    target = copy / pin.relative
    target.write_bytes(target.read_bytes() + b"\n")
    done = _check(copy)
    assert done.returncode == 1
    assert name in done.stderr and "SHA-256" in done.stderr
    assert f"{len(files.pins) - 1} of {len(files.pins)} pinned files available" in done.stdout


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny-official")
    write_manifest(root / "data", root / "manifests")
    shutil.copyfile(MANIFEST, root / "manifests" / "scorers.json")
    return root


def official(role: str, fake: FakeLLM, mirror: Path) -> list[str]:
    return [*endpoint(fake, role, prompts="official"), f"paths.scorers_mirror={mirror}"]


def _sent_texts(fake: FakeLLM) -> list[str]:
    return [
        "\n".join(str(message.get("content", "")) for message in entry.body.get("messages", []))
        for entry in fake.log
        if entry.answered
    ]


def _fixed_lines(template_text: str) -> list[str]:
    """The template's lines without a placeholder: words the request must carry verbatim."""
    return [
        line.strip()
        for line in template_text.splitlines()
        if len(line.strip()) > 20 and "{" not in line and "<" not in line
    ]


@pytest.mark.parametrize("benchmark", ["locomo", "beam", "mab"])
def test_answer_and_judge_with_the_official_prompts_end_to_end(tiny: Path, benchmark: str) -> None:
    mirror = scorers_mirror()
    done = harness(tiny, benchmark, "stage=contexts", "stage.save_text=true")
    assert done.returncode == 0, done.stderr[-3000:]
    prompts = load_prompts(
        "official", benchmarks.load(benchmark), PinnedFiles(MANIFEST, mirror, base_url=None)
    )
    with FakeLLM(Behaviour()) as fake:
        answered = harness(tiny, benchmark, "stage=answer", *official("reader", fake, mirror))
        assert answered.returncode == 0, answered.stderr[-3000:]
        reader_sent = _sent_texts(fake)
        assert reader_sent
        judged = harness(
            tiny,
            benchmark,
            "stage=judge",
            *official("reader", fake, mirror),
            *official("judge", fake, mirror),
        )
        assert judged.returncode == 0, judged.stderr[-3000:]
        judge_sent = _sent_texts(fake)[len(reader_sent) :]
    # LoCoMo and BEAM are judged by a model; the tiny MemoryAgentBench store's split is scored by
    # the official exact-match rules, so its judge stage asks nothing (SCORERS.md).
    assert bool(judge_sent) == (benchmark in ("locomo", "beam")), judge_sent[:1]
    # Every request was built from a template the loader read from the mirror, SHA-256 checked.
    texts = [f"{t.system or ''}\n{t.user}" for t in prompts.templates.values()]
    fixed = {line for text in texts for line in _fixed_lines(text)}
    assert fixed, f"no fixed line in {benchmark}'s official templates"
    for sent in (reader_sent[0], *judge_sent[:1]):
        assert any(line in sent for line in fixed), sent[:500]
    run_dir = only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-*/answers.jsonl").parent
    record_files = list(run_dir.rglob("*.json"))
    recorded = " ".join(path.read_text() for path in record_files)
    assert "official" in recorded
    assert lines(only(tiny / "runs" / benchmark, "*/*/muster/*/answers/fake-reader-*/answers.jsonl"))
