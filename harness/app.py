"""The Hydra app: ``python -m harness`` (or ``muster-harness``).

    python -m harness benchmark=locomo preset=locomo.u10 models=cpu-small system=muster
    python -m harness -m system=muster,bm25,dense hydra/launcher=joblib
    python -m harness stage=tables benchmark=locomo preset=locomo.u10 models=cpu-small

Runs under PYTHONHASHSEED=0 (it re-executes itself when unset), as exact
mode requires. Typed errors become one line on stderr and exit code 2.
"""

from __future__ import annotations

import difflib
import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from harness.config import check, register
from harness.seed import ensure_hash_seed
from muster_exact.errors import MusterError

REPO = Path(__file__).resolve().parent.parent
CONF = REPO / "conf"
STAGES = {
    "contexts": "harness.stages.contexts",
    "merge": "harness.stages.merge",
    "tables": "harness.stages.tables",
    "answer": "harness.stages.answer",
    "judge": "harness.stages.judge",
    "rescore": "harness.stages.rescore",
    "audit": "harness.stages.audit",
    "published": "harness.stages.published",
}
log = logging.getLogger("harness")


def check_choices(argv: list[str]) -> None:
    """Unknown group options answered with the closest names, before Hydra composes."""
    for arg in argv:
        group, sep, value = arg.partition("=")
        group = group.lstrip("+~")
        if not sep or "/" in group or "." in group or not (CONF / group).is_dir():
            continue
        options = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
        for choice in value.split(","):
            if choice and choice not in options:
                close = difflib.get_close_matches(choice, options, n=3, cutoff=0.5)
                hint = f"did you mean {', '.join(close)}?" if close else f"choose one of {', '.join(options)}"
                raise MusterError(f"unknown {group} {choice!r}; {hint}")


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def run(cfg: DictConfig) -> None:
    import importlib

    try:
        check(cfg)
        stage = importlib.import_module(STAGES[cfg.stage.name])
        stage.run(cfg, REPO)
    except MusterError as exc:  # raised inside Hydra's job: answer here, one line, exit 2
        print(f"harness: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)


def main() -> None:
    ensure_hash_seed()
    try:
        check_choices(sys.argv[1:])
        register()
        run()
    except MusterError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
