"""Stage ``published``: re-score published third-party outputs, offline.

LoCoMo: the locomo-audit files in ``<data>/locomo/outputs`` hold 1,540
answers per run with three judge verdicts each. This stage recomputes the
accuracy they imply, per category and overall, by majority (2 of 3) and by
the mean of the three runs, for the four full-context answer runs, and the
false-accept rate of the deliberately wrong answer sets (ap-baseline v1,
v2). Writes ``<tables>/audit/published.{csv,md}``.

MemoryAgentBench: the nous-memoryAgentBench files in
``<data>/memoryagentbench/outputs`` hold one answer per question with the
file's own verdict. This stage scores the same answers with the benchmark's
headline metric per source (``harness.benchmarks.mab.published``), beside the figure
each file records, counts the disagreements each way and explains them.
Writes ``<tables>/audit/published_mab.{csv,md}``.

No network, no model. Both are read in place, checked against the data
manifest.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from harness.benchmarks.locomo import audit
from harness.benchmarks.mab import published as published_mab
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


def write_locomo(data: DataRoot, out_dir: Path) -> str:
    frame = table(data)
    frame.to_csv(out_dir / "published.csv", index=False)
    text = (
        "# Published LoCoMo judge outputs (locomo-audit), re-scored offline\n\n"
        "Accuracy per category by majority of the three judge runs and by their mean; on the `wrong` "
        "sets it is the judge's false-accept rate.\n\n" + markdown(frame)
    )
    (out_dir / "published.md").write_text(text, encoding="utf-8")
    return text


def write_memoryagentbench(data: DataRoot, out_dir: Path) -> str:
    found = published_mab.comparisons(data)
    # object dtype keeps counts as integers and missing cells empty, in the CSV and the Markdown.
    frame = pd.DataFrame(published_mab.rows(found), dtype=object)
    frame.to_csv(out_dir / "published_mab.csv", index=False)
    text = published_mab.report(found, markdown(frame))
    (out_dir / "published_mab.md").write_text(text, encoding="utf-8")
    return text


def run(cfg: DictConfig, repo: Path) -> Path:
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    out_dir = Path(cfg.paths.tables) / "audit"
    out_dir.mkdir(parents=True, exist_ok=True)
    print(write_locomo(data, out_dir))
    print(write_memoryagentbench(data, out_dir))
    return out_dir
