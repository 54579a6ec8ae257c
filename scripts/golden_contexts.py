"""Context SHA-256 for every preset on a fixed question set (the determinism golden).

Stores: LoCoMo conv-26, FactConsolidation sh_6k, BEAM-100K-1; questions: the
first 5 of each. Profile cpu-small (the machine's models). Each preset runs
under both rule sets (``muster_exact.rules``: exact and native), whatever the
detection mode. Presets that differ only in U share one build, queried at each
preset's U (U is a query-time setting; the pinned hashes were first made with
one build per preset and are unchanged). Prints JSON {rules: {preset: {store: {question index:
sha256}}}}; ``--write`` pins it in tests/golden/contexts.json.

    python scripts/golden_contexts.py --data ../shared/data [--mode native|exact] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from pathlib import Path

from muster_exact.derive.plan import MODES
from muster_exact.memory import build, presets
from muster_exact.rules import EXACT, NATIVE
from muster_exact.verify.corpora import beam_stores, locomo_stores, mab_stores

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden" / "contexts.json"
QUESTIONS_PER_STORE = 5


def question_sets(data: Path) -> list[tuple[str, object, list[str]]]:
    locomo = json.loads((data / "locomo/locomo10.json").read_text(encoding="utf-8"))[0]
    mab_path = data / "memoryagentbench/data/Conflict_Resolution.json"
    mab_rows = json.loads(mab_path.read_text(encoding="utf-8"))
    mab = next(s for s in mab_stores(mab_path) if s.name == "factconsolidation_sh_6k")
    mab_row = next(r for r in mab_rows if r["metadata"]["source"] == mab.name)
    beam_questions = json.loads((data / "beam/100K/1/probing_questions.json").read_text(encoding="utf-8"))
    n = QUESTIONS_PER_STORE
    return [
        (
            "locomo/conv-26",
            next(locomo_stores(data / "locomo/locomo10.json")).source,
            [q["question"] for q in locomo["qa"][:n]],
        ),
        ("mab/" + mab.name, mab.source, mab_row["questions"][:n]),
        (
            "beam/100K-1",
            next(beam_stores(data / "beam")).source,
            [q["question"] for ability in sorted(beam_questions) for q in beam_questions[ability]][:n],
        ),
    ]


def compute(
    data: Path, mode: str | None, cache: str | None
) -> dict[str, dict[str, dict[str, dict[str, str]]]]:
    sets = question_sets(data)
    out: dict[str, dict[str, dict[str, dict[str, str]]]] = {"exact": {}, "native": {}}
    # Presets that differ only in U share one build (U is read at query time), each queried at its U.
    families: dict[tuple, list[presets.Preset]] = {}
    for name in presets.names():
        preset = presets.load(name)
        families.setdefault(
            dataclasses.astuple(dataclasses.replace(preset, name="", units_read=0)), []
        ).append(preset)
    for family in families.values():
        for preset in family:
            for rules in out.values():
                rules[preset.name] = {}
        for store, source, questions in sets:
            first = family[0].name
            exact = build(source, preset=first, models="cpu-small", mode=mode, cache=cache, rules=EXACT)  # type: ignore[arg-type]
            memories = {"exact": exact, "native": exact.under(NATIVE)}
            for preset in family:
                for rules, memory in memories.items():
                    out[rules][preset.name][store] = {
                        str(i): hashlib.sha256(
                            memory.context(q, preset.units_read).text.encode("utf-8")
                        ).hexdigest()
                        for i, q in enumerate(questions)
                    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--cache", help="vector cache file (default: $MUSTER_HOME/vectors.sqlite)")
    parser.add_argument("--write", action="store_true", help=f"pin the result in {GOLDEN}")
    args = parser.parse_args()
    result = compute(args.data, args.mode, args.cache)
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if args.write:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    print(text, end="")


if __name__ == "__main__":
    main()
