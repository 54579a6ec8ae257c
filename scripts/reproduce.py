"""``make reproduce``: the default reproduction on CPU, end to end, checked.

1. ``muster verify cuts`` over every benchmark store, and the published
   LoCoMo judge outputs and MemoryAgentBench outputs re-scored offline
   (``stage=published``);
2. per benchmark (LoCoMo, LoCoMo-Refined, the 8 FactConsolidation stores,
   BEAM-100K) at U = 10, 20 and 40 (the benchmark's three presets) with the
   cpu-small profile: the ``contexts`` stage for MUSTER (exact and native)
   and every baseline and ablation (one Hydra multirun per benchmark), then
   the side-by-side ``tables`` per preset;
3. every MUSTER per-question context hash (exact and native rules) against
   muster_exact/manifests/contexts/;
4. a short summary. Exit status 1 on any difference.

A rerun reuses the vector cache and the finished runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import benchmarks, runs  # noqa: E402
from harness.systems import SYSTEMS  # noqa: E402
from muster_exact import verify, verify_contexts  # noqa: E402
from muster_exact.errors import ManifestError  # noqa: E402

UNITS = (10, 20, 40)
MODELS = "cpu-small"
PINNED = {"muster": "exact", "muster_native": "native"}


def reproduced() -> list[str]:
    """The registered benchmarks whose context hashes are pinned, in registration order."""
    return [name for name in benchmarks.REGISTRY if benchmarks.load(name).reproduced]


class Steps:
    """The reproduction's commands, each announced as ``== [k/N] title`` and timed, so a log says
    how far it is (each harness job adds its own count of questions, with questions/s and an ETA)."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.started = time.perf_counter()

    def run(self, title: str, command: list[str]) -> float:
        self.done += 1
        print(f"\n== [{self.done}/{self.total}] {title}\n$ {' '.join(command)}", flush=True)
        started = time.perf_counter()
        result = subprocess.run(command, cwd=REPO)
        if result.returncode != 0:
            raise SystemExit(f"reproduce: '{title}' failed with exit code {result.returncode}")
        seconds = time.perf_counter() - started
        print(f"== [{self.done}/{self.total}] done in {seconds:.0f} s ({self.elapsed()} so far)", flush=True)
        return seconds

    def elapsed(self) -> str:
        return f"{time.perf_counter() - self.started:.0f} s"


def muster_run(benchmark: str, preset: str, results: str, system: str) -> Path:
    from hydra import compose, initialize_config_dir

    from harness.config import register

    register()
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        cfg = compose(
            "config",
            overrides=[
                f"benchmark={benchmark}",
                f"preset={preset}",
                f"models={MODELS}",
                f"system={system}",
                f"paths.results={results}",
            ],
        )
    return runs.run_dir(cfg)


def check_hashes(benchmark: str, preset: str, run: Path, rules: str) -> tuple[int, int, list[str]]:
    manifest = verify_contexts.path_for(verify.manifest_dir(), benchmark, preset, MODELS, rules)
    if not manifest.is_file():
        return 0, 0, [f"(no pinned hashes at {manifest.relative_to(REPO)}: pin with scripts/pin_contexts.py)"]
    try:
        pinned = verify_contexts.load(manifest)["hashes"]
    except ManifestError as exc:
        return 0, 0, [f"({exc})"]
    got = {line["qid"]: line["sha256"] for line in runs.complete_lines(run / runs.CONTEXTS)}
    differing = [q for q in pinned if got.get(q) != pinned[q]]
    return len(pinned) - len(differing), len(pinned), differing


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--results", default="results/runs")
    args = parser.parse_args()
    python = sys.executable
    benchmarks_run = reproduced()
    # Two checks, then per benchmark its contexts and one tables step per preset.
    steps = Steps(2 + len(benchmarks_run) * (1 + len(UNITS)))
    step = steps.run
    step("detection over every store", [python, "-m", "muster_exact", "verify", "cuts", "--data", args.data])
    # Offline, no model: the published LoCoMo judge outputs and MemoryAgentBench outputs re-scored
    # (results/audit/published.md, published_mab.md).
    step(
        "published LoCoMo judge outputs and MemoryAgentBench outputs, re-scored",
        [python, "-m", "harness", "stage=published", f"paths.data_root={args.data}"],
    )
    summary = []
    for benchmark in benchmarks_run:
        presets = [f"{benchmarks.load(benchmark).preset_family}.u{u}" for u in UNITS]
        common = [
            f"benchmark={benchmark}",
            f"models={MODELS}",
            f"paths.data_root={args.data}",
            f"paths.results={args.results}",
        ]
        seconds = step(
            f"{benchmark}: contexts for {len(SYSTEMS)} systems x {len(presets)} presets",
            [
                python, "-m", "harness", "-m", *common,
                "preset=" + ",".join(presets), "system=" + ",".join(SYSTEMS),
            ],
        )  # fmt: skip
        for preset in presets:
            step(
                f"{benchmark} {preset}: tables",
                [python, "-m", "harness", *common, f"preset={preset}", "stage=tables"],
            )
            for system, rules in PINNED.items():
                run = muster_run(benchmark, preset, args.results, system)
                identical, total, differing = check_hashes(benchmark, preset, run, rules)
                summary.append((benchmark, f"{preset} {rules}", identical, total, differing, seconds))
    print("\n== summary")
    failed = False
    for benchmark, preset, identical, total, differing, seconds in summary:
        flag = "OK" if not differing else "FAIL"
        failed |= bool(differing)
        print(
            f"{benchmark:<15} {preset:<18} {identical} of {total} context hashes identical  {flag}  "
            f"(benchmark's contexts: {seconds:.0f} s)"
        )
        for qid in differing[:5]:
            print(f"    differs: {qid}")
    print(f"tables: results/<benchmark>/<preset>/{MODELS}/comparison.md; total {steps.elapsed()}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
