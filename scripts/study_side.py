"""What the side studies of issue 28 share (``study_neighbours.py``, ``study_record_pool.py``): each
variant minus native, paired per question, and the command line that writes the report.

Kept apart from ``study_cpu_retrieval.py``, whose code is hashed into its finished stores."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from study_cpu_retrieval import NATIVE_ROW, REPO, _paired

from harness.data import DataRoot

Scores = dict[tuple[str, int], list[float]]


def minus_native(got: Scores, rows: Sequence[str], units: Sequence[int]) -> list[str]:
    """A table of each row's mean and its paired difference from native, per U."""
    lines = ["| variant | U | mean | minus native | better / worse / equal |", "|---|---|---|---|---|"]
    for name in rows:
        for u in units:
            mean = np.mean(got[(name, u)])
            # The study's paired cell, read the other way round: this row minus native.
            paired = "|" if name == NATIVE_ROW else _paired(got[(name, u)], got[(NATIVE_ROW, u)])
            lines.append(f"| {name} | {u} | {mean:.4f} | {paired} |")
    return lines


def main(
    doc: str,
    heading: Sequence[str],
    benchmarks: str,
    section: Callable[[str, DataRoot, Sequence[int]], list[str]],
) -> None:
    """The command line: ``heading``, then ``section`` of each benchmark, printed and written."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--benchmarks", default=benchmarks)
    parser.add_argument("--units", default="10,20,40")
    parser.add_argument("--out", default=None, help="markdown report (default: print only)")
    args = parser.parse_args()
    data = DataRoot.open(args.data, REPO / "manifests" / "data.json")
    units = [int(u) for u in args.units.split(",")]
    lines = list(heading)
    for benchmark in args.benchmarks.split(","):
        lines += section(benchmark, data, units)
    report = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    print(report)
