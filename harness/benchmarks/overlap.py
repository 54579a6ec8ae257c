"""Token overlap, the arithmetic every lexical F1 here shares."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def shared(predicted: Sequence[str], expected: Sequence[str]) -> int:
    """Tokens in common, each counted at most as often as both sides have it."""
    return sum((Counter(predicted) & Counter(expected)).values())


def f1(predicted: Sequence[str], expected: Sequence[str]) -> float:
    """Harmonic mean of token precision and recall; 0 with nothing in common (or nothing at all)."""
    common = shared(predicted, expected)
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)
