"""The slot of a numbered-log line: the entity and attribute it states a value for.

A fact line reads "<subject and attribute> <value>": "The chairperson of Fatah
is Mahmoud Abbas.", "Thomas Kyd was born in the city of London." The value is
the tail; everything before it is the slot. Two lines with the same slot are
versions of one fact, and the one with the higher serial is newer.

The rule finds the value from the end of the line, with no model:

* a capitalised tail (a name, a number, a title): the longest run of
  capitalised words, digits and name connectors ("of", "the", "de", ...)
  ending the line, less any connectors it starts with. "a citizen of United
  States of America" -> value "United States of America".
* a lower-case tail ("rock music", "wide receiver"): the words after the last
  relation word ("is", "of", "by", ...).

The slot is the rest, lower-cased and with spaces folded. Because the subject
and the attribute both stay in the slot, two lines about different subjects
or attributes never share one; when the rule is unsure (no relation word, a
line of capitalised words only, a long line) the line gets no slot and stays
its own fact. A missed merge keeps an old version visible; a wrong merge would
delete a true fact, so every doubt falls on the side of not merging.
"""

from __future__ import annotations

from muster_exact.text.entities import NAME_JOINERS, normalise

MAX_WORDS = 40
# Words that may sit inside a capitalised value: "University of Oxford", "Kingdom of the
# Netherlands", "Bosnia and Herzegovina", "Leonardo da Vinci". The entity rule's name words
# (entities.NAME_JOINERS) and four more a value may run across ("Piero della Francesca", "Newcastle
# upon Tyne"). Two rules, not one list by accident: an entity joins across these words anywhere in
# a text ("Paris on Monday" would become one name), a value only at the end of a fact line; and
# taking the four into the entity rule would change the parent graph's entities, and so contexts.
CONNECTORS = NAME_JOINERS | frozenset(("della", "les", "on", "upon"))
# Words after which a lower-case value starts: "plays the position of [wide receiver]".
RELATIONS = frozenset("is are was were be been of by in at to for with as on from into under than".split())
_TRAILING_PUNCT = ".!?;:,"
_ARTICLES = frozenset(("the", "a", "an"))
_FUNCTION_WORDS = RELATIONS | CONNECTORS | _ARTICLES


def _is_capitalised(word: str) -> bool:
    first = word[0]
    if first.isalpha():
        return first.isupper()
    if first.isdigit():
        return True
    for ch in word:  # leading quotes or brackets: look at the first letter or digit
        if ch.isalpha():
            return ch.isupper()
        if ch.isdigit():
            return True
    return False  # pure punctuation is not a name word


def _value_start(words: list[str], lowered: list[str]) -> int | None:
    """Index of the first word of the value, or None if it cannot be read."""
    last = len(words) - 1
    if _is_capitalised(words[last]):
        start = last
        while start > 0 and (lowered[start - 1] in CONNECTORS or _is_capitalised(words[start - 1])):
            start -= 1
        while start < last and lowered[start] in CONNECTORS:
            start += 1  # "of the Netherlands": the connectors belong to the slot
        return start if start > 0 else None
    for index in range(last - 1, 0, -1):
        if lowered[index] in RELATIONS:
            return index + 1
    return None


def _names_an_attribute(words: list[str], lowered: list[str], end: int) -> bool:
    """A lower-case content word ("born", "citizen"), or "The <attribute> of ..."."""
    for index in range(end):
        low = lowered[index]
        if low not in _FUNCTION_WORDS and not _is_capitalised(words[index]):
            return True
    return lowered[0] in _ARTICLES and end >= 4


def slot_of(body: str) -> str | None:
    """The slot key of a fact line (serial already stripped), or None."""
    split = _split(body)
    return None if split is None else split[0]


def slot_and_value(body: str) -> tuple[str, str] | None:
    """The slot key and the value of a fact line (serial already stripped), lower-cased with
    spaces folded, or None where the line has no slot. The value is what the line sets its slot
    to: "Steve Sax is associated with the sport of baseball." -> "baseball"."""
    split = _split(body)
    return None if split is None else (split[0], normalise(" ".join(split[1])))


def _split(body: str) -> tuple[str, list[str]] | None:
    """The slot key and the value's lower-cased words, or None. The value is left in words so
    the cut, which reads only the slot of every line, does not pay for joining it."""
    kept = body.rstrip().rstrip(_TRAILING_PUNCT)
    words = kept.split()
    if len(words) < 3 or len(words) > MAX_WORDS:
        return None
    # Lower-casing never makes or removes whitespace, and its one context rule (a final
    # sigma) stops at whitespace, so the line lowered whole splits into the words lowered.
    lowered = kept.lower().split()
    start = _value_start(words, lowered)
    if start is None or start < 2:
        return None  # a slot needs a subject and an attribute before the value
    if not _names_an_attribute(words, lowered, start):
        return None  # "Paris is Nice": a subject and a copula, no attribute to key on
    slot = [w.strip(",;:") for w in lowered[:start]]
    while slot and slot[-1] in _ARTICLES:
        slot.pop()  # "the city of the X" and "the city of X" are one attribute
    key = " ".join(w for w in slot if w)
    return (key, lowered[start:]) if key else None
