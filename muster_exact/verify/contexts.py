"""``muster verify contexts``: recompute contexts and compare their SHA-256 to the manifests.

A manifest (``manifests/contexts/<benchmark>/<preset>/<models>.json`` for
exact MUSTER, ``<models>.native.json`` for the same preset under native
rules, pinned from a harness run by ``scripts/pin_contexts.py``) lists, per
question id, the SHA-256 of the context MUSTER gave, the rule set, and the
stores it covers. This check rebuilds those stores with the library alone and
compares question by question.

Schema 2 (issue 11) added the rule set; a schema 1 manifest was pinned before
units were embedded as pieces and is refused with a word to re-pin.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_exact.core.errors import DataError, ManifestError
from muster_exact.verify import read_json, require_data_root
from muster_exact.verify.corpora import benchmark_stores

SCHEMA_VERSION = 2
RULE_SETS = ("exact", "native")


@dataclass(frozen=True)
class ContextCheck:
    benchmark: str
    preset: str
    models: str
    rules: str
    total: int
    identical: int
    differing: tuple[str, ...]  # question ids, in benchmark order
    missing: tuple[str, ...]  # pinned ids the data no longer has

    @property
    def name(self) -> str:
        return label(self.benchmark, self.preset, self.models, self.rules)


def manifest_paths(root: Path, preset: str | None = None) -> list[Path]:
    pattern = f"*/{preset}/*.json" if preset else "*/*/*.json"
    paths = sorted((root / "contexts").glob(pattern))
    if not paths:
        raise ManifestError(
            f"no context manifests under {root / 'contexts'}" + (f" for preset {preset}" if preset else "")
        )
    return paths


def load(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if isinstance(data, dict) and data.get("schema_version") == 1:
        raise ManifestError(
            f"{path}: pinned by an older MUSTER (schema 1, before pieces and rule sets); "
            "re-pin it with scripts/pin_contexts.py from a fresh run"
        )
    if (
        not isinstance(data, dict)
        or data.get("schema_version") != SCHEMA_VERSION
        or not isinstance(data.get("hashes"), dict)
        or not isinstance(data.get("stores"), list)
        or data.get("rules") not in RULE_SETS
    ):
        raise ManifestError(
            f"{path}: not a context manifest (schema_version {SCHEMA_VERSION} with 'rules', 'stores' "
            "and 'hashes')"
        )
    return data


def require_data(data_dir: Path, benchmarks: set[str]) -> None:
    """The data root, and each benchmark the manifests pin, checked before any verdict is printed."""
    require_data_root(data_dir)
    for benchmark in sorted(benchmarks):
        if next(iter(benchmark_stores(benchmark, data_dir)), None) is None:
            raise DataError(
                f"no {benchmark} stores under {data_dir}; pass --data DIR, the benchmark data root "
                "(e.g. ../shared/data), or --preset to check fewer manifests"
            )


def path_for(root: Path, benchmark: str, preset: str, models: str, rules: str) -> Path:
    suffix = "" if rules == "exact" else f".{rules}"
    return root / "contexts" / benchmark / preset / f"{models}{suffix}.json"


def check(
    path: Path, data_dir: Path, manifest: dict[str, Any] | None = None, *, progress: bool = False
) -> ContextCheck:
    """Rebuild the manifest's stores and compare each pinned question's context SHA-256.
    ``progress``: the count of questions checked, with its rate and ETA, on stderr."""
    from muster_exact.core.progress import bar
    from muster_exact.memory import build
    from muster_exact.rules import EXACT, NATIVE

    manifest = manifest if manifest is not None else load(path)
    rules = EXACT if manifest["rules"] == "exact" else NATIVE
    pinned: dict[str, str] = manifest["hashes"]
    wanted = set(manifest["stores"])
    seen: dict[str, str] = {}
    name = label(manifest["benchmark"], manifest["preset"], manifest["models"], manifest["rules"])
    counted = bar(len(pinned), name, "questions", shown_from=1, asked=progress)
    try:
        for store in benchmark_stores(manifest["benchmark"], data_dir):
            if store.name not in wanted:
                continue
            # The count stands still while a store is built: a build that takes a while says
            # what it is doing (its embedding's estimate), as every build does (issue 53).
            memory = build(
                store.source,
                preset=manifest["preset"],
                models=manifest["models"],
                rules=rules,
                progress=progress,
            )
            for question in store.questions:
                if question.id in pinned:
                    context = memory.context(question.text)
                    seen[question.id] = hashlib.sha256(context.text.encode()).hexdigest()
                    counted.update()
    finally:
        counted.close()
    differing = tuple(q for q in pinned if q in seen and seen[q] != pinned[q])
    missing = tuple(q for q in pinned if q not in seen)
    return ContextCheck(
        manifest["benchmark"],
        manifest["preset"],
        manifest["models"],
        manifest["rules"],
        len(pinned),
        len(pinned) - len(differing) - len(missing),
        differing,
        missing,
    )


def label(benchmark: str, preset: str, models: str, rules: str) -> str:
    """How a manifest is named in its progress and its verdict line."""
    return f"{benchmark} {preset} {models}" + ("" if rules == "exact" else f" ({rules} rules)")


def write(
    path: Path, benchmark: str, preset: str, models: str, rules: str, lines: Iterator[dict[str, Any]]
) -> int:
    hashes: dict[str, str] = {}
    stores: list[str] = []
    for line in lines:
        hashes[line["qid"]] = line["sha256"]
        if line["store"] not in stores:
            stores.append(line["store"])
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": benchmark,
        "preset": preset,
        "models": models,
        "rules": rules,
        "stores": stores,
        "hashes": hashes,
    }
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return len(hashes)
