"""Published MemoryAgentBench outputs (tfatykhov/nous-memoryAgentBench), re-scored offline.

The files in ``<data>/memoryagentbench/outputs`` are one JSON line per
question: the source, the golds, the agent's answer and the file's own
verdict (``correct``; the judge re-grade adds ``judge_correct`` and
``judge_model``). Each file is one source or split. This module scores the
same answers against the same golds with the benchmark's headline metric
for the source (:func:`harness.benchmarks.mab.scorer.headline_metric`) and counts the
questions where our verdict and the file's differ, in each direction.

The files' verdicts were not all reached by the official routing: their
authors grade with their own port (``mab/grading/paper_grader.py`` in their
repository, read at a commit other than the data's). Each rule we could
read is recomputed here and checked against the file's verdicts, so every
difference is traced to a rule and the count it accounts for, never quoted:
the files may not be redistributed, so nothing but ids and counts leaves
this module.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.benchmarks.mab import scorer
from harness.data import DataRoot
from harness.llm.judging import LLM_JUDGE
from muster_exact.core.errors import DataError

OUTPUTS = "memoryagentbench/outputs"
BASELINE = f"{OUTPUTS}/nous_paper_baseline"
REGRADE = f"{OUTPUTS}/nous_judge_regrade"
# A gold this long describes the expected answer (LongMemEval's preference and
# abstention questions) rather than naming it: a judge reads it, a substring test cannot find it.
DESCRIPTIVE_GOLD_WORDS = 8
_JSON_ANSWER = re.compile(r'\{\s*"answer"\s*:')  # a JSON object with an answer field
_LABEL = re.compile(r"label:", flags=re.IGNORECASE)
_LABEL_LINE = re.compile(r"label:\s*\S+", flags=re.IGNORECASE)


@dataclass(frozen=True)
class Answer:
    """One published answer with the file's verdict."""

    qid: str
    source: str
    golds: tuple[str, ...]
    answer: str
    verdict: bool


def _substring_raw(row: Answer) -> bool:
    return scorer.lexical_metrics(row.answer, row.golds)["substring_exact_match"] == 1.0


def _eventqa_recall_raw(row: Answer) -> bool:
    return scorer.eventqa_recall(row.answer, row.golds) == 1.0


def _exact_after_label(row: Answer) -> bool:
    return scorer.lexical_metrics(scorer.parse_answer(row.answer, "label:"), row.golds)["exact_match"] == 1.0


# How the files' authors reached their verdicts (their grader, by source), as far as a string rule can.
THEIR_RULES: dict[str, tuple[str, Callable[[Answer], bool]]] = {
    "substring": ("substring match of the normalised gold in the whole raw answer", _substring_raw),
    "eventqa_recall": (
        "eventqa_recall on the raw answer (every gold in the lower-cased text)",
        _eventqa_recall_raw,
    ),
    "label_exact": (
        "exact match of the text after the first `label:` (not upstream's `Answer:`)",
        _exact_after_label,
    ),
}


@dataclass(frozen=True)
class Diagnosis:
    """A property that explains a disagreement, counted over the disagreeing questions of one direction."""

    metric: str  # the metric of ours whose disagreements it explains
    direction: str  # "we_accept" (we accept, they reject) or "they_accept"
    text: str
    holds: Callable[[Answer], bool]


def _gold_off_parsed_line(row: Answer) -> bool:
    parsed = scorer.lexical_metrics(scorer.parse_answer(row.answer), row.golds)["substring_exact_match"]
    return _substring_raw(row) and parsed == 0.0


def _normalisation_only(row: Answer) -> bool:
    return _substring_raw(row) and not _eventqa_recall_raw(row)


def _has_label(row: Answer) -> bool:
    return bool(_LABEL.search(row.answer))


def _label_alone(row: Answer) -> bool:
    return bool(_LABEL_LINE.fullmatch(scorer.parse_answer(row.answer)))


def _longer_than_gold(row: Answer) -> bool:
    return _substring_raw(row) and scorer.lexical_metrics(row.answer, row.golds)["exact_match"] == 0.0


def _json_object(row: Answer) -> bool:
    return bool(_JSON_ANSWER.search(row.answer))


def _label_on_a_later_line(row: Answer) -> bool:
    return _has_label(row) and not _LABEL.search(scorer.parse_answer(row.answer))


def _descriptive_gold(row: Answer) -> bool:
    return all(len(gold.split()) > DESCRIPTIVE_GOLD_WORDS for gold in row.golds)


def _gold_inside_a_word(row: Answer) -> bool:
    words = scorer.normalise(row.answer)
    return _substring_raw(row) and not any(
        re.search(rf"\b{re.escape(scorer.normalise(gold))}\b", words) for gold in row.golds
    )


