"""Stage ``judge``: judge each saved answer as its benchmark does, then write the score tables.

Reads ``answers.jsonl`` (``stage=answer`` must have run with the same
reader), asks the judge what the benchmark's ``judge_requests`` says
(``judge.runs`` times each, the seed stepping by one per run so each run is
its own cached request), and appends one line per question to
``judgments.jsonl``: the question, golds, answer and every verdict as read
from the judge's JSON (``null`` where the judge's reply said nothing
usable, with the reason). The tables come from those two files alone, by
the same code ``stage=rescore`` runs offline.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness import benchmarks, llm, runs
from harness.benchmark import Benchmark
from harness.data import DataRoot
from harness.llm.judge_calls import align_events, judge_one
from harness.pinned import PinnedFiles, describe, pinned_files
from harness.prompts import PromptSet
from harness.prompts import load as load_prompts
from harness.runs import record as run_record
from harness.tables import write_judged_tables
from muster_exact.core import progress

log = logging.getLogger(__name__)


def questions_by_id(cfg: DictConfig, benchmark: Benchmark, data: DataRoot) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for store in benchmarks.selected(benchmark.stores(data, cfg.benchmark), cfg.benchmark):
        for question in store.questions:
            found[question.id] = {
                "question": question.text,
                "gold": list(question.gold),
                "category": question.category,
                "rubric": list(question.rubric),
            }
    return found


def run(cfg: DictConfig, repo: Path) -> Path:
    endpoint = llm.endpoint_from(cfg.judge)
    llm.check_ready(endpoint)
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    benchmark = benchmarks.load(cfg.benchmark.name)
    questions = questions_by_id(cfg, benchmark, data)
    # Before the prompts, which may be fetched.
    answers = runs.saved_answers(runs.answers_dir(cfg), set(questions))
    pinned = pinned_files(cfg)
    prompts = load_prompts(cfg.judge.prompts, benchmark, pinned)
    # judge.errata=true: qid -> the audit's corrected gold, for wrong golds only.
    errata = benchmark.corrected_golds(data) if cfg.judge.errata else None
    directory = runs.judge_dir(cfg)
    directory.mkdir(parents=True, exist_ok=True)
    out_path = directory / runs.JUDGMENTS
    with runs.locked(out_path):
        return _judge_all(
            cfg, repo, endpoint, benchmark, questions, answers, prompts, pinned, errata, out_path
        )


def _judge_all(
    cfg: DictConfig,
    repo: Path,
    endpoint: llm.Endpoint,
    benchmark: Benchmark,
    questions: dict[str, dict[str, Any]],
    answers: list[dict[str, Any]],
    prompts: PromptSet,
    pinned: PinnedFiles,
    errata: dict[str, str] | None,
    out_path: Path,
) -> Path:
    """Judge every answer not judged yet, appending to ``out_path`` (whose lock the caller holds)."""
    directory = out_path.parent
    judged_before = runs.read_jsonl(out_path, set(questions))
    done = judged_before.ids()
    client = llm.Client(endpoint, llm.ResponseCache(Path(cfg.paths.llm_cache)))
    started = run_record.utc_now()

    todo = (line for line in answers if line["qid"] not in done)

    def judge(line: dict[str, Any]) -> dict[str, Any]:
        question = questions[line["qid"]]
        corrected = errata.get(line["qid"]) if errata is not None else None
        judged: dict[str, Any] = {
            "order": line["order"],
            "qid": line["qid"],
            "store": line["store"],
            "category": question["category"],
            "question": question["question"],
            "gold": question["gold"],
            "answer": line.get("answer"),
            "answer_failure": line.get("failure"),
        }
        if question["rubric"]:
            judged["rubric"] = question["rubric"]
        if errata is not None:
            judged["errata_checked"] = True
            judged["gold_corrected"] = corrected
        if line.get("answer") is None:  # nothing to judge: scored 0 (see Benchmark.question_metrics)
            return judged
        requests = benchmark.judge_requests(question, line["answer"], corrected)
        verdicts, failures = judge_one(client, prompts, requests, cfg.judge.runs)
        judged["verdicts"] = verdicts
        events = benchmark.events_to_align(question, line["answer"])
        if events is not None:
            judged["alignment"], align_failures = align_events(client, prompts, events, question["rubric"])
            failures += align_failures
        if failures:
            judged["judge_failures"] = failures
        return judged

    written = 0
    try:
        with runs.append_to(judged_before) as out:
            counted = progress.bar(
                len(answers), "judge", "q", shown_from=1, initial=len(done), asked=cfg.stage.progress
            )
            for _, judged in llm.run_bounded(todo, judge, endpoint.concurrency):
                out.write(json.dumps(judged, ensure_ascii=False) + "\n")
                written += 1
                counted.update()
            counted.close()
        tables = write_judged_tables(directory, cfg.benchmark.name, cfg.judge.official_quirks)
    finally:
        client.cache.close()
        reader_record = runs.answers_dir(cfg) / "run.json"
        reader = json.loads(reader_record.read_text()).get("reader") if reader_record.is_file() else None
        run_record.write(
            directory / "run.json",
            run_record.llm_stage(
                "judge",
                OmegaConf.to_container(cfg, resolve=True),
                repo,
                started,
                {"reader": reader, "judge": endpoint.describe()},
                prompts.describe(),
                describe(pinned),
                client.usage.to_dict(),
                answers_run=str(runs.answers_dir(cfg)),
                scorers=_scorer_files(),
                usage_total=run_record.usage_total(directory / "run.json", client.usage.to_dict()),
                counts={"answers": len(answers), "judged_now": written, "resumed": len(done)},
            ),
        )
    log.info("%s: %d judged, %d resumed; %s", directory, written, len(done), client.usage.to_dict())
    print(tables)
    return directory


def _scorer_files() -> dict[str, str]:
    """SHA-256 of this repo's scorer modules: what computed the lexical metrics."""
    return benchmarks.scorer_sha256s()
