"""Stage ``audit``: measure the judge itself on LoCoMo.

Judges are the weakest link of this field, so before its scores are
believed a judge is run over answers whose truth is known:

* the deliberately wrong answers of ``locomo-audit_ap-baseline`` (v1 and
  v2): every acceptance is a false accept;
* real full-context answers (``locomo-audit_fc-baseline``, one run per
  ``stage.audit_runs``): the score it gives real answers, beside the score
  the published judge gave the same answers.

With ``judge.errata=true`` the real answers are also judged against the
corrected golds of the audit's errata, and both figures are reported.
Writes ``results/audit/<judge>-<key>/`` (verdicts per file as JSON lines,
``audit.csv``, ``audit.md``) and a run record. ``stage.limit`` judges only
the first N answers of each file (quick runs).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from harness import benchmarks, llm, runs
from harness.benchmarks.locomo import audit
from harness.data import DataRoot
from harness.llm.judge_calls import judge_one
from harness.llm.judging import majority
from harness.pinned import describe, pinned_files
from harness.prompts import load as load_prompts
from harness.runs import record as run_record
from harness.tables import bootstrap_ci, markdown

log = logging.getLogger(__name__)

# The published files (harness.benchmarks.locomo.audit.PUBLISHED) this audit judges again.
WRONG = {name: audit.PUBLISHED[name] for name in ("ap-v1", "ap-v2")}
REAL = {name: audit.PUBLISHED[name] for name in ("fc-gpt-4o-mini-cot",)}


def audit_dir(cfg: DictConfig) -> Path:
    identity = {**runs.judge_identity(cfg), "limit": cfg.stage.limit}
    name = str(cfg.judge.model).replace("/", "_")
    return Path(cfg.paths.tables) / "audit" / f"{name}-{runs._short_sha(identity)}"


def run(cfg: DictConfig, repo: Path) -> Path:
    endpoint = llm.endpoint_from(cfg.judge)
    llm.check_ready(endpoint)
    pinned = pinned_files(cfg)
    prompts = load_prompts(cfg.judge.prompts, benchmarks.load(audit.BENCHMARK), pinned)
    data = DataRoot.open(cfg.paths.data_root, Path(cfg.paths.manifests) / "data.json")
    ids = audit.locomo_ids(data.path(audit.LOCOMO_FILE))
    errata = audit.load_errata(data.path(audit.ERRATA_FILE), ids) if cfg.judge.errata else None
    directory = audit_dir(cfg)
    directory.mkdir(parents=True, exist_ok=True)
    client = llm.Client(endpoint, llm.ResponseCache(Path(cfg.paths.llm_cache)))
    started = run_record.utc_now()
    rows: list[dict[str, Any]] = []
    try:
        for name, relative in {**WRONG, **REAL}.items():
            answers = audit.load_judged(data.path(relative), ids)[: cfg.stage.limit]
            verdicts = _judge_file(client, prompts, answers, errata, cfg, directory / f"{name}.jsonl")
            rows.extend(_summary_rows(name, name in WRONG, answers, verdicts))
        frame = pd.DataFrame(rows)
        frame.to_csv(directory / "audit.csv", index=False)
        text = _report(cfg, frame)
        (directory / "audit.md").write_text(text, encoding="utf-8")
    finally:
        client.cache.close()
        run_record.write(
            directory / "run.json",
            run_record.llm_stage(
                "audit",
                OmegaConf.to_container(cfg, resolve=True),
                repo,
                started,
                {"judge": endpoint.describe()},
                prompts.describe(),
                describe(pinned),
                client.usage.to_dict(),
                data=dict(sorted(data.checked.items())),
            ),
        )
    print(text)
    return directory


def _judge_file(
    client: llm.Client,
    prompts: Any,
    answers: list[audit.JudgedAnswer],
    errata: dict[str, audit.Erratum] | None,
    cfg: DictConfig,
    path: Path,
) -> dict[str, dict[str, list[float | None]]]:
    """Our judge's verdicts for every answer of one published file (resumable through the cache)."""

    def one(answer: audit.JudgedAnswer) -> dict[str, list[float | None]]:
        question = {"question": answer.question, "gold": [answer.gold], "category": answer.category}
        corrected = audit.corrected_gold(answer.qid, answer.gold, errata) if errata else None
        if corrected == answer.gold:
            corrected = None
        requests = benchmarks.load(audit.BENCHMARK).judge_requests(question, answer.answer, corrected)
        verdicts, _ = judge_one(client, prompts, requests, cfg.judge.runs)
        if errata is not None and "verdict_corrected" not in verdicts:
            verdicts["verdict_corrected"] = verdicts.get("verdict", [])
        return verdicts

    found: dict[str, dict[str, list[float | None]]] = {}
    with path.open("w", encoding="utf-8") as out:
        for answer, verdicts in llm.run_bounded(answers, one, client.endpoint.concurrency):
            found[answer.qid] = verdicts
        for answer in answers:  # in file order: the file is the same on every run
            out.write(json.dumps({"qid": answer.qid, "verdicts": found[answer.qid]}) + "\n")
    return found


def _summary_rows(
    name: str,
    wrong: bool,
    answers: list[audit.JudgedAnswer],
    verdicts: dict[str, dict[str, list[float | None]]],
) -> list[dict[str, Any]]:
    published = audit.accuracy(answers, how="mean")
    rows = []
    for category in ["all", *sorted({a.category for a in answers})]:
        group = [a for a in answers if category == "all" or a.category == category]
        row: dict[str, Any] = {
            "file": name,
            "answers": "wrong" if wrong else "real",
            "category": category,
            "n": len(group),
            "published_judge": round(published[category].value, 4),
        }
        for slot, column in (("verdict", "our_judge"), ("verdict_corrected", "our_judge_corrected")):
            values = [majority(verdicts[a.qid].get(slot)) for a in group]
            kept = [v for v in values if v is not None]
            if not kept:
                continue
            low, high = bootstrap_ci(kept)
            row[column] = round(sum(kept) / len(kept), 4)
            row[f"{column}_ci"] = f"[{low:.4f}, {high:.4f}]"
            row[f"{column}_failed"] = len(values) - len(kept)
        rows.append(row)
    return rows


def _report(cfg: DictConfig, frame: pd.DataFrame) -> str:
    header = (
        f"# Judge audit: {cfg.judge.model} ({cfg.judge.prompts} prompts, {cfg.judge.runs} run(s))\n\n"
        "On `wrong` answers every acceptance is a false accept: `our_judge` is the false-accept rate. "
        "On `real` answers it is the score the judge gives. `published_judge` is the mean over the "
        "three published runs of the judge that scored the same answers (gpt-4o-mini, mem0-style prompt).\n"
    )
    if cfg.stage.limit is not None:
        header += f"\nOnly the first {cfg.stage.limit} answers of each file (stage.limit).\n"
    return header + "\n" + markdown(frame)
