"""Stage ``merge``: join the shard files of a sharded run into one ``contexts.jsonl``.

Lines are ordered by (store index, question index), the order an unsharded
run writes, so the merged file equals an unsharded run's byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from harness import runs
from harness.tables import write_run_tables
from muster_exact.errors import DataError


def run(cfg: DictConfig, repo: Path) -> Path:
    directory = runs.run_dir(cfg)
    shards = cfg.stage.shards
    parts = [directory / runs.contexts_name(k, shards) for k in range(shards)]
    missing = [p.name for p in parts if not p.is_file()]
    if shards < 2 or missing:
        raise DataError(f"cannot merge {directory}: need {shards} >= 2 shard files, missing {missing}")
    lines = [line for part in parts for line in runs.complete_lines(part)]
    lines.sort(key=lambda line: tuple(line["order"]))
    out = directory / runs.CONTEXTS
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    tmp.replace(out)
    write_run_tables(directory)
    return directory
