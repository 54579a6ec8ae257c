"""Where a run lives and what it has done: content-addressed directories, resumable files.

A run's directory is ``<results>/<benchmark>/<preset>/<models>/<system>/<key>``
where ``key`` is the SHA-256 (first 16 hex) of everything that decides its
contexts: the benchmark selection, the data manifest's and the preset file's SHA-256,
the model profile, the system and the library's version and source SHA-256. The same config always lands in
the same place, so a rerun resumes and a changed config never mixes in.

Two promises keep a score from counting a question twice. A stage holds a lock on the file it
appends to (:func:`locked`), so a second run of the same configuration stops at once, naming
the first. Every JSON-lines file of a run is read by :func:`read_jsonl` alone, which refuses a
damaged line (with its number), a question id seen twice and one the benchmark does not have.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig, OmegaConf

from harness.runs.record import utc_now
from muster_exact import __version__ as library_version
from muster_exact.core.errors import MusterError
from muster_exact.memory import presets

log = logging.getLogger(__name__)

CONTEXTS = "contexts.jsonl"
TIMINGS = "timings.jsonl"
ANSWERS = "answers.jsonl"
JUDGMENTS = "judgments.jsonl"
WRITTEN_BY = {CONTEXTS: "contexts", TIMINGS: "contexts", ANSWERS: "answer", JUDGMENTS: "judge"}


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
    return shard_name(CONTEXTS, shard, shards)


def timings_name(shard: int, shards: int) -> str:
    return shard_name(TIMINGS, shard, shards)


def shard_name(name: str, shard: int, shards: int) -> str:
    """``contexts.jsonl`` -> ``contexts.shard-0-of-2.jsonl``: each shard appends to files of its own."""
    if shards == 1:
        return name
    stem, _, suffix = name.partition(".")
    return f"{stem}.shard-{shard}-of-{shards}.{suffix}"


# --- locks ---------------------------------------------------------------------


class StageOrderError(MusterError):
    """A stage needs the output of an earlier one that has not run."""


def saved_contexts(directory: Path, known: set[str]) -> dict[str, dict[str, Any]]:
    """The contexts run's lines by question id; none saved is the stage order's error."""
    path = directory / CONTEXTS
    lines = {line["qid"]: line for line in read_jsonl(path, known).rows}
    if not lines:
        raise StageOrderError(
            f"no contexts at {path}; run stage=contexts first with the same "
            "benchmark, preset, models and system"
        )
    return lines


def saved_answers(directory: Path, known: set[str]) -> list[dict[str, Any]]:
    """The answer run's lines; none saved is the stage order's error."""
    lines = read_jsonl(directory / ANSWERS, known).rows
    if not lines:
        raise StageOrderError(
            f"no answers at {directory / ANSWERS}; run stage=answer first with the same reader"
        )
    return lines


class RunLocked(MusterError):
    """Another process is writing the same run file."""


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``<path>.lock`` while appending to ``path``: a second run of the same configuration
    stops at once (exit 2) naming the holder, instead of appending the same questions again.

    The lock is the kernel's (``flock``), so it dies with its process: a run killed with SIGKILL
    leaves its holder record in the file but no lock, and the next run takes over with a log
    line. Never waits: a wait could hang behind a run that takes hours.
    """
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(
                f"{path} is being written by {_holder(fd)}; wait for that run to finish, "
                "or stop it and rerun to resume"
            ) from None
        if previous := _holder_record(fd):
            log.warning("took over the lock of %s from %s, which is no longer running", path, previous)
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_line().encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # an empty lock file: released cleanly, nothing to take over
    finally:
        os.close(fd)  # closing drops the lock


def _holder_line() -> str:
    return f"pid {os.getpid()} on host {socket.gethostname()} since {utc_now()}"


