"""Where a run lives and what it has done: content-addressed directories, resumable files.

A run's directory is ``<results>/<benchmark>/<preset>/<models>/<system>/<key>``
where ``key`` is the SHA-256 (first 16 hex) of everything that decides its
contexts: the benchmark selection, the data manifest's and the preset file's SHA-256,
the model profile, the system and the library's version and source SHA-256. The same config always lands in
the same place, so a rerun resumes and a changed config never mixes in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from muster_exact import __version__ as library_version
from muster_exact import presets

CONTEXTS = "contexts.jsonl"
TIMINGS = "timings.jsonl"
ANSWERS = "answers.jsonl"
JUDGMENTS = "judgments.jsonl"


def identity(cfg: DictConfig, system: str | None = None) -> dict[str, Any]:
    manifest = Path(cfg.paths.manifests) / "data.json"
    return {
        "benchmark": OmegaConf.to_container(cfg.benchmark, resolve=True),
        # Another data manifest means other data: never resume into this run.
        "data_manifest_sha256": hashlib.sha256(manifest.read_bytes()).hexdigest()
        if manifest.is_file()
        else None,
        "preset": cfg.preset.name,
        "preset_sha256": presets.sha256(cfg.preset.name),
        "models": cfg.models.name,
        "system": system or cfg.system.name,
        "library": library_version,
        "library_sha256": library_sha256(),
    }


def library_sha256() -> str:
    """SHA-256 over the library's source files: changed code never resumes an old run."""
    import muster_exact

    package = Path(muster_exact.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def key(cfg: DictConfig, system: str | None = None) -> str:
    canonical = json.dumps(identity(cfg, system), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def run_dir(cfg: DictConfig, system: str | None = None) -> Path:
    results = Path(cfg.paths.results)
    name = system or cfg.system.name
    return results / cfg.benchmark.name / cfg.preset.name / cfg.models.name / name / key(cfg, system)


def _short_sha(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def answers_identity(cfg: DictConfig) -> dict[str, Any]:
    """What decides the answers: the reader's model, endpoint, sampling and prompt set (not its
    concurrency or retry settings, which change how fast, not what)."""
    reader = cfg.reader
    return {key: reader[key] for key in ("model", "base_url", "temperature", "max_tokens", "seed", "prompts")}


def judge_identity(cfg: DictConfig) -> dict[str, Any]:
    judge = cfg.judge
    keys = ("model", "base_url", "temperature", "max_tokens", "seed", "prompts", "runs", "errata")
    return {key: judge[key] for key in keys}


def answers_dir(cfg: DictConfig) -> Path:
    """``<contexts run>/answers/<reader model>-<key>``: one per reader setting."""
    name = str(cfg.reader.model).replace("/", "_")
    return run_dir(cfg) / "answers" / f"{name}-{_short_sha(answers_identity(cfg))}"


def judge_dir(cfg: DictConfig) -> Path:
    """``<answers>/judge/<judge model>-<key>``: one per judge setting."""
    name = str(cfg.judge.model).replace("/", "_")
    return answers_dir(cfg) / "judge" / f"{name}-{_short_sha(judge_identity(cfg))}"


def contexts_name(shard: int, shards: int) -> str:
    return CONTEXTS if shards == 1 else f"contexts.shard-{shard}-of-{shards}.jsonl"


def complete_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The file's complete JSON lines; a torn last line (an interrupted write) is cut off."""
    if not path.is_file():
        return
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with path.open("r+b") as handle:
            handle.truncate(end)
    for line in data[:end].splitlines():
        if line.strip():
            yield json.loads(line)
