"""``make reproduce``: the default reproduction on CPU, end to end, checked.

1. ``muster verify cuts`` over every benchmark store, and the published
   judge outputs (LoCoMo's, MemoryAgentBench's) re-scored offline
   (``stage=published``);
2. per benchmark (LoCoMo, LoCoMo-Refined, the 8 FactConsolidation stores,
   BEAM-100K) at U = 10, 20 and 40 (the nine presets: three families of
   three) with the cpu-small profile: the ``contexts`` stage for MUSTER
   (exact and native) and every baseline and ablation (one Hydra multirun
   per benchmark: one build per store and preset, the vectors shared), then
   the side-by-side ``tables`` per preset. The first job (MUSTER at U = 10)
   runs alone and embeds every store; the other 26 then run ``--jobs`` at
   once (Hydra's joblib launcher), each over the warm vector cache;
3. every MUSTER per-question context hash (exact and native rules) against
   muster_exact/manifests/contexts/, and every figure of the tables against
   manifests/expected.yaml (OK / OKish / FAIL, pyserini 2CR style);
4. the reproduction record (results/runs/reproduce.json: step times, host;
   git-ignored) and the results page (results/index.html, ``make report``).

Exit status 1 on any FAIL: a figure off by more than its tolerance, or a manifest
with more than 1% of its context hashes differing (fewer is OKish: another CPU's float32
rounding in a near-tie; ``harness.report.expected.context_verdict``). BEAM-100K at U = 20 is the
paper's CPU replay setting. A rerun reuses the vector cache and the finished
runs. The options below serve a subset (a tiny data root in the tests); the
default is the whole job.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import runs  # noqa: E402
from harness.report import expected  # noqa: E402
from harness.report.reproduction import (  # noqa: E402
    MODELS,
    PUBLISHED_TABLES,
    RECORD,
    UNITS,
    comparison_table,
    cpu_replay,
    presets_of,
    reproduced,
)
from harness.runs import record as run_record  # noqa: E402
from harness.systems import PINNED, REPRODUCED  # noqa: E402
from muster_exact import verify  # noqa: E402
from muster_exact.core.errors import ManifestError  # noqa: E402
from muster_exact.verify import contexts as verify_contexts  # noqa: E402


class Steps:
    """The reproduction's commands, each announced as ``== [k/N] title`` and timed, so a log says
    how far it is (each harness job adds its own count of questions, with questions/s and an ETA)."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.started = time.perf_counter()
        self.seconds: list[dict[str, Any]] = []
        # Seconds by what they were spent on (issue 53): the record's and the page's breakdown.
        self.breakdown: dict[str, float] = {}

    def spent(self, kind: str, seconds: float) -> None:
        self.breakdown[kind] = round(self.breakdown.get(kind, 0.0) + seconds, 1)

    def run(self, title: str, command: list[str], kind: str) -> float:
        self.done += 1
        print(f"\n== [{self.done}/{self.total}] {title}\n$ {' '.join(command)}", flush=True)
        started = time.perf_counter()
        result = subprocess.run(command, cwd=REPO)
        if result.returncode != 0:
            raise SystemExit(f"reproduce: '{title}' failed with exit code {result.returncode}")
        seconds = time.perf_counter() - started
        self.seconds.append({"step": title, "seconds": round(seconds, 1), "kind": kind})
        self.spent(kind, seconds)
        print(
            f"== [{self.done}/{self.total}] done in {seconds:.0f} s ({self.elapsed():.0f} s so far)",
            flush=True,
        )
        return seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def muster_run(benchmark: str, preset: str, args: argparse.Namespace, system: str) -> Path:
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
                f"paths.results={args.results}",
                f"paths.manifests={args.manifests}",  # the data manifest is part of a run's key
            ],
        )
    return runs.run_dir(cfg)


def check_hashes(pins: Path, benchmark: str, preset: str, run: Path, rules: str) -> dict[str, Any]:
    """The run's context hashes against the pinned ones: identical, total, the first that differ."""
    manifest = verify_contexts.path_for(pins, benchmark, preset, MODELS, rules)
    found: dict[str, Any] = {"benchmark": benchmark, "preset": preset, "rules": rules}
    if not manifest.is_file():
        return {**found, "identical": 0, "total": 0, "problem": f"no pinned hashes at {manifest}"}
    try:
        pinned = verify_contexts.load(manifest)["hashes"]
    except ManifestError as exc:
        return {**found, "identical": 0, "total": 0, "problem": str(exc)}
    got = {line["qid"]: line["sha256"] for line in runs.complete_lines(run / runs.CONTEXTS)}
    differing = [q for q in pinned if got.get(q) != pinned[q]]
    return {
        **found,
        "identical": len(pinned) - len(differing),
        "total": len(pinned),
        "differs": differing[:5],
    }


