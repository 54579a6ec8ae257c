"""The CPU profile's embedder on numpy (issue 29, muster_exact/models/numpy_bert.py).

1. Its vectors are the torch float64 path's after the float32 rounding, each component within
   one float32 step (ulp) and almost every vector bit for bit, on real
   benchmark text (LoCoMo turns, BEAM chat with code and numbers) of every length from one word
   piece to past the window, where both truncate.
2. The cpu-small build and read paths (the library, the CLI) run with torch unimportable: a
   ``torch`` package that raises when imported is put first on the path of a fresh interpreter.
3. Its passes come in spread order with progress between them (issue 31), and every vector is
   the bits the passes in length order gave, alone, in a batch or in chunks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from muster_exact import models
from muster_exact.core import progress
from muster_exact.models.numpy_bert import NumpyEmbedder, _batches, runs_on_numpy
from muster_exact.verify.corpora import beam_stores, locomo_stores
from tests.conftest import REPO, run_muster, torch_blocked_env

pytestmark = pytest.mark.slow

MINILM = models.ModelRef(models.PACKAGED_MINILM)
# Texts per benchmark: every word count from 1 to this, so every piece count up to the window
# (256 with the special tokens) and past it.
LONGEST_WORDS = 300


def spans_of_every_length(text: str, count: int, every: int = 1) -> list[str]:
    """Texts of 1, 1 + ``every``, ... up to ``count`` words, each from its own place in ``text``."""
    words, lengths = text.split(), range(1, count + 1, every)
    step = max(1, (len(words) - count) // len(lengths))
    return [" ".join(words[i * step : i * step + n]) for i, n in enumerate(lengths)]


@pytest.fixture(scope="module")
def texts(data: Path) -> list[str]:
    locomo = next(locomo_stores(data / "locomo/locomo10.json")).source.text
    beam = next(beam_stores(data / "beam", ["100K"])).source.text
    # Every length in LoCoMo's chat, every other one in BEAM's (code, tables, numbers): 450 texts.
    return spans_of_every_length(locomo, LONGEST_WORDS) + spans_of_every_length(beam, LONGEST_WORDS, 2)


def test_the_packaged_minilm_runs_on_numpy_and_others_do_not(tmp_path: Path) -> None:
    directory = models.resolve(MINILM)
    assert runs_on_numpy(directory)
    assert isinstance(models.load_embedder(MINILM), NumpyEmbedder)
    assert not runs_on_numpy(tmp_path)  # no files: the torch path decides (and refuses) as before
    for name in ("modules.json", "config.json", "tokenizer.json", "model.safetensors"):
        (tmp_path / name).symlink_to(directory / name)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert not runs_on_numpy(tmp_path)  # CLS pooling: not the function this module computes


def test_the_numpy_vectors_are_the_torch_float64_vectors(texts: list[str]) -> None:
    numpy_path = models.load_embedder(MINILM)
    torch_path = models.SentenceTransformerEmbedder(MINILM)
    assert numpy_path.model_id == torch_path.model_id  # one vector cache for both
    window = models.load_window(MINILM)
    pieces = window.pieces(texts)
    assert min(pieces) <= 2 and max(pieces) > window.limit  # one word to past the window
    ours, theirs = numpy_path.embed(texts), torch_path.embed(texts)
    assert ours.dtype == theirs.dtype == np.float32 and ours.shape == theirs.shape == (len(texts), 384)
    # The float64 results differ in their last bits, so a float32 rounding may land one step
    # apart, rarely (7 of 67,025 vectors on the benchmark stores: results/bench/vectors.md).
    steps = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64))
    assert int(steps.max()) <= 1, f"a component {int(steps.max())} float32 steps apart"
    differing = int((steps > 0).any(axis=1).sum())
    assert differing <= len(texts) // 100, f"{differing} of {len(texts)} vectors differ"
    # One text alone gives the bits it gives in a batch (no padding, one length per pass).
    assert (numpy_path.embed([texts[-1]])[0] == ours[-1]).all()


def test_the_spread_passes_and_their_progress_change_no_vector(data: Path, capsys) -> None:
    conversation = json.loads((data / "locomo" / "locomo10.json").read_text())[0]["conversation"]
    texts = [turn["text"] for turns in conversation.values() if isinstance(turns, list) for turn in turns]
    embedder = models.load_embedder(MINILM)
    with progress.shown(True):  # stderr is no terminal here: the estimate and the lines
        shown = embedder.embed(texts)
    assert f"embedding {len(texts)} pieces: about " in capsys.readouterr().err
    bert = embedder._bert  # type: ignore[attr-defined]
    ids = bert.token_ids(texts)
    by_length = np.empty_like(shown)  # the passes in length order, as before issue 31
    for batch in _batches(ids):
        by_length[batch] = bert.forward(np.asarray([ids[i] for i in batch], dtype=np.int64))
    assert np.array_equal(shown, by_length)
    chunked = np.vstack([embedder.embed(texts[i : i + 100]) for i in range(0, len(texts), 100)])
    assert np.array_equal(chunked, shown)
    alone = np.vstack([embedder.embed([text]) for text in texts[::20]])
    assert np.array_equal(alone, shown[::20])


LIBRARY = """
import sys
from muster_exact.memory import build
text = "\\n".join(f"[{i}] Ana moved to Lisbon in {2000 + i}, with a cat named Tom{i}." for i in range(40))
memory = build(text, models="cpu-small")
context = memory.context("Where did Ana move?")
assert context.tokens > 0 and "Lisbon" in context.text
heavy = ("torch", "sentence_transformers", "transformers")
blocked = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
assert not blocked, blocked
print("ok")
"""


def test_the_cpu_profile_builds_and_reads_with_torch_unimportable(tmp_path: Path) -> None:
    blocked = torch_blocked_env(tmp_path)
    env = {**os.environ, **blocked}
    result = subprocess.run(
        [sys.executable, "-c", LIBRARY], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "\n".join(f"[{i}] The build broke on day {i} after the cache moved." for i in range(200))
    )
    cli = run_muster("query", str(notes), "When did the build break?", env=blocked)
    assert cli.returncode == 0 and "The build broke" in cli.stdout, cli.stderr
