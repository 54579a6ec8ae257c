"""Stage ``contexts``: build each store once, retrieve each question's context, hash it.

Writes ``contexts.jsonl`` (one line per question, in benchmark order: qid,
store, category, context SHA-256, tokens, unit ids, record ids, channel
provenance, the no-LLM scores) and ``timings.jsonl`` (build seconds, query
milliseconds: kept apart so the contexts file is byte-identical between
runs), then ``run.json``. A finished question is never redone: a rerun
resumes where the last one stopped. A shard writes files of its own
(``contexts.shard-K-of-N.jsonl``, ``timings.shard-K-of-N.jsonl``), so shards
run at once; ``stage=merge`` joins them. The contexts file is locked while it
is written (:func:`harness.runs.locked`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig, OmegaConf

from harness import benchmarks, runs, systems
from harness.benchmarks.metrics import question_scores
from harness.data import DataRoot
from harness.runs import record as run_record
from harness.systems import external
from harness.systems.memories import memory_for
from harness.tables import write_run_tables
from muster_exact.core import progress
from muster_exact.verify.corpora import BenchmarkStore

log = logging.getLogger(__name__)


def provenance(context: Any) -> dict[str, list[str]]:
    return {str(p.unit): sorted(p.channels) for p in context.provenance}


def run(cfg: DictConfig, repo: Path) -> Path:
    system = systems.check(cfg.system.name)
    benchmark = benchmarks.load(cfg.benchmark.name)
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    all_stores = list(benchmarks.selected(benchmark.stores(data, cfg.benchmark), cfg.benchmark))
    directory = runs.run_dir(cfg)
    directory.mkdir(parents=True, exist_ok=True)
    shard, shards = cfg.stage.shard, cfg.stage.shards  # in range: harness.checks.check
    out_path = directory / runs.contexts_name(shard, shards)
    with runs.locked(out_path):
        saved = runs.read_jsonl(out_path, known={q.id for store in all_stores for q in store.questions})
        timings_saved = runs.read_jsonl(directory / runs.timings_name(shard, shards), key=None)
        started_at = run_record.utc_now()
        counts = {"stores": 0, "questions": 0, "resumed": len(saved.rows)}
        with runs.append_to(saved) as out, runs.append_to(timings_saved) as timings:
            peers = _PeerAnswers(system, benchmark, data)
            _write_contexts(cfg, system, all_stores, saved.ids(), out, timings, counts, peers)
        if shards == 1:
            write_run_tables(directory)
        record_path = directory / f"run{'' if shards == 1 else f'.shard-{shard}-of-{shards}'}.json"
        run_record.write(
            record_path,
            {
                "first_run": _first_run(record_path),
                "stage": "contexts",
                "config": OmegaConf.to_container(cfg, resolve=True),
                "identity": runs.identity(cfg),
                "overrides": list(_overrides()),
                "git": run_record.git_state(repo),
                "environment": run_record.environment(),
                "data": dict(sorted(data.checked.items())),
                "models": _models(cfg.models.name),
                "started_utc": started_at,
                "ended_utc": run_record.utc_now(),
                "counts": counts,
                **({"peer": external.describe(system)} if system in systems.PEERS else {}),
            },
        )
    log.info("%s: %d questions written, %d resumed", directory, counts["questions"], counts["resumed"])
    return directory


def _write_contexts(
    cfg: DictConfig,
    system: str,
    all_stores: list[BenchmarkStore],
    done: set[str],
    out: TextIO,
    timings: TextIO,
    counts: dict[str, int],
    peers: _PeerAnswers,
) -> None:
    """Each question of this shard's stores not done yet: its context line and its timing.
    ``stage.progress``: one count over them all on stderr, with questions/s and an ETA (a bar on
    a terminal, a line per tenth or per 30 s in a log)."""
    shard, shards = cfg.stage.shard, cfg.stage.shards
    cache_path = None  # the default vector cache under $MUSTER_HOME
    mine = [(i, store) for i, store in enumerate(all_stores) if i % shards == shard]
    todo_of = {i: [(j, q) for j, q in enumerate(store.questions) if q.id not in done] for i, store in mine}
    total = sum(map(len, todo_of.values()))
    counted = progress.bar(total, f"{cfg.preset.name} {system}", "q", shown_from=1, asked=cfg.stage.progress)
    for store_index, store in mine:
        todo = todo_of[store_index]
        counts["stores"] += 1
        if not todo:
            continue
        memories, build_s, reused = memory_for(store, cfg, cache_path)
        peer = peers.of(store)
        # A memory reused from an earlier job of this process reports the build it cost then.
        timings.write(
            json.dumps({"store": store.name, "build_s": round(build_s, 4), "reused": reused}) + "\n"
        )
        for question_index, question in todo:
            t0 = time.perf_counter()
            context, budget = systems.context(memories, system, question.text, peer and peer.asked(question))
            query_ms = 1000 * (time.perf_counter() - t0)
            line: dict[str, Any] = {
                "order": [store_index, question_index],
                "qid": question.id,
                "store": store.name,
                "category": question.category,
                "sha256": hashlib.sha256(context.text.encode()).hexdigest(),
                "tokens": context.tokens,
                "budget": budget,
                "units": list(context.unit_ids),
                "records": list(context.record_ids),
                "provenance": provenance(context),
                **question_scores(question, context.text, context.record_ids),
            }
            if cfg.stage.save_text:
                line["text"] = context.text
            out.write(json.dumps(line, ensure_ascii=False) + "\n")  # on disk now (runs.append_to)
            timings.write(json.dumps({"qid": question.id, "query_ms": round(query_ms, 3)}) + "\n")
            counts["questions"] += 1
            counted.update()
    counted.close()


class _PeerAnswers:
    """A peer's answer per store (run once per store, :func:`external.rankings`); none for the
    project's own systems."""

    def __init__(self, system: str, benchmark: Any, data: DataRoot) -> None:
        self.system, self.benchmark, self.data = system, benchmark, data

    def of(self, store: BenchmarkStore) -> _StoreAnswer | None:
        if self.system not in systems.PEERS:
            return None
        fields = self.benchmark.peer_fields(self.data, store)
        return _StoreAnswer(external.rankings(self.system, store, fields), external.question_ids(store))


class _StoreAnswer:
    def __init__(self, ranked: external.Ranked, ids: dict[str, str]) -> None:
        self.ranked, self.ids = ranked, ids

    def asked(self, question: Any) -> tuple[external.Ranked, str]:
        return self.ranked, self.ids[question.text]


def _first_run(path: Path) -> dict[str, Any] | None:
    """When a run resumes, the record of the run that started it (what it did, when, on what)."""
    if not path.is_file():
        return None
    previous = json.loads(path.read_text())
    return previous.get("first_run") or {
        key: previous.get(key) for key in ("started_utc", "ended_utc", "counts", "git", "environment")
    }


def _overrides() -> list[str]:
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except ValueError:  # not inside a Hydra app (tests calling run() directly)
        return []


def _models(name: str) -> dict[str, Any]:
    from muster_exact.models import profile

    return profile(name).to_dict()