def print_hashes(entries: list[dict[str, Any]], seconds: dict[str, float]) -> None:
    print("\n== context hashes (MUSTER, exact and native rules)")
    replays = cpu_replay()
    for e in entries:
        flag = expected.hash_verdict(e)
        replay = "  <- the paper's CPU replay setting" if (e["benchmark"], e["preset"]) in replays else ""
        print(
            f"{e['benchmark']:<15} {e['preset'] + ' ' + e['rules']:<18} {e['identical']} of {e['total']} "
            f"identical  {flag}  (benchmark's contexts: {seconds[e['benchmark']]:.0f} s){replay}"
        )
        for problem in [e["problem"]] if "problem" in e else [f"differs: {q}" for q in e.get("differs", [])]:
            print(f"    {problem}")


def print_matrix(cells: list[expected.Cell], tables: dict[tuple[str, str], str]) -> None:
    """Per benchmark a grid (systems x presets, each cell the worst verdict over its figures), the
    published tables a line per row, then each figure that is not OK."""
    print("\n== expected scores (manifests/expected.yaml): OK / OKish (within tolerance) / FAIL")
    by_table: dict[str, dict[str, list[str]]] = {}
    for cell in cells:
        by_table.setdefault(cell.table, {}).setdefault(cell.row, []).append(cell.status)
    for benchmark in dict.fromkeys(b for b, _ in tables):
        presets = [p for b, p in tables if b == benchmark]
        width = max(len(system) for system in REPRODUCED) + 1
        print(f"{benchmark}: {'system':<{width}}" + "".join(f"{p:>11}" for p in presets))
        for system in REPRODUCED:
            verdicts = [
                expected.worst(by_table.get(tables[benchmark, p], {}).get(system, [])) for p in presets
            ]
            print(f"{'':<{len(benchmark) + 2}}{system:<{width}}" + "".join(f"{v:>11}" for v in verdicts))
    for table in PUBLISHED_TABLES:
        for row, statuses in by_table.get(table, {}).items():
            print(f"{table} [{row}]: {expected.worst(statuses)}")
    counts = expected.summary(cells)
    print(", ".join(f"{counts[s]} {s}" for s in ("figures", *expected.STATUSES)))
    for cell in cells:
        if cell.status in (expected.OKISH, expected.FAIL):
            print(f"  {cell.status:<5} {cell.where}: expected {cell.expected}, got {cell.got}")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--results", default=str(REPO / "results" / "runs"), help="run records (git-ignored)")
    parser.add_argument("--tables", default=str(REPO / "results"), help="committed tables, and the page")
    parser.add_argument(
        "--manifests", default=str(REPO / "manifests"), help="the data manifest's folder (data.json)"
    )
    parser.add_argument("--expected", default=str(REPO / "manifests" / "expected.yaml"))
    parser.add_argument("--pins", type=Path, default=None, help="context-hash manifests (default: shipped)")
    parser.add_argument("--benchmarks", nargs="+", default=None, help="default: every reproduced benchmark")
    parser.add_argument("--units", nargs="+", type=int, default=list(UNITS))
    parser.add_argument(
        "--jobs", type=int, default=min(4, os.cpu_count() or 1),
        help="harness jobs at once after the first (default: the cores, at most 4)",
    )  # fmt: skip
    parser.add_argument(
        "--skip", nargs="+", default=[], choices=("cuts", "published", "report"),
        help="leave out a step (for a data root without every store or published output)",
    )  # fmt: skip
    args = parser.parse_args()
    # Absolute, so the harness commands (run from the repository) and this process agree.
    for name in ("data", "results", "tables", "manifests", "expected", "pins"):
        if getattr(args, name) is not None:
            setattr(args, name, str(Path(getattr(args, name)).resolve()))
    return args


