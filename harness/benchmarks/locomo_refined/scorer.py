"""LoCoMo-Refined lexical scores: token F1 and BLEU-1, best over the gold answers.

The official scorer (mem-eval-suite/LoCoMo_refined ``src/bleu_f1.py``, tag
v1.0.0, commit 887091190789e8d6760e70b9edd696539923dc4f) could not be read
here: no snapshot of that repository is available. What follows implements
the rule stated in ``shared/SCORERS.md`` and agrees with a third-party port
that says it mirrors that file (jianglong-nie/MiniMem,
``benchmarks/locomo_refined/evaluate_answer.py``); treat the details below
as our choice until the official file is compared.

* Tokens: every match of ``\\w+|[^\\w\\s]`` (a run of word characters, or one
  punctuation character), lower-cased. No stemming, no stop words dropped.
* Token F1: common tokens counted with multiplicity; 0 when either side has
  no token or nothing is shared.
* BLEU-1: the standard sentence-level BLEU with unigrams only, i.e. clipped
  unigram precision times the brevity penalty ``exp(1 - r/c)`` when the
  candidate (c tokens) is shorter than the reference (r tokens), else 1.
  One reference per call, no smoothing; 0 when either side has no token.
* Golds: a string or a list of acceptable answers; each is ``str()``-ed and
  stripped, blanks are dropped (an all-blank list scores against ""). Each
  metric takes its own maximum over the golds, so F1 and BLEU-1 may come
  from different golds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from harness.benchmarks import overlap

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> list[str]:
    """Word runs and single punctuation marks, lower-cased."""
    return [token.lower() for token in _TOKEN.findall(str(text))]


def token_f1(prediction: str, reference: str) -> float:
    predicted, expected = tokens(prediction), tokens(reference)
    if not predicted or not expected:
        return 0.0
    return overlap.f1(predicted, expected)


def bleu1(prediction: str, reference: str) -> float:
    """Sentence BLEU-1: clipped unigram precision times the brevity penalty."""
    predicted, expected = tokens(prediction), tokens(reference)
    if not predicted or not expected:
        return 0.0
    precision = overlap.shared(predicted, expected) / len(predicted)
    if len(predicted) >= len(expected):
        return precision
    return precision * math.exp(1 - len(expected) / len(predicted))


def gold_candidates(golds: str | Sequence[object]) -> list[str]:
    """The acceptable answers as stripped, non-blank strings ("" when none is left)."""
    values = [golds] if isinstance(golds, str) else list(golds)
    stripped = [str(value).strip() for value in values]
    return [value for value in stripped if value] or [""]


def best_over_golds(
    metric: Callable[[str, str], float], prediction: str, golds: str | Sequence[object]
) -> float:
    return max(metric(prediction, gold) for gold in gold_candidates(golds))


def scores(prediction: str, golds: str | Sequence[object]) -> dict[str, float]:
    """``{'f1', 'bleu1'}`` for one prediction, each the best over the golds."""
    return {
        "f1": best_over_golds(token_f1, prediction, golds),
        "bleu1": best_over_golds(bleu1, prediction, golds),
    }
