"""MemoryAgentBench's offline metrics, computed the way its own harness does it.

Facts read from HUST-AI-HYZ/MemoryAgentBench ``utils/eval_other_utils.py``
(pinned at 455306dcabc3842526eb83cd4e225e5d486c5c5d). The index here holds
that file only through forks (yilinpotato/MemoryAgentBench@5bab8fa,
Jessica-Zhangyj/MAB-lgtxdysg@7d71633); the functions below were identical in
both, and ``main.py`` (read upstream) averages every metric that
``post_process`` returns, times 100. Our own code, written from those facts.

* Normalisation: lower-case; drop ASCII punctuation; replace the whole words
  a / an / the with a space; collapse white space.
* ``exact_match``: normalised equality. ``substring_exact_match``: the
  normalised gold inside the normalised prediction (an empty gold is inside
  anything). ``f1``: token F1 on normalised tokens, except that a prediction
  or gold normalising to yes / no / noanswer scores 0 unless both are equal.
* Golds: a string, a list, or a list of lists (flattened one level when the
  first element is a list); every metric is the max over them.
* ``Answer:`` parsing: the text after the first ``answer:`` (any case) up to
  the end of that line, stripped, a repeated leading ``Answer:`` removed;
  with no ``answer:`` anywhere, the first line. By default a metric is the
  max over the raw output and this parsed text.
* Routing on the source name (checked in this order, by substring, as
  upstream does): ``icl`` -> parsed text only; ``eventqa`` -> parsed text
  only, plus ``eventqa_recall`` on the raw output (1 when every gold is in
  the lower-cased output); ``infbench`` / ``longmemeval`` -> default, with an
  ``choice_eng`` special case; ``ruler`` (and upstream's misspelt
  ``mermory_merging``) -> ``ruler_niah`` sources get ``ruler_recall`` (share
  of golds in the output) only, others default; ``recsys`` -> recall@1/5/10;
  anything else (FactConsolidation, DetectiveQA) -> default.
* Recommendation: the output is cut at its first ``1.`` (no ``1.``: commas
  become line breaks), split into lines, each line loses parenthesised
  text, a leading number and dash, and extra spaces, then snaps to the
  candidate title nearest by Levenshtein distance (lower-cased). Blank
  lines stay in the list and snap too, as upstream. recall@k = share of
  gold titles among the first k snapped items. Titles come from
  ``entity2id.json`` keys (see :func:`title_from_entity`); that file is not
  on this machine, so callers pass the titles in.

Headline metric per source (SCORERS.md, MemoryAgentBench): substring
match for RULER QA, EventQA and FactConsolidation, exact match for the ICL
classification sources and DetectiveQA, ``ruler_recall`` for RULER NIAH,
recall@5 for recommendation; LongMemEval and InfBench summaries are judged
by GPT-4o, which no offline string metric stands in for.

Not reproduced: ROUGE-L / ROUGE-Lsum (upstream also reports them for the
lexical routes) and the GPT-4o judge metrics (LongMemEval, InfBench
summaries), which live in ``llm_based_eval/``. Upstream breaks a tie between
equally near titles by ``set`` order (hash-randomised between runs); we take
the alphabetically first, so results are repeatable.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence

from harness.benchmarks import overlap

Golds = str | Sequence[str] | Sequence[Sequence[str]]

ANSWER_PREFIX = "Answer:"
# Sources the benchmark scores with a GPT-4o judge, not a string metric, and the judge each gets
# (../shared/SCORERS.md): LongMemEval's yes/no prompts; for InfBench summaries a keypoint judge
# (fluency x F1), which the harness does not ask (their split, Long_Range_Understanding, is not
# in the data here), so they score no headline metric.
LLM_JUDGED: dict[str, str] = {"longmemeval": "yes_no", "infbench_sum": "summary"}
RECALL_CUTOFFS = (1, 5, 10)
LEXICAL_METRICS = ("exact_match", "f1", "substring_exact_match")

_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)  # one C pass over a long context
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO = frozenset({"yes", "no", "noanswer"})


def normalise(text: str) -> str:
    text = text.lower().translate(_DROP_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalise(prediction) == normalise(gold))


def substring_exact_match(prediction: str, gold: str) -> float:
    return float(normalise(gold) in normalise(prediction))


def token_f1(prediction: str, gold: str) -> float:
    predicted, expected = normalise(prediction), normalise(gold)
    # A yes/no answer is right or wrong as a whole, never partly.
    if (predicted in _YES_NO or expected in _YES_NO) and predicted != expected:
        return 0.0
    return overlap.f1(predicted.split(), expected.split())


_METRICS: dict[str, Callable[[str, str], float]] = {
    "exact_match": exact_match,
    "f1": token_f1,
    "substring_exact_match": substring_exact_match,
}


def flatten_golds(golds: Golds) -> list[str]:
    """The golds as one flat list; a list of lists is flattened when its first item is a list."""
    if isinstance(golds, str):
        return [golds]
    items = list(golds)
    if items and not isinstance(items[0], str):
        items = [gold for group in items for gold in group]
    if not items:
        raise ValueError("MemoryAgentBench scoring needs at least one gold answer")
    return [str(gold) for gold in items]


def parse_answer(output: str, prefix: str = ANSWER_PREFIX) -> str:
    """The text after the first ``prefix`` on its line, else the output's first line."""
    found = re.search(f"{re.escape(prefix)}(.*)", output, flags=re.IGNORECASE)
    line = found.group(1) if found else output.split("\n", 1)[0]
    repeated = re.compile(f"^{re.escape(prefix)}", flags=re.IGNORECASE)
    return repeated.sub("", line.strip()).strip()


