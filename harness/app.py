"""The Hydra app: ``python -m harness``, from a clone (the wheel carries the library only).

    python -m harness benchmark=locomo preset=locomo.u10 models=cpu-small system=muster
    python -m harness -m system=muster,bm25,dense hydra/launcher=joblib
    python -m harness stage=tables benchmark=locomo preset=locomo.u10 models=cpu-small

Runs under PYTHONHASHSEED=0 (it re-executes itself when unset), as exact
mode requires. Typed errors become one line on stderr and exit code 2; a closed stdout ends it
quietly (:mod:`muster_exact.core.pipes`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path

import hydra
from omegaconf import DictConfig

from harness import registries
from harness.checks import check
from harness.config import ConfigError, register
from harness.registries import CONF, files, group_dir
from harness.seed import ensure_hash_seed
from muster_exact.core.errors import MusterError
from muster_exact.core.pipes import closed_stdout
from muster_exact.core.registry import Registry

REPO = Path(__file__).resolve().parent.parent
# Each stage's run(cfg, repo), imported only when that stage runs (answer and judge load openai).
STAGES: Registry[Callable[[DictConfig, Path], object]] = Registry(
    "stage",
    {
        name: f"harness.stages.{name}:run"
        for name in ("contexts", "merge", "tables", "answer", "judge", "rescore", "audit", "published")
    },
)
log = logging.getLogger("harness")


def check_choices(argv: list[str]) -> None:
    """Unknown group options answered with the closest names, before Hydra composes."""
    for arg in argv:
        group, sep, value = arg.partition("=")
        group = group.lstrip("+~")
        if not sep or "/" in group or "." in group:
            continue
        named = registries.names(group) if group in registries.GROUPS else []
        if not named and group_dir(group) is None:
            continue
        options = Registry(group, dict.fromkeys(sorted({*files(group), *named}), group), error=ConfigError)
        for choice in value.split(","):
            if choice:
                options.check(choice)


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def run(cfg: DictConfig) -> None:
    try:
        check(cfg)
        STAGES.get(cfg.stage.name)(cfg, REPO)
    except MusterError as exc:  # raised inside Hydra's job: answer here, one line, exit 2
        print(f"harness: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # stdout's reader closed (`... | head`): stop quietly
        sys.exit(closed_stdout())


def main() -> None:
    ensure_hash_seed()
    try:
        check_choices(sys.argv[1:])
        register()
        run()
        sys.stdout.flush()  # a closed stdout is met here, not in the exit's last flush
    except MusterError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(closed_stdout())
