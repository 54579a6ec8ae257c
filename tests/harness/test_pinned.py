"""Pinned third-party files: mirror, fetch over HTTP, SHA-256 checks, and template extraction.

The real files are other people's code and cannot be fetched here (no
network), so the tests write stand-ins shaped like them (this repo's own
words), pin them in a test manifest, and serve them from a mirror directory
and from a real HTTP server on 127.0.0.1. The extraction code then runs on
them exactly as it would on the real files.
"""

from __future__ import annotations

import hashlib
import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness import benchmarks
from harness.pinned import PinnedFileError, PinnedFiles, load_manifest
from harness.prompts import PromptError
from harness.prompts import load as load_prompts
from tests.conftest import REPO

COMMIT = "0" * 40

GPT_UTILS = '''
import random

QA_PROMPT = """
Read the context. Question: {} Reply briefly.
"""

QA_PROMPT_CAT_5 = """
Read the context. Question: {} Reply with a letter.
"""


def get_gpt_answers(qa, category):
    if category == 2:
        question = qa['question'] + ' Give a date.'
    elif category == 5:
        question = qa['question'] + " Pick: (a) {} (b) {}. "
    return question
'''

AUDIT_YAML = """\
llm_judge:
  system_prompt: |
    You grade.
  user_prompt: |
    Q: {question}
    Gold: {golden_answer}
    Said: {generated_answer}
    Reply {"label": "CORRECT"} or {"label": "WRONG"}.
"""

MAB_TEMPLATES = """\
SYSTEM_MESSAGE = "You remember."

BASE_TEMPLATES = {
    'factconsolidation': {
        'system': SYSTEM_MESSAGE,
        'memorize': '{context}',
        'query': {'rag_agent': "Answer with the newest fact. {question} Use {{label}} literally."},
    },
    'ruler_qa': {
        'system': SYSTEM_MESSAGE,
        'memorize': '{context}',
        'query': {'rag_agent': "Answer: {question}"},
    },
}

DATASET_MAPPING = {('factconsolidation_',): 'factconsolidation', ('ruler_', 'qa'): 'ruler_qa'}
"""

BEAM_PROMPTS = '''
answer_generation_for_rag = """Context: <context>
Question: <question>"""

unified_llm_judge_base_prompt = """Question: <question>
Item: <rubric_item>
Response: <llm_response>
Return {"score": 1, "reason": "..."}"""
'''

FILES = {
    "locomo.gpt_utils": ("snap-research/LoCoMo", "task_eval/gpt_utils.py", GPT_UTILS),
    "locomo_audit.prompts": ("dial481/locomo-audit", "evaluation/config/prompts.yaml", AUDIT_YAML),
    "mab.templates": ("HUST-AI-HYZ/MemoryAgentBench", "utils/templates.py", MAB_TEMPLATES),
    "beam.prompts": ("mohammadtavakoli78/BEAM", "src/prompts.py", BEAM_PROMPTS),
}


@pytest.fixture
def pinned_tree(tmp_path: Path) -> tuple[Path, Path]:
    """(manifest, mirror): the stand-ins pinned by their SHA-256 and laid out <repo>/<commit>/<path>."""
    mirror = tmp_path / "mirror"
    entries = {}
    for name, (repo, path, text) in FILES.items():
        target = mirror / repo / COMMIT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        sha = hashlib.sha256(text.encode()).hexdigest()
        entries[name] = {"repo": repo, "commit": COMMIT, "path": path, "sha256": sha}
    manifest = tmp_path / "scorers.json"
    manifest.write_text(json.dumps({"files": entries}))
    return manifest, mirror


def test_the_repo_manifest_pins_every_file_by_commit_and_sha256() -> None:
    pins = load_manifest(REPO / "manifests" / "scorers.json")
    assert len(pins) >= 20
    for pin in pins.values():
        assert len(pin.commit) == 40 and len(pin.sha256) == 64
    assert {"locomo.gpt_utils", "locomo_audit.prompts", "mab.templates", "beam.prompts"} <= set(pins)


def test_served_from_the_mirror_and_recorded(pinned_tree: tuple[Path, Path], tmp_path: Path) -> None:
    manifest, mirror = pinned_tree
    files = PinnedFiles(manifest, mirror=mirror, cache=tmp_path / "cache", base_url=None)
    assert files.text("locomo.gpt_utils") == GPT_UTILS
    assert files.used["locomo.gpt_utils"]["sha256"] == hashlib.sha256(GPT_UTILS.encode()).hexdigest()