def lexical_metrics(prediction: str, golds: Golds) -> dict[str, float]:
    """exact_match, f1 and substring_exact_match of one text, each the max over the golds."""
    flat = flatten_golds(golds)
    return {name: max(metric(prediction, gold) for gold in flat) for name, metric in _METRICS.items()}


def _best_of(first: dict[str, float], second: dict[str, float]) -> dict[str, float]:
    return {name: max(value, second[name]) for name, value in first.items()}


def raw_or_parsed_metrics(output: str, golds: Golds) -> dict[str, float]:
    """Upstream's default: each metric the better of the raw output and its parsed answer."""
    return _best_of(lexical_metrics(output, golds), lexical_metrics(parse_answer(output), golds))


def eventqa_recall(output: str, golds: Golds) -> float:
    """1.0 when every gold appears in the lower-cased output (no other normalisation)."""
    lowered = output.lower()
    return float(all(gold.lower() in lowered for gold in flatten_golds(golds)))


def ruler_recall(output: str, golds: Golds) -> float:
    """Share of the golds that appear in the lower-cased output."""
    flat = flatten_golds(golds)
    lowered = output.lower()
    return sum(gold.lower() in lowered for gold in flat) / len(flat)


def choice_metrics(output: str, golds: Sequence[str]) -> dict[str, float]:
    """InfBench ``choice_eng``: the default, but substring match means the option text (gold 1)."""
    metrics = raw_or_parsed_metrics(output, golds)
    option_found = float(str(golds[1]).lower() in output.lower())
    metrics["substring_exact_match"] = option_found
    if option_found:
        metrics["exact_match"] = 1.0
    return metrics


# ---------------------------------------------------------------- recommendation

_PARENTHESISED = re.compile(r"\([^()]*\)")
_LEADING_NUMBER = re.compile(r"^(?:\d+[.)、]?\s*[-—–]?\s*)?")
_SPACES = re.compile(r"\s+")


def title_from_entity(key: str) -> str:
    """A movie title from an entity2id key (a DBpedia IRI such as ``<.../Heat_(1995_film)>``)."""
    name = key.split("/")[-1].replace("_", " ").replace("-", " ").replace(">", " ")
    return _SPACES.sub(" ", _PARENTHESISED.sub("", name)).strip()


def titles_by_id(entity2id: Mapping[str, int]) -> dict[int, str]:
    """entity2id's id -> title map, used to turn gold ids into titles."""
    return {entity_id: title_from_entity(key) for key, entity_id in entity2id.items()}


def _clean_item(item: str) -> str:
    item = _PARENTHESISED.sub("", item.strip())
    item = _LEADING_NUMBER.sub("", item)
    return _SPACES.sub(" ", item).strip()


def recommendation_items(output: str) -> list[str]:
    """The recommended titles as written: the numbered list, one cleaned item per line."""
    # No numbered list: upstream reads a comma-separated one instead.
    listed = output.split("1.", 1)[1] if "1." in output else output.replace(",", "\n")
    return [_clean_item(line) for line in listed.split("\n")]


def levenshtein(first: str, second: str, limit: int | None = None) -> int:
    """Edit distance (insert, delete, substitute); stops early at ``limit`` when given."""
    if len(first) < len(second):
        first, second = second, first
    previous = list(range(len(second) + 1))
    for row, left in enumerate(first, start=1):
        current = [row]
        for column, right in enumerate(second, start=1):
            current.append(min(current[-1] + 1, previous[column] + 1, previous[column - 1] + (left != right)))
        if limit is not None and min(current) >= limit:
            return limit
        previous = current
    return previous[-1]


