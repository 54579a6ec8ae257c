"""Exact mode under any hash seed: a build and a read with a preset give the same context bytes
under PYTHONHASHSEED 0 and under another seed, and say nothing about the seed (decision 0213:
nothing changes, so a warning would only alarm). The nine presets across seeds 0 and 1 are pinned
in tests/memory/test_determinism.py; this is the path a library user takes, with a seed Python
picks at random."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

# One process: build with a preset, read three questions, print each context's SHA-256 and every
# warning the build and the reads raised.
SCRIPT = """
import hashlib, json, sys, warnings
from muster_exact.memory import build
from tests.store.test_store import locomo_records

records, questions = locomo_records(120)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    memory = build(records, "locomo.u10", models="cpu-small")
    hashes = [hashlib.sha256(memory.context(q).text.encode()).hexdigest() for q in questions]
print(json.dumps({"hashes": hashes, "warnings": [str(w.message) for w in caught]}))
"""


def _run(seed: str) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=REPO, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_a_preset_reads_the_same_bytes_under_any_hash_seed_and_says_nothing_of_it() -> None:
    pinned = _run("0")
    other = _run("random")
    assert len(pinned["hashes"]) == 3 and pinned["hashes"] == other["hashes"]
    for said in (pinned, other):
        assert not [w for w in said["warnings"] if "PYTHONHASHSEED" in w or "hash seed" in w], said