@dataclass(frozen=True)
class PublishedFile:
    """One published file: its label, its path under the data root and how its verdicts were reached."""

    name: str
    relative: str
    verdict_field: str
    rule: str  # a key of THEIR_RULES, or LLM_JUDGE
    also: tuple[str, ...] = ()  # other metrics shown beside the headline (not the official one)
    diagnoses: tuple[Diagnosis, ...] = ()
    in_overall: bool = True
    judge: str = ""  # who judged, where the verdicts are an LLM's and the file does not say
    regrades: str = ""  # the field holding the verdicts a judge re-grade replaced


# The properties a diagnosis names (``holds:`` in published.yaml), by name.
PROPERTIES: dict[str, Callable[[Answer], bool]] = {
    "gold_off_parsed_line": _gold_off_parsed_line,
    "normalisation_only": _normalisation_only,
    "has_label": _has_label,
    "label_alone": _label_alone,
    "longer_than_gold": _longer_than_gold,
    "json_object": _json_object,
    "label_on_a_later_line": _label_on_a_later_line,
    "descriptive_gold": _descriptive_gold,
    "gold_inside_a_word": _gold_inside_a_word,
}
TABLE = Path(__file__).with_name("published.yaml")


def _published_file(entry: dict[str, Any]) -> PublishedFile:
    """One entry of published.yaml: its placeholders filled, its diagnoses' properties looked up."""
    words = {"baseline": BASELINE, "regrade": REGRADE, "descriptive_gold_words": DESCRIPTIVE_GOLD_WORDS}
    diagnoses = tuple(
        Diagnosis(d["metric"], d["direction"], d["text"].format(**words), PROPERTIES[d["holds"]])
        for d in entry.get("diagnoses", ())
    )
    rule = entry["rule"]
    if rule not in THEIR_RULES and rule != LLM_JUDGE:
        raise ValueError(f"{TABLE.name}: {entry['name']}: unknown rule {rule!r}")
    return PublishedFile(
        entry["name"],
        entry["relative"].format(**words),
        entry["verdict_field"],
        rule,
        also=tuple(entry.get("also", ())),
        diagnoses=diagnoses,
        in_overall=bool(entry.get("in_overall", True)),
        judge=entry.get("judge", ""),
        regrades=entry.get("regrades", ""),
    )


FILES: tuple[PublishedFile, ...] = tuple(
    _published_file(entry) for entry in yaml.safe_load(TABLE.read_text(encoding="utf-8"))
)


def load_answers(path: Path, verdict_field: str) -> list[Answer]:
    """Every line of a published file, in order (duplicated ids kept: the file's figure counts them)."""
    answers = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
            golds = row["golds"]
            verdict = row[verdict_field]
            answer = Answer(row["qa_pair_id"], row["source"], tuple(golds), row["answer"], verdict)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{path}:{number}: not a published answer line ({exc!r})") from None
        if not isinstance(verdict, bool) or not isinstance(answer.answer, str) or not golds:
            raise DataError(f"{path}:{number}: needs a text answer, golds and a true/false {verdict_field}")
        answers.append(answer)
    if not answers:
        raise DataError(f"{path}: no answers")
    return answers


def judge_models(path: Path) -> list[str]:
    """The judge models a re-grade file names (its ``judge_model`` field), sorted."""
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return sorted({str(row["judge_model"]) for row in rows if row.get("judge_model")})


def headline(answers: Sequence[Answer]) -> str | None:
    """The file's one headline metric (None: an LLM judge); a file mixing metrics is an error."""
    metrics = {scorer.headline_metric(row.source) for row in answers}
    if len(metrics) != 1:
        raise DataError(f"one published file mixes sources scored by {sorted(map(str, metrics))}")
    return metrics.pop()


def our_verdicts(answers: Sequence[Answer], metric: str) -> list[bool]:
    return [scorer.scores(row.answer, row.golds, row.source)[metric] == 1.0 for row in answers]


@dataclass(frozen=True)
class Comparison:
    """The file's figure beside ours under one metric, and the questions on which the verdicts differ."""

    file: PublishedFile
    metric: str
    headline: bool
    answers: tuple[Answer, ...]
    ours: tuple[bool, ...] | None  # None: not re-scored offline (an LLM judge)
    verdicts: str = ""  # the field the file's figure comes from, with the judge model when named
    before: tuple[bool, ...] = ()  # a re-grade's replaced verdicts, in the answers' order

    @property
    def n(self) -> int:
        return len(self.answers)

    @property
    def theirs(self) -> float:
        return sum(row.verdict for row in self.answers) / self.n

    @property
    def ours_rate(self) -> float | None:
        return None if self.ours is None else sum(self.ours) / self.n

    def disagreeing(self, direction: str) -> list[Answer]:
        if self.ours is None:
            return []
        wanted = direction == "we_accept"
        return [
            row for row, ours in zip(self.answers, self.ours, strict=True) if ours == wanted != row.verdict
        ]


