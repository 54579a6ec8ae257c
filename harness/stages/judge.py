"""Stage ``judge``: judge each saved answer as its benchmark does, then write the score tables.

Reads ``answers.jsonl`` (``stage=answer`` must have run with the same
reader), asks the judge what :func:`harness.judging.judge_requests` says
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
from tqdm import tqdm

from harness import audit, benchmarks, judging, llm, record, runs
from harness.data import DataRoot
from harness.pinned import PinnedFiles, describe
from harness.prompts import PromptSet
from harness.prompts import load as load_prompts
from harness.stages.answer import StageOrderError, pinned_files
from harness.tables import write_judged_tables

log = logging.getLogger(__name__)

ERRATA_FILE = "locomo/errata/locomo-audit_errors.json"
LOCOMO_FILE = "locomo/locomo10.json"


def questions_by_id(cfg: DictConfig, data: DataRoot) -> dict[str, dict[str, Any]]:
    benchmark = benchmarks.load(cfg.benchmark.name)
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


def corrected_golds(cfg: DictConfig, data: DataRoot) -> dict[str, str] | None:
    """LoCoMo with ``judge.errata=true``: qid -> the audit's corrected gold, for wrong golds only."""
    if not cfg.judge.errata:
        return None
    if cfg.benchmark.name != "locomo":
        raise StageOrderError(f"judge.errata applies to LoCoMo only, not {cfg.benchmark.name}")
    errata = audit.load_errata(data.path(ERRATA_FILE), data.path(LOCOMO_FILE))
    return {qid: e.correct_answer for qid, e in errata.items() if e.gold_wrong}


def saved_answers(directory: Path, known: set[str]) -> list[dict[str, Any]]:
    lines = runs.read_jsonl(directory / runs.ANSWERS, known).rows
    if not lines:
        raise StageOrderError(
            f"no answers at {directory / runs.ANSWERS}; run stage=answer first with the same reader"
        )
    return lines


def judge_one(
    client: llm.Client,
    prompts: PromptSet,
    requests: list[judging.Request],
    runs_per_request: int,
) -> tuple[dict[str, list[float | None]], list[dict[str, Any]]]:
    verdicts: dict[str, list[float | None]] = {}
    failures: list[dict[str, Any]] = []
    for request in requests:
        template = prompts.get(request.template)
        for run_index in range(runs_per_request):
            messages = template.messages(**request.values)
            outcome = client.ask(messages, template.json_reply, seed_offset=run_index)
            verdict = None
            if isinstance(outcome, llm.Failure):
                failures.append({"slot": request.slot, "run": run_index, "reason": outcome.reason})
            else:
                parsed = llm.parse_json_reply(outcome.text) if template.json_reply else None
                verdict = judging.read_verdict(request.slot, parsed or {"label": outcome.text})
                if verdict is None:
                    failures.append(
                        {
                            "slot": request.slot,
                            "run": run_index,
                            "reason": f"no verdict in {outcome.text[:120]!r}",
                        }
                    )
            verdicts.setdefault(request.slot, []).append(verdict)
    return verdicts, failures


def align_events(
    client: llm.Client, prompts: PromptSet, answer: str, rubric: list[str]
) -> tuple[list[int | None], list[dict[str, Any]]]:
    """BEAM's event alignment: each answer line, in order, is matched to the first reference event
    not yet claimed that the judge calls the same event. Blank lines match nothing (not asked)."""
    template = prompts.get("judge_event_match")
    claimed: set[int] = set()
    matches: list[int | None] = []
    failures: list[dict[str, Any]] = []
    for line_index, line in enumerate(judging.answer_lines(answer)):
        match = None
        for item_index, item in enumerate(rubric):
            if item_index in claimed or not line.strip():
                continue
            outcome = client.ask(template.messages(rubric_item=item, answer=line), template.json_reply)
            if isinstance(outcome, llm.Failure):
                failures.append({"slot": f"align:{line_index}:{item_index}", "reason": outcome.reason})
                continue
            parsed = llm.parse_json_reply(outcome.text) if template.json_reply else None
            if judging.read_verdict("align", parsed or {"label": outcome.text}) == 1.0:
                match = item_index
                claimed.add(item_index)
                break
        matches.append(match)
    return matches, failures


def run(cfg: DictConfig, repo: Path) -> Path:
    endpoint = llm.endpoint_from(cfg.judge)
    llm.check_ready(endpoint)
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    questions = questions_by_id(cfg, data)
    answers = saved_answers(runs.answers_dir(cfg), set(questions))  # before the prompts, which may be fetched
    pinned = pinned_files(cfg)
    prompts = load_prompts(cfg.judge.prompts, cfg.benchmark.name, pinned)
    errata = corrected_golds(cfg, data)
    directory = runs.judge_dir(cfg)
    directory.mkdir(parents=True, exist_ok=True)
    out_path = directory / runs.JUDGMENTS
    with runs.locked(out_path):
        return _judge_all(cfg, repo, endpoint, questions, answers, prompts, pinned, errata, out_path)


def _judge_all(
    cfg: DictConfig,
    repo: Path,
    endpoint: llm.Endpoint,
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
    started = record.utc_now()

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
        if line.get("answer") is None:  # nothing to judge: scored 0 (see judging.question_metrics)
            return judged
        requests = judging.judge_requests(cfg.benchmark.name, question, line["answer"], corrected)
        verdicts, failures = judge_one(client, prompts, requests, cfg.judge.runs)
        judged["verdicts"] = verdicts
        if judging.needs_alignment(cfg.benchmark.name, question):
            judged["alignment"], align_failures = align_events(
                client, prompts, line["answer"], question["rubric"]
            )
            failures += align_failures
        if failures:
            judged["judge_failures"] = failures
        return judged

    written = 0
    try:
        with runs.append_to(judged_before) as out:
            progress = tqdm(
                total=len(answers), initial=len(done), desc="judge", unit="q", disable=not cfg.stage.progress
            )
            for _, judged in llm.run_bounded(todo, judge, endpoint.concurrency):
                out.write(json.dumps(judged, ensure_ascii=False) + "\n")
                out.flush()
                written += 1
                progress.update()
            progress.close()
        tables = write_judged_tables(directory, cfg.benchmark.name, cfg.judge.official_quirks)
    finally:
        client.cache.close()
        reader_record = runs.answers_dir(cfg) / "run.json"
        reader = json.loads(reader_record.read_text()).get("reader") if reader_record.is_file() else None
        record.write(
            directory / "run.json",
            record.llm_stage(
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
                usage_total=record.usage_total(directory / "run.json", client.usage.to_dict()),
                counts={"answers": len(answers), "judged_now": written, "resumed": len(done)},
            ),
        )
    log.info("%s: %d judged, %d resumed; %s", directory, written, len(done), client.usage.to_dict())
    print(tables)
    return directory


def _scorer_files() -> dict[str, str]:
    """SHA-256 of this repo's scorer modules: what computed the lexical metrics."""
    from harness import scorers

    return scorers.sha256s()
