"""Contexts are byte-identical across hash seeds and modes, and equal the golden file.

For every preset under both rule sets (exact and native), on LoCoMo conv-26,
FactConsolidation sh_6k and BEAM-100K-1 (5 questions each), processes with
PYTHONHASHSEED 0 and 1, and one with native-mode detection and a random
seed, print the SHA-256 of each context; all must equal
tests/golden/contexts.json. They read the session's vector cache, which
``make test`` fills before the workers start (scripts/warm_test_vectors.py);
where it is cold, the first fills it and the other two then run side by side.
The native-detection process shows that the mode changes nothing but the
rules: under the same rules (the same plan) it gives the exact contexts. The
processes share one vector cache (embedding is checked separately: two fresh
processes give the same vector bytes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

GOLDEN = REPO / "tests" / "golden" / "contexts.json"


def _start(args: list[str], seed: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _output(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=1800)
    assert process.returncode == 0, err[-2000:]
    return out


def _run(args: list[str], seed: str) -> str:
    return _output(_start(args, seed))


def test_contexts_identical_across_seeds_and_modes(data: Path, session_vectors: Path) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert sorted(golden) == ["exact", "native"]
    assert all(len(by_preset) == 9 for by_preset in golden.values())
    assert all(len(stores) == 3 for by_preset in golden.values() for stores in by_preset.values())
    # The two rule sets differ somewhere, or the native rows would measure nothing new.
    assert golden["exact"] != golden["native"]
    script = ["scripts/golden_contexts.py", "--data", str(data), "--cache", str(session_vectors)]
    runs = {"seed 0": _run(script, "0")}
    side_by_side = {
        "seed 1": _start(script, "1"),
        "native mode": _start([*script, "--mode", "native"], "random"),
    }
    runs.update({name: _output(process) for name, process in side_by_side.items()})
    for name, output in runs.items():
        assert json.loads(output) == golden, f"{name} differs from {GOLDEN}"


EMBED_SCRIPT = """
import hashlib, sys
from pathlib import Path
from muster_exact.verify.corpora import locomo_stores
from muster_exact.memory import build
store = next(locomo_stores(Path(sys.argv[1]) / "locomo/locomo10.json"))
memory = build(store.source, models="cpu-small", cache=False)
print(hashlib.sha256(memory.channel("dense")._vectors.tobytes()).hexdigest())
"""


def test_fresh_embeddings_are_bit_identical_across_processes(data: Path) -> None:
    processes = [_start(["-c", EMBED_SCRIPT, str(data)], seed) for seed in ("0", "random")]
    digests = {_output(process) for process in processes}
    assert len(digests) == 1


@pytest.mark.parametrize("path", ["numpy", "torch float64"])
def test_a_texts_vector_does_not_depend_on_what_it_is_embedded_with(data: Path, path: str) -> None:
    """float32 kernels round after the padding and the thread split; the exact paths do not: the
    CPU profile's numpy path (one length per pass) and the torch float64 path it equals."""
    import numpy as np
    import torch

    from muster_exact.models import CPU, SentenceTransformerEmbedder, load_embedder

    conversation = json.loads((data / "locomo" / "locomo10.json").read_text())[0]["conversation"]
    sessions = [turns for turns in conversation.values() if isinstance(turns, list)]
    texts = [turn["text"] for turns in sessions for turn in turns][:160]
    assert len({len(t) for t in texts}) > 50  # many lengths: batches that would pad differently
    embedder = load_embedder(CPU.embedder) if path == "numpy" else SentenceTransformerEmbedder(CPU.embedder)
    whole = embedder.embed(texts)
    assert np.array_equal(embedder.embed(texts[::-1])[::-1], whole)
    assert np.array_equal(embedder.embed(texts[::3]), whole[::3])
    assert np.array_equal(np.vstack([embedder.embed([t]) for t in texts[:12]]), whole[:12])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert np.array_equal(embedder.embed(texts[1::2]), whole[1::2])
    finally:
        torch.set_num_threads(threads)