def compare(data: DataRoot, published: PublishedFile) -> list[Comparison]:
    """The headline comparison for one file, then the ones under ``published.also``."""
    path = data.path(published.relative)
    answers = tuple(load_answers(path, published.verdict_field))
    models = judge_models(path) if published.verdict_field != "correct" else []
    verdicts = published.verdict_field + (f" ({', '.join(models)})" if models else "")
    metric = headline(answers)
    before = (
        tuple(row.verdict for row in load_answers(path, published.regrades)) if published.regrades else ()
    )
    first = Comparison(
        published,
        metric or LLM_JUDGE,
        True,
        answers,
        None if metric is None else tuple(our_verdicts(answers, metric)),
        verdicts,
        before,
    )
    others = [
        Comparison(published, name, False, answers, tuple(our_verdicts(answers, name)), verdicts)
        for name in published.also
    ]
    return [first, *others]


def comparisons(data: DataRoot) -> list[Comparison]:
    return [comparison for published in FILES for comparison in compare(data, published)]


# ---------------------------------------------------------------- the table


def _rate(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def row(comparison: Comparison) -> dict[str, object]:
    re_scored = comparison.ours is not None
    if not comparison.headline:
        note = "not the official metric"
    elif not re_scored:
        note = "judge metric: not re-scored offline"
    else:
        note = ""
    return {
        "file": comparison.file.name,
        "verdicts": comparison.verdicts,
        "metric": comparison.metric,
        "official": "yes" if comparison.headline else "no",
        "n": comparison.n,
        "theirs": _rate(comparison.theirs),
        "ours": _rate(comparison.ours_rate),
        "we_accept_they_reject": len(comparison.disagreeing("we_accept")) if re_scored else None,
        "we_reject_they_accept": len(comparison.disagreeing("they_accept")) if re_scored else None,
        "note": note,
    }


def overall_set(found: Sequence[Comparison]) -> list[Comparison]:
    """The headline comparisons the overall rows pool: re-scored, each answer set once."""
    return [c for c in found if c.headline and c.ours is not None and c.file.in_overall]


def overall_rows(found: Sequence[Comparison]) -> list[dict[str, object]]:
    pooled = overall_set(found)
    n = sum(c.n for c in pooled)
    theirs = sum(c.theirs * c.n for c in pooled) / n
    ours = sum(c.ours_rate * c.n for c in pooled if c.ours_rate is not None) / n
    per_file = [c.ours_rate for c in pooled if c.ours_rate is not None]
    common = {"verdicts": "", "metric": "official per file", "official": "yes", "n": n}
    note = f"{len(pooled)} files re-scored offline"
    return [
        {
            "file": "all (pooled)",
            **common,
            "theirs": _rate(theirs),
            "ours": _rate(ours),
            "we_accept_they_reject": sum(len(c.disagreeing("we_accept")) for c in pooled),
            "we_reject_they_accept": sum(len(c.disagreeing("they_accept")) for c in pooled),
            "note": note,
        },
        {
            "file": "all (mean over files)",
            **common,
            "theirs": _rate(sum(c.theirs for c in pooled) / len(pooled)),
            "ours": _rate(sum(per_file) / len(per_file)),
            "we_accept_they_reject": None,
            "we_reject_they_accept": None,
            "note": note,
        },
    ]


def rows(found: Sequence[Comparison]) -> list[dict[str, object]]:
    return [*(row(c) for c in found), *overall_rows(found)]


# ---------------------------------------------------------------- the explanation


def _share(count: int, total: int) -> str:
    return f"{count} of {total}"


def _rule_sentence(comparison: Comparison) -> str:
    published = comparison.file
    if published.rule == LLM_JUDGE:
        said = f" ({published.judge})" if published.judge else ""
        text = f"The file's verdicts (`{comparison.verdicts}`) are an LLM judge's{said}, which reads meaning."
        return text + _regrade_sentence(comparison)
    text, rule = THEIR_RULES[published.rule]
    reproduced = sum(rule(row) == row.verdict for row in comparison.answers)
    same = _share(reproduced, comparison.n)
    return f"The file's verdicts are {text}: that rule gives the same verdict on {same}."


def _regrade_sentence(comparison: Comparison) -> str:
    if not comparison.before:
        return ""
    pairs = list(zip(comparison.before, (row.verdict for row in comparison.answers), strict=True))
    accepts = sum(not old and new for old, new in pairs)
    rejects = sum(old and not new for old, new in pairs)
    return (
        f" It replaces the file's own `{comparison.file.regrades}` on {accepts + rejects} of "
        f"{comparison.n} questions ({accepts} now accepted, {rejects} now rejected)."
    )


def _direction_sentence(comparison: Comparison, direction: str) -> str:
    rows_ = comparison.disagreeing(direction)
    lead = "We accept and they reject" if direction == "we_accept" else "They accept and we reject"
    if not rows_:
        return f"{lead}: none."
    reasons = [
        f"{_share(sum(d.holds(row) for row in rows_), len(rows_))}: {d.text}"
        for d in comparison.file.diagnoses
        if d.metric == comparison.metric and d.direction == direction
    ]
    return f"{lead}: {len(rows_)}" + (f" ({'; '.join(reasons)})." if reasons else ".")


def _duplicates_sentence(comparison: Comparison) -> str:
    keys = Counter((row.source, row.qid) for row in comparison.answers)
    repeated = sorted(key for key, count in keys.items() if count > 1)
    if not repeated:
        return ""
    last = {(row.source, row.qid): row for row in comparison.answers}
    accepted = sum(row.verdict for row in last.values())
    same = sum(
        len({row.verdict for row in comparison.answers if (row.source, row.qid) == key}) == 1
        for key in repeated
    )
    return (
        f" {len(repeated)} question ids appear more than once ({same} of them with the same verdict each "
        f"time); every line is counted above, as the file's own mean counts them; over the last line of "
        f"each id the file records {accepted}/{len(last)} = {accepted / len(last):.4f}."
    )


def explain(comparison: Comparison) -> str:
    """One paragraph: the figures, how the file graded, and the cause of every disagreement, with counts."""
    ours = comparison.ours_rate
    figures = f"the file records {comparison.theirs:.4f} over {comparison.n} lines" + (
        f", we score {ours:.4f} by {comparison.metric}" if ours is not None else ""
    )
    label = "official" if comparison.headline else "not the official metric"
    head = f"- **{comparison.file.name}**, {comparison.metric} ({label}): {figures}."
    if ours is None:
        return (
            f"{head} {_rule_sentence(comparison)} The benchmark judges this source with GPT-4o "
            "(LongMemEval's yes/no prompts): judge metric, not re-scored offline."
        )
    parts = [head]
    if comparison.headline:
        parts.append(_rule_sentence(comparison))
    parts.append(_direction_sentence(comparison, "we_accept"))
    parts.append(_direction_sentence(comparison, "they_accept"))
    text = " ".join(parts)
    return text + (_duplicates_sentence(comparison) if comparison.headline else "")


INTRO = (
    "# Published MemoryAgentBench outputs (nous-memoryAgentBench), re-scored offline\n\n"
    "Each file holds one agent's answers to one source or split, with the file's own verdict per "
    "question. `theirs` is the mean of that verdict (`correct`, or `judge_correct` in the judge "
    "re-grade); `ours` scores the same answers against the same golds with MemoryAgentBench's "
    "headline metric for the source (SCORERS.md: substring match for FactConsolidation, RULER QA and "
    "EventQA; exact match for ICL and DetectiveQA; a GPT-4o judge for LongMemEval), routed and "
    "parsed as upstream's `eval_other_utils.py` does. Rows marked `official: no` show another metric "
    "upstream computes, for comparison only. The last two columns count the questions where the "
    "two verdicts differ, each way.\n\n"
)


def _left_out(comparison: Comparison) -> str:
    why = "a judge metric" if comparison.ours is None else "the same answers as another file"
    return f"{comparison.file.name} ({why})"


def overall_sentence(found: Sequence[Comparison]) -> str:
    pooled = overall_set(found)
    left_out = [_left_out(c) for c in found if c.headline and c not in pooled]
    every = [c for c in found if c.headline and c.file.in_overall]
    n = sum(c.n for c in every)
    theirs = sum(sum(row.verdict for row in c.answers) for c in every)
    return (
        f"The overall rows pool the official rows of {', '.join(c.file.name for c in pooled)}; "
        f"left out: {', '.join(left_out)}. "
        f"Over all {len(every)} baseline files, LongMemEval included, the files record "
        f"{theirs}/{n} = {theirs / n:.4f}.\n"
    )


def report(found: Sequence[Comparison], table: str) -> str:
    """The Markdown page: what the columns mean, the table, then every difference explained."""
    paragraphs = "\n".join(explain(c) for c in found)
    return f"{INTRO}{table}\n## Why the figures differ\n\n{paragraphs}\n\n{overall_sentence(found)}"
