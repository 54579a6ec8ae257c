"""What ``make reproduce`` runs, in one place: read by ``scripts/reproduce.py`` (which runs it),
``scripts/pin_expected.py`` (which pins its figures) and :mod:`harness.report.page` (which draws them).

Every benchmark marked ``reproduced`` at U = 10, 20 and 40 (its family's three presets) under
the cpu-small profile; a benchmark's ``cpu_replay`` preset, if it names one, is the paper's CPU
replay setting (BEAM-100K at 20 units), called out in the summary and on the page.
"""

from __future__ import annotations

from harness import benchmarks

UNITS = (10, 20, 40)
MODELS = "cpu-small"
# The re-scored published outputs (stage=published), under the tables root.
PUBLISHED_TABLES = ("audit/published.csv", "audit/published_mab.csv")
# The reproduction's record, under the results root (git-ignored: it holds this machine's times).
RECORD = "reproduce.json"


def reproduced() -> list[str]:
    """The registered benchmarks whose context hashes are pinned, in registration order."""
    return [name for name in benchmarks.REGISTRY.names() if benchmarks.load(name).reproduced]


def family_presets(family: str, units: tuple[int, ...] = UNITS) -> list[str]:
    """A preset family's presets at ``units``: ``<family>.u10`` ..."""
    return [f"{family}.u{u}" for u in units]


def presets_of(benchmark: str, units: tuple[int, ...] = UNITS) -> list[str]:
    return family_presets(benchmarks.load(benchmark).preset_family, units)


def comparison_table(benchmark: str, preset: str) -> str:
    """A comparison table's path under the tables root."""
    return f"{benchmark}/{preset}/{MODELS}/comparison.csv"


def cpu_replay() -> list[tuple[str, str]]:
    """(benchmark, preset) of each reproduced benchmark's CPU replay setting."""
    return [
        (name, preset) for name in reproduced() if (preset := benchmarks.load(name).cpu_replay) is not None
    ]
