"""``muster verify contexts``: recompute contexts and compare their SHA-256 to the manifests.

A manifest (``manifests/contexts/<benchmark>/<preset>/<models>.json``, pinned
from a harness run by ``scripts/pin_contexts.py``) lists, per question id, the
SHA-256 of the context MUSTER gave, and the stores it covers. This check
rebuilds those stores with the library alone and compares question by
question.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_exact.corpora import benchmark_stores
from muster_exact.errors import ManifestError

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ContextCheck:
    benchmark: str
    preset: str
    models: str
    total: int
    identical: int
    differing: tuple[str, ...]  # question ids, in benchmark order
    missing: tuple[str, ...]  # pinned ids the data no longer has


def manifest_paths(root: Path, preset: str | None = None) -> list[Path]:
    pattern = f"*/{preset}/*.json" if preset else "*/*/*.json"
    paths = sorted((root / "contexts").glob(pattern))
    if not paths:
        raise ManifestError(
            f"no context manifests under {root / 'contexts'}" + (f" for preset {preset}" if preset else "")
        )
    return paths


def load(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from None
    if data.get("schema_version") != SCHEMA_VERSION or not isinstance(data.get("hashes"), dict):
        raise ManifestError(f"{path}: not a context manifest (schema_version {SCHEMA_VERSION} with 'hashes')")
    return data


def check(path: Path, data_dir: Path) -> ContextCheck:
    from muster_exact.memory import build

    manifest = load(path)
    pinned: dict[str, str] = manifest["hashes"]
    wanted = set(manifest["stores"])
    seen: dict[str, str] = {}
    for store in benchmark_stores(manifest["benchmark"], data_dir):
        if store.name not in wanted:
            continue
        memory = build(store.source, preset=manifest["preset"], models=manifest["models"])
        for question in store.questions:
            if question.id in pinned:
                seen[question.id] = hashlib.sha256(memory.context(question.text).text.encode()).hexdigest()
    differing = tuple(q for q in pinned if q in seen and seen[q] != pinned[q])
    missing = tuple(q for q in pinned if q not in seen)
    return ContextCheck(
        manifest["benchmark"],
        manifest["preset"],
        manifest["models"],
        len(pinned),
        len(pinned) - len(differing) - len(missing),
        differing,
        missing,
    )


def write(path: Path, benchmark: str, preset: str, models: str, lines: Iterator[dict[str, Any]]) -> int:
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
        "stores": stores,
        "hashes": hashes,
    }
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return len(hashes)
