"""No-LLM retrieval scores for one question's context.

* evidence recall: the share of the question's evidence ids (LoCoMo turn
  ids, BEAM message ids) among the records the context shows;
* full-evidence hit: 1 when every evidence id is shown;
* answer in context: 1 when a normalised gold answer is a substring of the
  normalised context (MemoryAgentBench's normalisation: lower case, no
  punctuation, no a/an/the: :func:`harness.benchmarks.mab.scorer.normalise`, written
  once), for benchmarks without evidence ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.benchmarks.mab.scorer import normalise
from muster_exact.verify.corpora import Question

__all__ = ["HEADLINE", "normalise", "question_scores"]

# The metric a benchmark is compared and plotted on, the first its questions have: evidence recall
# where they carry evidence ids, else the answer in the context (MemoryAgentBench).
HEADLINE = ("evidence_recall", "answer_in_context")


def question_scores(
    question: Question, context_text: str, record_ids: Sequence[str]
) -> dict[str, float | None]:
    shown = set(record_ids)
    evidence = set(question.evidence)
    recall = hit = answer = None
    if evidence:
        found = len(evidence & shown)
        recall = found / len(evidence)
        hit = float(found == len(evidence))
    golds = [normalise(g) for g in question.gold if normalise(g)]
    if golds:
        text = normalise(context_text)
        answer = float(any(g in text for g in golds))
    return {"evidence_recall": recall, "evidence_hit": hit, "answer_in_context": answer}
