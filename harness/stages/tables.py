"""Stage ``tables``: every system side by side for one benchmark, preset and model profile."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from omegaconf import DictConfig

from harness import runs, systems
from harness.runs import StageOrderError
from harness.tables import comparison, markdown

log = logging.getLogger(__name__)


def run(cfg: DictConfig, repo: Path) -> Path:
    found = {}
    for system in systems.SYSTEMS:
        directory = runs.run_dir(cfg, system)
        if (directory / runs.CONTEXTS).is_file():
            found[system] = directory
        else:
            log.warning("no %s run at %s; left out of the table", system, directory)
    if not found:
        raise StageOrderError(
            f"no runs of {cfg.benchmark.name}, preset {cfg.preset.name}, models {cfg.models.name} under "
            f"{cfg.paths.results}; run stage=contexts first with the same benchmark, preset and models"
        )
    out_dir = Path(cfg.paths.tables) / cfg.benchmark.name / cfg.preset.name / cfg.models.name
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    for system, directory in found.items():  # the run records, beside the tables they made
        shutil.copyfile(directory / "run.json", out_dir / "runs" / f"{system}.run.json")
    frame = comparison(found)
    frame.drop(columns=["run"]).to_csv(out_dir / "comparison.csv", index=False)
    title = f"# {cfg.benchmark.name}, preset {cfg.preset.name}, models {cfg.models.name}\n\n"
    (out_dir / "comparison.md").write_text(title + markdown(frame.drop(columns=["run"])), encoding="utf-8")
    print(title + markdown(frame.drop(columns=["run"])))
    return out_dir
