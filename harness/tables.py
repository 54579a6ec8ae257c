"""Score tables from saved contexts: per category, with 95% bootstrap intervals.

Per run: ``scores.csv`` and ``scores.md`` (deterministic: computed from
``contexts.jsonl`` alone, the bootstrap seeded). Per benchmark, preset and
model profile: ``comparison.csv`` / ``.md`` puts every system side by side,
deterministic numbers only, so a committed table changes only when a score
does; the build seconds and query latency from ``timings.jsonl`` (measured,
so they vary from run to run) go to :func:`timing_comparison`, kept beside
the runs (git-ignored), never beside the committed tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness import benchmarks, runs
from harness.benchmark import Benchmark
from harness.benchmarks.metrics import HEADLINE
from harness.systems import MUSTER_ROWS
from muster_exact.memory.variants import BUDGETED

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
    return pd.DataFrame(runs.read_jsonl(directory / runs.CONTEXTS).rows)


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


def write_run_tables(directory: Path, contexts: pd.DataFrame | None = None) -> pd.DataFrame:
    """``scores.csv`` / ``.md`` of a run; ``contexts``: its contexts, when the caller read them."""
    summary = summarise(load_contexts(directory) if contexts is None else contexts)
    summary.to_csv(directory / "scores.csv", index=False)
    (directory / "scores.md").write_text(markdown(summary), encoding="utf-8")
    return summary


def timings(directory: Path) -> tuple[float, float]:
    """(build seconds summed over stores, median query milliseconds); a resumed run's
    later entries replace earlier ones."""
    builds: dict[str, float] = {}
    queries: dict[str, float] = {}
    for entry in runs.read_jsonl(directory / runs.TIMINGS, key=None).rows:
        if "build_s" in entry:
            builds[entry["store"]] = entry["build_s"]
        else:
            queries[entry["qid"]] = entry["query_ms"]
    median = float(np.median(list(queries.values()))) if queries else float("nan")
    return float(sum(builds.values())), median


def comparison(directories: dict[str, Path]) -> pd.DataFrame:
    """Every system's overall figures side by side (deterministic: from the contexts alone), and
    on each MUSTER row its lead over the best baseline (:func:`paired_lead`)."""
    rows = []
    frames = {system: load_contexts(directory) for system, directory in directories.items()}
    for system, directory in directories.items():
        summary = write_run_tables(directory, frames[system])
        overall = summary[summary["category"] == "all"].iloc[0].to_dict()
        rows.append(
            {
                "system": system,
                "n": overall["n"],
                "tokens_mean": overall["tokens_mean"],
                **{k: overall[k] for k in METRICS},
                **{f"{k}_ci": overall[f"{k}_ci"] for k in METRICS},
                **paired_lead(system, frames),
            }
        )
    frame = pd.DataFrame(rows)
    return frame.dropna(axis=1, how="all")


LEAD_COLUMNS = ("best_baseline", "minus_best", "minus_best_ci")


def headline_metric(frame: pd.DataFrame) -> str | None:
    """The metric a benchmark is compared on: evidence recall where questions have evidence ids,
    else answer in context."""
    for metric in HEADLINE:
        if metric in frame and frame[metric].notna().any():
            return metric
    return None


def paired_lead(system: str, frames: dict[str, pd.DataFrame]) -> dict[str, object]:
    """For a MUSTER row: the best budgeted baseline on the headline metric, this row minus it, and
    the 95% paired bootstrap interval of that difference (the questions resampled together, so
    the interval is of the difference itself, not of two overlapping means). Other rows: none."""
    empty: dict[str, object] = dict.fromkeys(LEAD_COLUMNS)
    baselines = [s for s in BUDGETED if s in frames]
    if system not in MUSTER_ROWS or not baselines:
        return empty
    metric = headline_metric(frames[system])
    if metric is None:
        return empty
    scored = {
        s: frames[s].set_index(["store", "qid"])[metric].dropna().astype(float) for s in (system, *baselines)
    }
    best = max(baselines, key=lambda s: (scored[s].mean(), -baselines.index(s)))
    both = pd.concat([scored[system], scored[best]], axis=1, join="inner")
    difference = (both.iloc[:, 0] - both.iloc[:, 1]).tolist()
    low, high = bootstrap_ci(difference)
    return {
        "best_baseline": best,
        "minus_best": round(float(np.mean(difference)), 4),
        "minus_best_ci": f"[{low:.4f}, {high:.4f}]",
    }


def timing_comparison(directories: dict[str, Path]) -> pd.DataFrame:
    """Every system's measured build seconds and median query milliseconds, and its run."""
    rows = []
    for system, directory in directories.items():
        build_s, query_ms = timings(directory)
        rows.append(
            {
                "system": system,
                "build_s": round(build_s, 1),
                "query_ms_p50": round(query_ms, 1),
                "run": str(directory),
            }
        )
    return pd.DataFrame(rows)