def main() -> None:
    args = parse()
    python = sys.executable
    pins = Path(args.pins) if args.pins else verify.manifest_dir()
    chosen = args.benchmarks or reproduced()
    units = tuple(args.units)
    common_paths = [
        f"paths.data_root={args.data}",
        f"paths.manifests={args.manifests}",
        f"paths.results={args.results}",
        f"paths.tables={args.tables}",
    ]
    started_utc = run_record.utc_now()
    steps = Steps(2 - len({"cuts", "published"} & set(args.skip)) + len(chosen) * (2 + len(units)))
    step = steps.run
    if "cuts" not in args.skip:
        step(
            "detection over every store",
            [python, "-m", "muster_exact", "verify", "cuts", "--data", args.data],
            "detection (verify cuts)",
        )
    if "published" not in args.skip:  # offline, no model: results/audit/published*.md
        step(
            "published judge outputs, re-scored",
            [python, "-m", "harness", "stage=published", *common_paths],
            "published outputs re-scored",
        )
    hashes, seconds, tables = [], {}, {}
    for benchmark in chosen:
        presets = presets_of(benchmark, units)
        common = [f"benchmark={benchmark}", f"models={MODELS}", *common_paths]
        # The first job alone embeds every store (the vector cache is then warm, so parallel jobs
        # never embed the same pieces twice); the other jobs select in --jobs processes at once.
        seconds[benchmark] = step(
            f"{benchmark}: the vectors, and {REPRODUCED[0]}'s contexts at {presets[0]}",
            [python, "-m", "harness", *common, f"preset={presets[0]}", f"system={REPRODUCED[0]}"],
            f"embedding: {benchmark} (with {REPRODUCED[0]}'s contexts at {presets[0]})",
        )
        seconds[benchmark] += step(
            f"{benchmark}: contexts for {len(REPRODUCED)} systems x {len(presets)} presets, "
            f"{args.jobs} at once",
            [
                python, "-m", "harness", "-m", *common,
                "preset=" + ",".join(presets), "system=" + ",".join(REPRODUCED),
                *(["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.jobs}"] if args.jobs > 1 else []),
            ],
            f"selection: {benchmark} (every system and preset, the vectors cached)",
        )  # fmt: skip
        for preset in presets:
            step(
                f"{benchmark} {preset}: tables",
                [python, "-m", "harness", *common, f"preset={preset}", "stage=tables"],
                "tables",
            )
            tables[benchmark, preset] = comparison_table(benchmark, preset)
            for system, rules in PINNED.items():
                run = muster_run(benchmark, preset, args, system)
                hashes.append(check_hashes(pins, benchmark, preset, run, rules))
    checking = time.perf_counter()
    print_hashes(hashes, seconds)
    produced = list(tables.values()) + ([] if "published" in args.skip else list(PUBLISHED_TABLES))
    try:
        cells = expected.check(expected.load(Path(args.expected)), Path(args.tables), only=produced)
        problem = None
    except expected.ExpectedError as exc:
        cells, problem = [], str(exc)
    if problem:
        print(f"\n== expected scores: FAIL: {problem}")
    else:
        print_matrix(cells, tables)
    verdicts = [expected.hash_verdict(e) for e in hashes]
    steps.spent("hashes and figures checked", time.perf_counter() - checking)
    failed = bool(problem) or expected.failed(cells) or expected.FAIL in verdicts
    okish = expected.OKISH in verdicts or any(c.status == expected.OKISH for c in cells)
    record = {
        "started_utc": started_utc,
        "ended_utc": run_record.utc_now(),
        "total_s": round(steps.elapsed(), 1),
        "host": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "git": run_record.git_state(REPO),
        "arguments": {k: str(v) for k, v in vars(args).items()},
        "steps": steps.seconds,
        "breakdown": steps.breakdown,  # seconds by what they went to (the page: before the page's own)
        "hashes": [{**e, "verdict": v} for e, v in zip(hashes, verdicts, strict=True)],
        "expected": {"file": str(args.expected), "problem": problem, **expected.summary(cells)},
        "cpu_replay": list(next(iter(cpu_replay()), ())),  # (benchmark, preset), as the page reads it
        "passed": not failed,
    }
    Path(args.results).mkdir(parents=True, exist_ok=True)
    (Path(args.results) / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if "report" not in args.skip:
        started_page = time.perf_counter()
        step_report(python, args)
        # The page is made from the record, so its own time is added to the record after it.
        steps.spent("results page", time.perf_counter() - started_page)
        record["breakdown"], record["total_s"] = steps.breakdown, round(steps.elapsed(), 1)
        (Path(args.results) / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    total = sum(e["total"] for e in hashes)
    same = sum(e["identical"] for e in hashes)
    outcome = "FAILED" if failed else "PASSED (OKish)" if okish else "PASSED"
    print(
        f"\n== {outcome}: {same} of {total} context hashes identical "
        f"({len(hashes)} manifests); {expected.summary(cells)[expected.FAIL]} FAIL figures; "
        f"total {steps.elapsed():.0f} s; record {Path(args.results) / RECORD}"
    )
    sys.exit(1 if failed else 0)


def step_report(python: str, args: argparse.Namespace) -> None:
    command = [
        python,
        str(REPO / "scripts" / "report.py"),
        "--tables",
        args.tables,
        "--results",
        args.results,
        "--expected",
        args.expected,
    ]
    print(f"\n== results page\n$ {' '.join(command)}", flush=True)
    if subprocess.run(command, cwd=REPO).returncode != 0:
        raise SystemExit("reproduce: the results page failed")


if __name__ == "__main__":
    main()
