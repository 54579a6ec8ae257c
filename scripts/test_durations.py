"""Where ``make test``'s time goes, from the JUnit XML file pytest writes (``make test`` leaves it
at ``.cache/test-junit.xml``): seconds per test file (summed over its tests; with several workers
the files overlap, so the sum is more than the wall time) and the slowest tests.

python scripts/test_durations.py .cache/test-junit.xml results/bench/test_durations.md --wall 1234
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

SLOWEST = 25


def durations(junit: Path) -> list[tuple[str, str, float]]:
    """(file, test, seconds) of every test case in the report."""
    cases = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split("::")[0]
        path = module.replace(".", "/")
        parts = path.split("/")
        file = "/".join(p for p in parts if not p[:1].isupper()) + ".py"  # drop a test class name
        cases.append((file, case.get("name", ""), float(case.get("time", 0.0))))
    return cases


def markdown(cases: list[tuple[str, str, float]], wall: float | None) -> str:
    by_file: dict[str, list[float]] = defaultdict(list)
    for file, _, seconds in cases:
        by_file[file].append(seconds)
    total = sum(seconds for _, _, seconds in cases)
    lines = ["# Test durations (`make test`)", ""]
    if wall is not None:
        lines.append(f"Wall time of the run: {wall:,.0f} s.")
    lines += [
        f"{len(cases)} tests in {len(by_file)} files, {total:,.0f} s summed over tests (workers overlap).",
        "",
        "| file | tests | seconds | share |",
        "| --- | ---: | ---: | ---: |",
    ]
    for file, times in sorted(by_file.items(), key=lambda item: -sum(item[1])):
        lines.append(f"| `{file}` | {len(times)} | {sum(times):,.1f} | {sum(times) / total:.1%} |")
    lines += ["", f"## The {SLOWEST} slowest tests", "", "| test | seconds |", "| --- | ---: |"]
    for file, name, seconds in sorted(cases, key=lambda c: -c[2])[:SLOWEST]:
        lines.append(f"| `{file}::{name}` | {seconds:,.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("junit", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--wall", type=float, default=None, help="the run's wall time in seconds")
    args = parser.parse_args()
    args.out.write_text(markdown(durations(args.junit), args.wall), encoding="utf-8")
    print(f"test durations: {args.out}")


if __name__ == "__main__":
    main()
