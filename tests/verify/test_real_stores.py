"""Detection and cutting on the real benchmark stores in ../shared/data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact import analyse, verify
from muster_exact.verify.corpora import beam_stores, locomo_stores, mab_stores
from tests.conftest import REPO, run_muster

pytestmark = pytest.mark.slow


def test_factconsolidation_stores_are_numbered_logs(data: Path) -> None:
    stores = list(mab_stores(data / "memoryagentbench/data/Conflict_Resolution.json"))
    assert len(stores) == 8
    for store in stores:
        derived = analyse(store.source)
        assert derived.plan.branch == "numbered_log", store.name
        assert derived.plan.supersession and derived.plan.order == "serial"
        assert derived.plan.stats.slots_with_versions > 0


def test_locomo_conversations_are_record_stores(data: Path) -> None:
    samples = json.loads((data / "locomo/locomo10.json").read_text())
    stores = list(locomo_stores(data / "locomo/locomo10.json"))
    assert len(stores) == 10
    for sample, store in zip(samples, stores, strict=True):
        derived = analyse(store.source)
        assert derived.plan.branch == "record_store", store.name
        assert derived.plan.record_share == 1.0
        # Every block maps back to a LoCoMo turn id (a turn with a blank line inside
        # gives two blocks with one id), and every turn is there.
        turn_ids = {
            t["dia_id"]
            for k, v in sample["conversation"].items()
            if k.startswith("session_") and isinstance(v, list)
            for t in v
        }
        assert {r.source_id for r in store.source.records} == turn_ids


def test_conv26_skips_date_keys_without_a_session(data: Path) -> None:
    sample = json.loads((data / "locomo/locomo10.json").read_text())[0]
    conversation = sample["conversation"]
    dates = [k for k in conversation if k.endswith("_date_time")]
    sessions = [k for k in conversation if k.startswith("session_") and not k.endswith("date_time")]
    assert len(dates) > len(sessions)  # the trap in the data
    store = next(locomo_stores(data / "locomo/locomo10.json"))
    turns = sum(len(conversation[k]) for k in sessions)
    assert len(store.source.records) == turns


def test_beam_messages_map_back_to_ids(data: Path) -> None:
    store = next(beam_stores(data / "beam"))
    assert store.name == "beam-100K-1"
    chat = json.loads((data / "beam/100K/1/chat.json").read_text())
    message_ids = {str(m["id"]) for batch in chat for turn in batch["turns"] for m in turn}
    block_ids = {r.source_id for r in store.source.records}
    assert block_ids == message_ids  # a message's own blank lines give more blocks, same id


def test_verify_cuts_passes_on_the_real_data(data: Path) -> None:
    result = run_muster("verify", "cuts", "--data", str(data))
    assert result.returncode == 0, result.stdout + result.stderr
    # Every store the data holds is pinned: 47, and the ten BEAM-500K development chats.
    assert "57 of 57 stores OK" in result.stdout
    assert "beam-500K-34" in result.stdout


def test_verify_cuts_fails_on_a_changed_expectation(tmp_path, data: Path) -> None:
    manifest = json.loads(verify.default_manifest().read_text())
    manifest["stores"]["conv-26"]["units"] += 1
    del manifest["stores"]["conv-30"]
    manifest["stores"]["ghost-store"] = manifest["stores"]["conv-41"]
    path = tmp_path / "cuts.json"
    path.write_text(json.dumps(manifest))
    result = run_muster("verify", "cuts", "--data", str(data), "--manifest", str(path))
    assert result.returncode == 1
    fails = [line.split()[0] for line in result.stdout.splitlines() if "  FAIL" in line]
    assert fails == ["conv-26", "conv-30", "ghost-store"]
    assert "units: expected" in result.stdout and "not pinned" in result.stdout
    assert "55 of 58 stores OK, 3 FAIL" in result.stdout


def test_real_stores_derive_identically_across_hash_seeds(data: Path) -> None:
    code = (
        "import hashlib, sys\nfrom pathlib import Path\nfrom muster_exact import analyse\n"
        "from muster_exact.verify.corpora import find_stores\nh = hashlib.sha256()\n"
        "for i, s in enumerate(find_stores(Path(sys.argv[1]))):\n"
        "    if i % 6: continue\n"
        "    d = analyse(s.source)\n"
        "    h.update(d.plan.to_json().encode())\n"
        "    h.update(repr([(u.start, u.end, u.parent, u.slot) for u in d.cut.units]).encode())\n"
        "print(h.hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code, str(data)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=REPO,
        ).stdout
        for seed in ("0", "1", "random")
    }
    assert len(digests) == 1
