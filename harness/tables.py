"""Score tables from saved contexts: per category, with 95% bootstrap intervals.

Per run: ``scores.csv`` and ``scores.md`` (deterministic: computed from
``contexts.jsonl`` alone, the bootstrap seeded). Per benchmark, preset and
model profile: ``comparison.csv`` / ``.md`` puts every system side by side,
with build seconds and query latency from ``timings.jsonl`` (measured, so
those two columns vary from run to run).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness import runs

METRICS = ("evidence_recall", "evidence_hit", "answer_in_context")
BOOTSTRAP = 1000
SEED = 0


def bootstrap_ci(values: Sequence[float], seed: int = SEED) -> tuple[float, float]:
    """95% percentile interval of the mean, from BOOTSTRAP resamples (fixed seed)."""
    data = np.asarray(values, dtype=float)
    if len(data) == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(BOOTSTRAP, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def load_contexts(directory: Path) -> pd.DataFrame:
    rows = list(runs.complete_lines(directory / runs.CONTEXTS))
    return pd.DataFrame(rows)


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per category and one 'all', each metric's mean and 95% interval."""
    out = []
    groups = [("all", frame)] + [
        (str(c), g) for c, g in sorted(frame.groupby("category"), key=lambda x: str(x[0]))
    ]
    for name, group in groups:
        row: dict[str, object] = {
            "category": name,
            "n": len(group),
            "tokens_mean": round(group["tokens"].mean(), 1),
        }
        for metric in METRICS:
            values = group[metric].dropna().astype(float) if metric in group else pd.Series(dtype=float)
            if len(values):
                low, high = bootstrap_ci(values.tolist())
                row[metric] = round(values.mean(), 4)
                row[f"{metric}_ci"] = f"[{low:.4f}, {high:.4f}]"
            else:
                row[metric] = None
                row[f"{metric}_ci"] = None
        out.append(row)
    return pd.DataFrame(out)


def markdown(frame: pd.DataFrame) -> str:
    """A Markdown table (no extra dependency), empty cells for missing values."""

    def cell(value: object) -> str:
        return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)

    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"


def write_run_tables(directory: Path) -> pd.DataFrame:
    summary = summarise(load_contexts(directory))
    summary.to_csv(directory / "scores.csv", index=False)
    (directory / "scores.md").write_text(markdown(summary), encoding="utf-8")
    return summary


def timings(directory: Path) -> tuple[float, float]:
    """(build seconds summed over stores, median query milliseconds); a resumed run's
    later entries replace earlier ones."""
    builds: dict[str, float] = {}
    queries: dict[str, float] = {}
    path = directory / runs.TIMINGS
    if path.is_file():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "build_s" in entry:
                builds[entry["store"]] = entry["build_s"]
            else:
                queries[entry["qid"]] = entry["query_ms"]
    median = float(np.median(list(queries.values()))) if queries else float("nan")
    return float(sum(builds.values())), median


def comparison(directories: dict[str, Path]) -> pd.DataFrame:
    rows = []
    for system, directory in directories.items():
        summary = write_run_tables(directory)
        overall = summary[summary["category"] == "all"].iloc[0].to_dict()
        build_s, query_ms = timings(directory)
        rows.append(
            {
                "system": system,
                "n": overall["n"],
                "tokens_mean": overall["tokens_mean"],
                **{k: overall[k] for k in METRICS},
                **{f"{k}_ci": overall[f"{k}_ci"] for k in METRICS},
                "build_s": round(build_s, 1),
                "query_ms_p50": round(query_ms, 1),
                "run": str(directory),
            }
        )
    frame = pd.DataFrame(rows)
    return frame.dropna(axis=1, how="all")