# --- judged answers ------------------------------------------------------------

JUDGED = "judged"


def judged_frame(directory: Path, benchmark: Benchmark, official_quirks: bool) -> pd.DataFrame:
    """One row per judged question (in benchmark order), its metrics recomputed from the saved line."""

    rows = []
    for line in sorted(runs.read_jsonl(directory / runs.JUDGMENTS).rows, key=lambda x: x["order"]):
        rows.append(
            {
                "qid": line["qid"],
                "store": line["store"],
                "category": str(line["category"]),
                "failed": float(line.get("answer") is None),
                "judge_failed": float(bool(line.get("judge_failures"))),
                **benchmark.question_metrics(line, official_quirks),
            }
        )
    return pd.DataFrame(rows)


def _metric_columns(frame: pd.DataFrame) -> list[str]:
    fixed = {"qid", "store", "category", "failed", "judge_failed"}
    return [c for c in frame.columns if c not in fixed and frame[c].notna().any()]


def summarise_judged(frame: pd.DataFrame, clustered: bool) -> pd.DataFrame:
    """Per category and 'all': n, failures, each metric's mean and 95% bootstrap interval.

    ``clustered`` (the benchmark says, e.g. BEAM): a category's value is the mean over conversations of
    the conversation's mean, 'all' the mean over categories, as BEAM reports;
    the interval resamples conversations.
    """
    out = []
    categories = sorted(frame["category"].unique(), key=_category_key)
    for name in ["all", *categories]:
        group = frame if name == "all" else frame[frame["category"] == name]
        row: dict[str, object] = {
            "category": name,
            "n": len(group),
            "failed": int(group["failed"].sum()),
            "judge_failed": int(group["judge_failed"].sum()),
        }
        for metric in _metric_columns(frame):
            values = group[["store", "category", metric]].dropna()
            if values.empty:
                row[metric], row[f"{metric}_ci"] = None, None
                continue
            if clustered:
                mean = _two_level_mean(values, metric)
                low, high = _cluster_ci(values, metric)
            else:
                mean = float(values[metric].mean())
                low, high = bootstrap_ci(values[metric].astype(float).tolist())
            row[metric] = round(mean, 4)
            row[f"{metric}_ci"] = f"[{low:.4f}, {high:.4f}]"
        out.append(row)
    return pd.DataFrame(out)


def _category_key(value: str) -> tuple[int, str]:
    return (0, f"{int(value):06d}") if value.isdigit() else (1, value)


def _two_level_mean(values: pd.DataFrame, metric: str) -> float:
    """Mean per category within each conversation, then across conversations, then across categories."""
    per_conversation = values.groupby(["category", "store"])[metric].mean()
    per_category = per_conversation.groupby(level="category").mean()
    return float(per_category.mean())


def _cluster_ci(values: pd.DataFrame, metric: str, seed: int = SEED) -> tuple[float, float]:
    """The interval of ``_two_level_mean`` over conversations drawn with replacement (a store drawn
    twice counts as two conversations). Each draw is a count per store, so every resample is one
    matrix product over per-(category, store) sums instead of a rebuilt frame."""
    stores = sorted(values["store"].unique())
    grouped = values.groupby(["category", "store"])[metric].mean().unstack("store").reindex(columns=stores)
    means = grouped.to_numpy(dtype=float)  # category x store: the conversation's mean, NaN if none
    present = ~np.isnan(means)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(stores), size=(BOOTSTRAP, len(stores)))
    counts = np.stack([np.bincount(row, minlength=len(stores)) for row in picks]).astype(float)
    weight = counts @ present.T  # resample x category: conversations drawn that have it
    total = counts @ np.where(present, means, 0.0).T
    with np.errstate(invalid="ignore", divide="ignore"):
        per_category = np.where(weight > 0, total / weight, np.nan)
    estimates = np.nanmean(per_category, axis=1)
    low, high = np.percentile(estimates, [2.5, 97.5])
    return float(low), float(high)


def write_judged_tables(
    directory: Path, benchmark: str, official_quirks: bool, out_dir: Path | None = None
) -> str:
    """``judged.csv`` and ``judged.md`` (per category, intervals) from the saved judgments alone."""
    out_dir = out_dir or directory
    out_dir.mkdir(parents=True, exist_ok=True)
    scored = benchmarks.load(benchmark)
    frame = judged_frame(directory, scored, official_quirks)
    summary = summarise_judged(frame, clustered=scored.clustered)
    summary.to_csv(out_dir / f"{JUDGED}.csv", index=False)
    text = f"# Judged answers: {benchmark}\n{scored.table_note(official_quirks)}\n{markdown(summary)}"
    (out_dir / f"{JUDGED}.md").write_text(text, encoding="utf-8")
    return text
