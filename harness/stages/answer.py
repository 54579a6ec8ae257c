"""Stage ``answer``: a reader answers each question from its saved context.

Reads the contexts run (``stage=contexts`` with the same benchmark, preset,
models and system must have run), rebuilds each question's context through
the library and checks it against the saved SHA-256 (so the reader sees
exactly the context whose hash is pinned), asks the reader with the
benchmark's answer prompt, and appends one line per question to
``answers.jsonl``: the answer, the request's SHA-256, token usage, and a
``failure`` when the reader gave nothing usable. A rerun resumes; replies
come from the response cache, so a finished question costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness import benchmarks, llm, runs, systems
from harness.data import DataRoot
from harness.pinned import describe, pinned_files
from harness.prompts import Template
from harness.prompts import load as load_prompts
from harness.runs import StageOrderError, saved_contexts
from harness.runs import record as run_record
from harness.systems.memories import memory_for
from muster_exact.core import progress
from muster_exact.core.errors import MusterError
from muster_exact.verify.corpora import BenchmarkStore, Question

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    order: list[int]
    store: str
    question: Question
    context_sha256: str
    context: str


def choice_answer(reply: str, options: dict[str, str]) -> str:
    """LoCoMo's adversarial choice: a bare "a" / "(a)" reply stands for that option's text."""
    letter = reply.strip().lower().strip("().")
    if letter == "a" and "option_a" in options:
        return options["option_a"]
    if letter == "b" and "option_b" in options:
        return options["option_b"]
    return reply


def jobs(
    cfg: DictConfig, stores: list[BenchmarkStore], saved: dict[str, dict[str, Any]], done: set[str]
) -> Iterator[Job]:
    """Questions still to answer, with their contexts (rebuilt and checked against the saved hash)."""
    system = systems.check(cfg.system.name)
    for store in stores:
        todo = [q for q in store.questions if q.id not in done]
        if not todo:
            continue
        missing = [q.id for q in todo if q.id not in saved]
        if missing:
            raise StageOrderError(
                f"{len(missing)} questions of {store.name} have no saved context (e.g. {missing[0]}); "
                "finish stage=contexts first"
            )
        memories = None
        for question in todo:
            line = saved[question.id]
            text = line.get("text")
            if text is None:
                if memories is None:
                    memories, _, _ = memory_for(store, cfg, None)
                text = systems.context(memories, system, question.text)[0].text
            sha = hashlib.sha256(text.encode()).hexdigest()
            if sha != line["sha256"]:
                raise MusterError(
                    f"{question.id}: the context rebuilt now has SHA-256 {sha[:12]}..., the saved one "
                    f"{line['sha256'][:12]}...; the code or data changed since stage=contexts ran: rerun it"
                )
            yield Job(list(line["order"]), store.name, question, sha, text)


def run(cfg: DictConfig, repo: Path) -> Path:
    endpoint = llm.endpoint_from(cfg.reader)
    llm.check_ready(endpoint)
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    benchmark = benchmarks.load(cfg.benchmark.name)
    stores = list(benchmarks.selected(benchmark.stores(data, cfg.benchmark), cfg.benchmark))
    known = {q.id for store in stores for q in store.questions}
    saved = saved_contexts(runs.run_dir(cfg), known)  # before the prompts, which may be fetched
    pinned = pinned_files(cfg)
    prompts = load_prompts(cfg.reader.prompts, benchmark, pinned)
    directory = runs.answers_dir(cfg)
    directory.mkdir(parents=True, exist_ok=True)
    out_path = directory / runs.ANSWERS
    with runs.locked(out_path):
        answered = runs.read_jsonl(out_path, known)
        done = answered.ids()
        total = sum(len(s.questions) for s in stores)
        client = llm.Client(endpoint, llm.ResponseCache(Path(cfg.paths.llm_cache)))
        started = run_record.utc_now()

        def ask(job: Job) -> tuple[Template, dict[str, str], llm.Reply | llm.Failure]:
            template, values = benchmark.answer_template(prompts, job.question)
            messages = template.messages(context=job.context, **values)
            return template, values, client.ask(messages, template.json_reply)

        written = 0
        try:
            with runs.append_to(answered) as out:
                counted = progress.bar(
                    total, "answer", "q", shown_from=1, initial=len(done), asked=cfg.stage.progress
                )
                for job, (template, values, outcome) in llm.run_bounded(
                    jobs(cfg, stores, saved, done), ask, endpoint.concurrency
                ):
                    line = answer_line(job, template, values, outcome)
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                    written += 1
                    counted.update()
                counted.close()
        finally:
            client.cache.close()
            run_record.write(
                directory / "run.json",
                run_record.llm_stage(
                    "answer",
                    OmegaConf.to_container(cfg, resolve=True),
                    repo,
                    started,
                    {"reader": endpoint.describe()},
                    prompts.describe(),
                    describe(pinned),
                    client.usage.to_dict(),
                    contexts_run=str(runs.run_dir(cfg)),
                    totals=answer_totals(out_path),  # the whole answers file, over every resume
                    usage_total=run_record.usage_total(directory / "run.json", client.usage.to_dict()),
                    counts={"questions": total, "answered_now": written, "resumed": len(done)},
                ),
            )
    log.info("%s: %d answers written, %d resumed; %s", directory, written, len(done), client.usage.to_dict())
    return directory


def answer_totals(path: Path) -> dict[str, int]:
    """Questions, failures, requests sent (not from the cache) and tokens, over the answers file."""
    totals = {"questions": 0, "failed": 0, "requests_sent": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for line in runs.read_jsonl(path).rows:
        totals["questions"] += 1
        totals["failed"] += int(bool(line.get("failure")))
        totals["requests_sent"] += int(line.get("cached") is False)
        totals["prompt_tokens"] += int(line.get("prompt_tokens") or 0)
        totals["completion_tokens"] += int(line.get("completion_tokens") or 0)
    return totals


def answer_line(
    job: Job, template: Template, values: dict[str, str], outcome: llm.Reply | llm.Failure
) -> dict[str, Any]:
    line: dict[str, Any] = {
        "order": job.order,
        "qid": job.question.id,
        "store": job.store,
        "category": job.question.category,
        "context_sha256": job.context_sha256,
        "template": template.name,
        "template_sha256": template.sha256,
        "request_sha256": outcome.request_sha256,
    }
    if isinstance(outcome, llm.Failure):
        return {**line, "answer": None, "failure": outcome.reason}
    reply = outcome.text.strip()
    answer = choice_answer(reply, values)
    if answer != reply:  # a letter for a choice: keep what was said, score the option it names
        line["reply"] = reply
    return {
        **line,
        "answer": answer,
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "cached": outcome.cached,
    }