def test_a_changed_file_is_refused_with_both_hashes(pinned_tree: tuple[Path, Path], tmp_path: Path) -> None:
    manifest, mirror = pinned_tree
    path = mirror / "snap-research/LoCoMo" / COMMIT / "task_eval/gpt_utils.py"
    path.write_text(GPT_UTILS + "# edited\n")
    files = PinnedFiles(manifest, mirror=mirror, cache=tmp_path / "cache", base_url=None)
    with pytest.raises(PinnedFileError, match=r"has SHA-256 [0-9a-f]{64}, but .* is pinned at [0-9a-f]{64}"):
        files.read("locomo.gpt_utils")


def test_offline_without_a_mirror_is_a_clear_error(pinned_tree: tuple[Path, Path], tmp_path: Path) -> None:
    manifest, _ = pinned_tree
    files = PinnedFiles(manifest, mirror=tmp_path / "empty", cache=tmp_path / "cache", base_url=None)
    with pytest.raises(PinnedFileError, match="fetching is off; put the file at"):
        files.read("beam.prompts")
    with pytest.raises(PinnedFileError, match="not pinned"):
        files.read("nothing.here")


def test_fetched_over_http_checked_and_cached(pinned_tree: tuple[Path, Path], tmp_path: Path) -> None:
    manifest, mirror = pinned_tree
    handler = partial(SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        files = PinnedFiles(manifest, mirror=None, cache=tmp_path / "cache", base_url=base)
        assert files.text("mab.templates") == MAB_TEMPLATES
        cached = tmp_path / "cache" / "HUST-AI-HYZ/MemoryAgentBench" / COMMIT / "utils/templates.py"
        assert cached.read_text() == MAB_TEMPLATES
        # Wrong bytes on the wire are refused and never cached.
        (mirror / "mohammadtavakoli78/BEAM" / COMMIT / "src/prompts.py").write_text("tampered")
        with pytest.raises(PinnedFileError, match="pinned at"):
            files.read("beam.prompts")
        assert not (tmp_path / "cache" / "mohammadtavakoli78/BEAM").exists()
    finally:
        server.shutdown()
        server.server_close()
    # Offline now: the cache serves what was fetched.
    offline = PinnedFiles(manifest, mirror=None, cache=tmp_path / "cache", base_url=None)
    assert offline.text("mab.templates") == MAB_TEMPLATES


def test_official_templates_are_extracted_and_filled(pinned_tree: tuple[Path, Path], tmp_path: Path) -> None:
    manifest, mirror = pinned_tree
    files = PinnedFiles(manifest, mirror=mirror, cache=tmp_path / "cache", base_url=None)

    locomo = load_prompts("official", benchmarks.load("locomo"), files)
    answer = locomo.get("answer").messages(context="CTX", question="Where?")
    assert answer == [
        {"role": "user", "content": "CTX\n\n\nRead the context. Question: Where? Reply briefly.\n"}
    ]
    temporal = locomo.get("answer_temporal").messages(context="CTX", question="When?")[0]["content"]
    assert "Question: When? Give a date. Reply briefly." in temporal
    choice = locomo.get("answer_choice").messages(context="C", question="Who?", option_a="X", option_b="Y")
    assert "Question: Who? Pick: (a) X (b) Y.  Reply with a letter." in choice[0]["content"]
    judge = locomo.get("judge")
    assert judge.json_reply and judge.placeholders == ("question", "gold", "answer")
    filled = judge.messages(question="Q", gold="G", answer="A")
    assert filled[0] == {"role": "system", "content": "You grade.\n"}
    assert 'Gold: G\nSaid: A\nReply {"label": "CORRECT"}' in filled[1]["content"]

    mab = load_prompts("official", benchmarks.load("mab"), files)
    assert (
        mab.dataset("factconsolidation_sh_6k") == "factconsolidation" and mab.dataset("eventqa_full") is None
    )
    message = mab.get("answer:factconsolidation").messages(context="FACTS", question="Who?")
    assert message[0] == {"role": "system", "content": "You remember."}
    assert message[1]["content"] == "FACTS\nAnswer with the newest fact. Who? Use {label} literally."

    beam = load_prompts("official", benchmarks.load("beam"), files)
    assert beam.get("answer").messages(context="C", question="Q")[0]["content"] == "Context: C\nQuestion: Q"
    rubric = beam.get("judge_rubric").messages(question="Q", rubric_item="R", answer="A")[0]["content"]
    # As in the official code, the judge prompt's <question> slot is never filled.
    assert rubric.startswith("Question: <question>\nItem: R\nResponse: A")

    refined = load_prompts("official", benchmarks.load("locomo_refined"), files)
    with pytest.raises(PromptError, match="has no template 'judge_strict'"):
        refined.get("judge_strict")
    with pytest.raises(PromptError, match="unknown prompt set"):
        load_prompts("mine", benchmarks.load("locomo"), files)
