"""Stage ``rescore``: every judged table again, from the saved answers and judgments alone.

No network and no model: the lexical scorers run on the saved answers and
golds, the LLM metrics are read from the saved verdicts. Writes the tables
to ``<judge run>/rescored/`` and says whether they equal, byte for byte,
the ones the judge stage wrote (they must, unless a switch such as
``judge.official_quirks`` was changed on purpose).
"""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig

from harness import runs
from harness.runs import StageOrderError
from harness.tables import JUDGED, write_judged_tables

log = logging.getLogger(__name__)


def run(cfg: DictConfig, repo: Path) -> Path:
    directory = runs.judge_dir(cfg)
    if not (directory / runs.JUDGMENTS).is_file():
        raise StageOrderError(
            f"no judgments at {directory / runs.JUDGMENTS}; "
            "run stage=judge first with the same reader and judge"
        )
    out_dir = directory / "rescored"
    text = write_judged_tables(directory, cfg.benchmark.name, cfg.judge.official_quirks, out_dir)
    same = all(
        (directory / name).is_file() and (directory / name).read_bytes() == (out_dir / name).read_bytes()
        for name in (f"{JUDGED}.csv", f"{JUDGED}.md")
    )
    log.info("%s: tables %s the judge stage's", out_dir, "equal" if same else "DIFFER FROM")
    print(text)
    print(f"rescored tables {'equal' if same else 'differ from'} the judge stage's ({out_dir})")
    return out_dir
