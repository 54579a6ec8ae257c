"""Measure the numbered-log slot rule on the 8 FactConsolidation stores.

For each store: how many slots, how many hold more than one version, the most
versions in one slot. For the single-hop (sh) stores, each question's gold
answer is the newest value of one fact, which checks the grouping from the
outside: find the lines that state the gold as their value and ask whether
the rule shows one of them (it is the newest version of its slot) or hides
all of them (an older version by the rule, or a wrong merge).

    python scripts/measure_slots.py --data ../shared/data [--json] [--sample 50]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from muster_exact import analyse
from muster_exact.verify.corpora import MAB_CONFLICT, mab_stores


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(".").strip().lower()


def measure_store(store, questions, answers, sample: int, rng: random.Random) -> dict:
    cut = analyse(store.source).cut
    units = cut.units
    versions = [[units[u] for u in members if units[u].serial is not None] for members in cut.parents]
    newest = {}
    for members in versions:
        if members:
            top = max(members, key=lambda u: (u.serial, u.id))
            for unit in members:
                newest[unit.id] = unit.id == top.id
    row = {
        "store": store.name,
        "lines": len(units),
        "slots": len(cut.parents),
        "slots_with_versions": sum(len(v) > 1 for v in versions),
        "max_versions": max(len(v) for v in versions),
        "lines_without_slot": sum(u.serial is not None and u.slot is None for u in units),
    }
    if "_sh_" in store.name:
        shown = hidden = absent = conflict_resolved = 0
        for answer_list in answers:
            golds = {_norm(a) for a in answer_list}
            stating = [
                u
                for u in units
                if u.serial is not None and any(_norm(cut.retrieval_text(u)).endswith(" " + g) for g in golds)
            ]
            if not stating:
                absent += 1
            elif any(newest.get(u.id, True) for u in stating):
                shown += 1
                conflict_resolved += any(newest.get(u.id) and len(cut.parents[u.parent]) > 1 for u in stating)
            else:
                hidden += 1
        row.update(
            questions=len(questions),
            gold_shown=shown,
            gold_hidden=hidden,
            gold_not_stated=absent,
            gold_shown_over_older_version=conflict_resolved,
        )
    multi = [v for v in versions if len(v) > 1]
    row["sample"] = [[cut.text(u) for u in v] for v in rng.sample(multi, min(sample, len(multi)))]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sample", type=int, default=0, help="print N random multi-version slots per store")
    args = parser.parse_args()
    path = args.data / MAB_CONFLICT
    rows_json = json.loads(path.read_text(encoding="utf-8"))
    rng = random.Random(0)
    rows = [
        measure_store(store, row["questions"], row["answers"], args.sample, rng)
        for store, row in zip(mab_stores(path), rows_json, strict=True)
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        "| store | lines | slots | slots with >1 version | max versions "
        "| gold shown | gold hidden | gold not stated |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        sh = (
            (
                f"{r['gold_shown']} ({r['gold_shown_over_older_version']} over an older version)"
                f" | {r['gold_hidden']} | {r['gold_not_stated']}"
            )
            if "gold_shown" in r
            else "- | - | -"
        )
        counts = f"{r['lines']} | {r['slots']} | {r['slots_with_versions']} | {r['max_versions']}"
        print(f"| {r['store']} | {counts} | {sh} |")
    for r in rows:
        for slot in r["sample"]:
            print("\n".join(["", *slot]))


if __name__ == "__main__":
    main()
