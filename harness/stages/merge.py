"""Stage ``merge``: join the shard files of a sharded run into one ``contexts.jsonl``.

Lines are ordered by (store index, question index), the order an unsharded
run writes, so the merged file equals an unsharded run's byte for byte. The
shards' timings are joined into ``timings.jsonl`` the same way. Every shard
file is locked while it is read: a shard still running stops the merge.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from harness import runs
from harness.tables import write_run_tables
from muster_exact.core.errors import DataError


def run(cfg: DictConfig, repo: Path) -> Path:
    directory = runs.run_dir(cfg)
    shards = cfg.stage.shards
    parts = [directory / runs.contexts_name(k, shards) for k in range(shards)]
    missing = [p.name for p in parts if not p.is_file()]
    if shards < 2 or missing:
        raise DataError(f"cannot merge {directory}: need {shards} >= 2 shard files, missing {missing}")
    out = directory / runs.CONTEXTS
    with contextlib.ExitStack() as held:
        for path in [out, *parts]:
            held.enter_context(runs.locked(path))
        lines = runs.read_parts(parts)
        lines.sort(key=lambda line: tuple(line["order"]))
        replace(out, lines)
        timings = [directory / runs.timings_name(k, shards) for k in range(shards)]
        if any(path.is_file() for path in timings):  # shards run before they had timings of their own: kept
            rows = [row for path in timings for row in runs.read_jsonl(path, key=None).rows]
            replace(directory / runs.TIMINGS, rows)
        write_run_tables(directory)
    return directory


def replace(path: Path, lines: list[dict[str, Any]]) -> None:
    """Write the whole file beside it, then move it in place: never a half-written file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)
