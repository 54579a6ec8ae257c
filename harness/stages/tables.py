"""Stage ``tables``: every system side by side for one benchmark, preset and model profile.

Writes ``<tables>/<benchmark>/<preset>/<models>/comparison.{csv,md}``: deterministic figures only
(from the saved contexts), so a committed table changes only when a score does. The measured
build seconds and query latency go to ``<results>/<benchmark>/<preset>/<models>/timings.{csv,md}``,
beside the run records (git-ignored), and are printed with the table.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from harness import runs, systems
from harness.runs import StageOrderError
from harness.tables import comparison, markdown, timing_comparison

log = logging.getLogger(__name__)


def finished_runs(cfg: DictConfig) -> dict[str, Path]:
    """Each system's contexts run of this benchmark, preset and models that holds a question."""
    found = {}
    for system in systems.SYSTEMS:
        directory = runs.run_dir(cfg, system)
        if runs.complete_lines(directory / runs.CONTEXTS):
            found[system] = directory
    return found


def with_peer_rows(frame: pd.DataFrame, committed: Path) -> pd.DataFrame:
    """``frame`` with each peer row it lacks kept from the committed table: `make peers` runs the
    peers, not `make reproduce`, so a reproduction keeps their rows as `make peers` wrote them."""
    missing = [p for p in systems.PEERS if p not in set(frame["system"])]
    if not missing or not committed.is_file():
        return frame
    kept = pd.read_csv(committed)
    kept = kept[kept["system"].isin(missing)]
    if kept.empty:
        return frame
    log.info("peer rows kept from %s (make peers writes them): %s", committed, ", ".join(kept["system"]))
    return pd.concat([frame, kept[[c for c in frame.columns if c in kept.columns]]], ignore_index=True)


def run(cfg: DictConfig, repo: Path) -> Path:
    found = finished_runs(cfg)
    if not found:
        raise StageOrderError(
            f"no runs of {cfg.benchmark.name}, preset {cfg.preset.name}, models {cfg.models.name} under "
            f"{cfg.paths.results} yet: run stage=contexts first with the same benchmark, preset and models"
        )
    for system in systems.REPRODUCED:
        if system not in found:
            log.warning("no %s run at %s; left out of the table", system, runs.run_dir(cfg, system))
    group = Path(cfg.benchmark.name) / cfg.preset.name / cfg.models.name
    out_dir = Path(cfg.paths.tables) / group
    out_dir.mkdir(parents=True, exist_ok=True)
    title = f"# {cfg.benchmark.name}, preset {cfg.preset.name}, models {cfg.models.name}\n\n"
    frame = with_peer_rows(comparison(found), out_dir / "comparison.csv")
    frame.to_csv(out_dir / "comparison.csv", index=False)
    (out_dir / "comparison.md").write_text(title + markdown(frame), encoding="utf-8")
    timing_dir = Path(cfg.paths.results) / group
    timing_dir.mkdir(parents=True, exist_ok=True)
    timing = timing_comparison(found)
    timing.to_csv(timing_dir / "timings.csv", index=False)
    measured = f"Measured on this machine ({len(found)} runs; build seconds summed over stores):\n\n"
    (timing_dir / "timings.md").write_text(title + measured + markdown(timing), encoding="utf-8")
    print(title + markdown(frame) + "\n" + measured + markdown(timing.drop(columns=["run"])))
    return out_dir