def nearest_title(item: str, titles: Iterable[str]) -> str:
    """The title nearest to ``item`` by lower-cased edit distance; ties go to the first in sorted order."""
    wanted = item.lower()
    best_title, best_distance = "", -1
    for title in sorted(set(titles)):
        candidate = title.lower()
        # The length gap bounds the distance from below: no need to compute a hopeless one.
        if best_distance >= 0 and abs(len(candidate) - len(wanted)) >= best_distance:
            continue
        distance = levenshtein(wanted, candidate, limit=best_distance if best_distance >= 0 else None)
        if best_distance < 0 or distance < best_distance:
            best_title, best_distance = title, distance
            if distance == 0:
                break
    if best_distance < 0:
        raise ValueError("recommendation scoring needs at least one candidate title")
    return best_title


def recommendation_recalls(
    output: str,
    gold_titles: Sequence[str],
    titles: Iterable[str],
    cutoffs: Sequence[int] = RECALL_CUTOFFS,
) -> dict[str, float]:
    """``recsys_recall@k``: share of gold titles among the first k recommended items, snapped to titles."""
    if not gold_titles:
        raise ValueError("recommendation scoring needs at least one gold title")
    candidates = sorted(set(titles))
    snapped = [nearest_title(item, candidates) for item in recommendation_items(output)]
    return {
        f"recsys_recall@{k}": sum(gold in snapped[:k] for gold in gold_titles) / len(gold_titles)
        for k in cutoffs
    }


# ---------------------------------------------------------------- routing by source


def route(source: str) -> str:
    """Which upstream post-processing a source gets: icl, eventqa, choice, ruler_niah, recsys or default."""
    if "icl" in source:
        return "icl"
    if "eventqa" in source:
        return "eventqa"
    if "infbench" in source or "longmemeval" in source:
        return "choice" if "choice_eng" in source else "default"
    if "ruler" in source or "mermory_merging" in source:
        return "ruler_niah" if "ruler_niah" in source else "default"
    if "recsys" in source:
        return "recsys"
    return "default"


def metrics_for(source: str) -> tuple[str, ...]:
    """The metric names :func:`scores` returns for a source (upstream's set, less ROUGE)."""
    kind = route(source)
    if kind == "eventqa":
        return (*LEXICAL_METRICS, "eventqa_recall")
    if kind == "ruler_niah":
        return ("ruler_recall",)
    if kind == "recsys":
        return tuple(f"recsys_recall@{k}" for k in RECALL_CUTOFFS)
    return LEXICAL_METRICS


def llm_judge(source: str) -> str | None:
    """The LLM judge the benchmark scores ``source`` with (a key's value of :data:`LLM_JUDGED`),
    None where a string metric scores it."""
    return next((judge for name, judge in LLM_JUDGED.items() if name in source), None)


def headline_metric(source: str) -> str | None:
    """The metric the benchmark reports for ``source``; None where that is an LLM judge."""
    if llm_judge(source) is not None:
        return None
    kind = route(source)
    if kind == "icl" or "detective_qa" in source:
        return "exact_match"
    if kind == "ruler_niah":
        return "ruler_recall"
    if kind == "recsys":
        return "recsys_recall@5"
    return "substring_exact_match"


def scores(
    prediction: str,
    golds: Golds,
    source: str,
    *,
    titles: Iterable[str] | None = None,
) -> dict[str, float]:
    """Every offline metric upstream computes for one answer from ``source``.

    ``golds`` is the question's answer list; for recsys sources it must hold
    the gold titles (map ids with :func:`titles_by_id`) and ``titles`` the
    candidate titles.
    """
    kind = route(source)
    if kind == "icl":
        return lexical_metrics(parse_answer(prediction), golds)
    if kind == "eventqa":
        return {
            **lexical_metrics(parse_answer(prediction), golds),
            "eventqa_recall": eventqa_recall(prediction, golds),
        }
    if kind == "choice":
        return choice_metrics(prediction, flatten_golds(golds))
    if kind == "ruler_niah":
        return {"ruler_recall": ruler_recall(prediction, golds)}
    if kind == "recsys":
        if titles is None:
            raise ValueError(f"{source}: recommendation scoring needs the candidate titles")
        return recommendation_recalls(prediction, flatten_golds(golds), titles)
    return raw_or_parsed_metrics(prediction, golds)
