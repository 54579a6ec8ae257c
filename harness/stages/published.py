"""Stage ``published``: re-score the published LoCoMo judge outputs, offline.

The locomo-audit files in ``<data>/locomo/outputs`` hold 1,540 answers per
run with three judge verdicts each. This stage recomputes the accuracy they
imply, per category and overall, by majority (2 of 3) and by the mean of
the three runs, for the four full-context answer runs, and the false-accept
rate of the deliberately wrong answer sets (ap-baseline v1, v2). No
network, no model. Writes ``<tables>/audit/published.{csv,md}``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from harness import audit
from harness.data import DataRoot
from harness.tables import markdown


def table(data: DataRoot) -> pd.DataFrame:
    ids = audit.locomo_ids(data.path(audit.LOCOMO_FILE))
    rows = []
    for name, relative in audit.PUBLISHED.items():
        answers = audit.load_judged(data.path(relative), ids)
        for how in ("majority", "mean"):
            rates = audit.accuracy(answers, how=how)
            rows.append(
                {
                    "file": name,
                    "answers": "wrong" if name.startswith("ap-") else "real",
                    "how": how,
                    "n": rates[audit.ALL].n,
                    **{category: round(rate.value, 4) for category, rate in rates.items()},
                }
            )
    return pd.DataFrame(rows)


def run(cfg: DictConfig, repo: Path) -> Path:
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    frame = table(data)
    out_dir = Path(cfg.paths.tables) / "audit"
    out_dir.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out_dir / "published.csv", index=False)
    text = (
        "# Published LoCoMo judge outputs (locomo-audit), re-scored offline\n\n"
        "Accuracy per category by majority of the three judge runs and by their mean; on the `wrong` "
        "sets it is the judge's false-accept rate.\n\n" + markdown(frame)
    )
    (out_dir / "published.md").write_text(text, encoding="utf-8")
    print(text)
    return out_dir