def _holder_record(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()


def _holder(fd: int) -> str:
    # Empty for the instant between the holder taking the lock and writing its line.
    return _holder_record(fd) or "another process (starting up)"


# --- the one reader --------------------------------------------------------------


class RunFileError(MusterError):
    """A run's JSON-lines file is damaged or holds lines of another run; the message names the line."""


@dataclass(frozen=True)
class JsonLines:
    """A run file's lines, checked, and where its last complete line ends."""

    path: Path
    rows: list[dict[str, Any]]
    end: int  # bytes up to the end of the last complete line: a cut-off write after it is dropped

    def ids(self) -> set[str]:
        return {row["qid"] for row in self.rows}


def read_jsonl(path: Path, known: Collection[str] | None = None, key: str | None = "qid") -> JsonLines:
    """Every line of a run file as a JSON object; an absent file has none.

    A last line without its newline is a write cut off by a kill: it is left out (with a log
    line) and recomputed by the run that resumes. Any other line that is not a JSON object
    stops the run with its line number. With ``key``, each line's ``key`` is a question id that
    appears once and, with ``known``, is one of those questions.
    """
    if not path.is_file():
        return JsonLines(path, [], 0)
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        number = data.count(b"\n") + 1
        log.warning(
            "%s:%d: the last line is cut off (an interrupted write); left out, recomputed on resume",
            path,
            number,
        )
    rows: list[dict[str, Any]] = []
    first_seen: dict[str, int] = {}
    for number, raw in enumerate(data[:end].splitlines(), start=1):
        if not raw.strip():
            continue
        row = _parse(path, number, raw)
        if key is not None:
            _check_id(path, number, row.get(key), first_seen, known)
        rows.append(row)
    return JsonLines(path, rows, end)


def _parse(path: Path, number: int, raw: bytes) -> dict[str, Any]:
    try:
        row = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSON and UTF-8 errors are ValueErrors
        row, reason = None, str(exc).splitlines()[0]
    else:
        reason = f"a JSON {type(row).__name__}"
    if not isinstance(row, dict):
        raise RunFileError(
            f"{path}:{number}: not a JSON object ({reason}); the file is damaged: delete this line and "
            f"the ones after it to recompute them, or delete the file and rerun stage={writer(path)}"
        )
    return row


def _check_id(
    path: Path, number: int, qid: Any, first_seen: dict[str, int], known: Collection[str] | None
) -> None:
    redo = f"delete the file and rerun stage={writer(path)}"
    if not isinstance(qid, str):
        raise RunFileError(f"{path}:{number}: no question id ('qid'); the file is damaged: {redo}")
    if qid in first_seen:
        raise RunFileError(
            f"{path}:{number}: question id {qid!r} again (first on line {first_seen[qid]}); two runs "
            f"wrote this file at once or lines were copied in: {redo}"
        )
    if known is not None and qid not in known:
        raise RunFileError(
            f"{path}:{number}: question id {qid!r} is not a question of the selected benchmark; "
            f"the file belongs to another selection: {redo}"
        )
    first_seen[qid] = number


def writer(path: Path) -> str:
    """The stage that writes a run file (for the advice in an error); shard files are contexts'."""
    return WRITTEN_BY.get(path.name, "contexts")


def append_to(found: JsonLines) -> TextIO:
    """``found.path`` opened to append after its last complete line: a cut-off write is cut off
    first. Only the holder of the file's lock may call it (a reader never cuts a file).

    Line-buffered: each line reaches the file when it is written, so a run killed mid-way keeps
    every line it finished, in every run file alike (contexts, timings, answers, judgments)."""
    if found.path.is_file() and found.path.stat().st_size > found.end:
        os.truncate(found.path, found.end)
    return found.path.open("a", encoding="utf-8", buffering=1)


def complete_lines(path: Path) -> list[dict[str, Any]]:
    """The checked lines of a run file (:func:`read_jsonl`), for scripts that only read."""
    return read_jsonl(path).rows


def read_parts(paths: list[Path]) -> list[dict[str, Any]]:
    """The lines of a sharded run's files (each read by :func:`read_jsonl`); shards never overlap."""
    rows: list[dict[str, Any]] = []
    found_in: dict[str, Path] = {}
    for path in paths:
        for row in read_jsonl(path).rows:
            if row["qid"] in found_in:
                raise RunFileError(
                    f"{path}: question id {row['qid']!r} is also in {found_in[row['qid']]}; the shards "
                    "overlap: delete both files and rerun those shards"
                )
            found_in[row["qid"]] = path
            rows.append(row)
    return rows
