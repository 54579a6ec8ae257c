"""Model-free entities for the parent graph (SPEC 4).

An entity is, lower-cased:

* a capitalised word sequence ("Mahmoud Abbas", "University of Oxford");
  at a sentence start only when it is not a common sentence opener ("The",
  "How", "Yesterday" ...), so "Scientology was founded ..." still yields
  "scientology" but "The chairperson ..." yields nothing;
* a number or a date ("2023", "8 May, 2023", "May 2023");
* a quoted string of 2-60 characters;
* on numbered logs, the line's slot (added by the caller).

A query's entities are found by the same rules plus any vocabulary entity
whose words appear in the query, case-insensitively ("rugby union").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_QUERY_NGRAM = 6
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# Every date form starts with a digit or a month name (the lookahead lets the matcher skip other
# positions at once) and holds four digits in a row (a text without them has no date to look for).
_DATE = re.compile(
    rf"\b(?=\d|{_MONTHS})(?:\d{{1,2}}\s+(?:{_MONTHS})\.?,?\s+\d{{4}}"
    rf"|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|(?:{_MONTHS})\.?\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\d{4}")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/]\d+)*(?![\w])")
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,60})[\"”]")
_WORD = re.compile(r"[^\W_][\w'’.&-]*")
# Lower-case words a capitalised name runs across when another capitalised word follows ("University
# of Oxford", "Leonardo da Vinci"). The one list of name words: slots.CONNECTORS is this list and more.
NAME_JOINERS = frozenset("of the and de da di del du la le van von der den y al bin & for".split())
# Capitalised words that open sentences without naming anything.
OPENERS = frozenset(
    """the a an i i'm i've i'd i'll it it's he she we you they this that these those there here
    what who whom whose when where why how which yes no yeah hey hi hello oh ok okay so but and or
    if then also well sure thanks thank please just really maybe great good nice wow in on at for
    from to by with as after before during since while my your our their his her its one some any
    all each every both many much more most do does did is are was were be been have has had can
    could would should will shall may might must let let's not now today yesterday tomorrow
    absolutely definitely certainly exactly glad sorry awesome cool indeed actually""".split()
)
_SENTENCE_MARKS = ".!?:;"


def _opens_sentence(text: str, start: int) -> bool:
    """Whether a word at ``start`` opens a sentence: at the text's start, or after a sentence mark
    (``.!?:;``) or a line break and then only whitespace. Looks back over the whitespace alone, so
    a text's words cost what they are long, not what lies before them."""
    if start == 0:
        return True
    i = start
    while i > 0 and text[i - 1].isspace():
        if text[i - 1] == "\n":
            return True
        i -= 1
    return i > 0 and text[i - 1] in _SENTENCE_MARKS


def _capitalised(word: str) -> bool:
    return word[0].isupper()


def _name_runs(text: str) -> Iterable[str]:
    words = list(_WORD.finditer(text))
    i = 0
    while i < len(words):
        match = words[i]
        word = match.group()
        if not _capitalised(word):
            i += 1
            continue
        at_start = _opens_sentence(text, match.start())
        j = i + 1
        last = i
        while j < len(words) and text[words[j - 1].end() : words[j].start()].strip() == "":
            nxt = words[j].group()
            if _capitalised(nxt):
                last = j
            elif nxt.lower() not in NAME_JOINERS:
                break
            j += 1
        run = words[i : last + 1]
        if at_start and run[0].group().lower() in OPENERS:
            run = run[1:]
            while run and run[0].group().lower() in NAME_JOINERS:
                run = run[1:]
        if run and _capitalised(run[0].group()):
            yield text[run[0].start() : run[-1].end()]
        i = last + 1


def normalise(entity: str) -> str:
    entity = entity.lower().strip(" .,;:'’\"")
    for suffix in ("'s", "’s"):
        entity = entity.removesuffix(suffix)
    return " ".join(entity.split())


def extract(text: str) -> set[str]:
    """The entities of a text, normalised."""
    found = {normalise(m.group()) for m in _DATE.finditer(text)} if _YEAR.search(text) else set()
    found.update(normalise(m.group()) for m in _NUMBER.finditer(text))
    found.update(normalise(m.group(1)) for m in _QUOTED.finditer(text))
    found.update(normalise(run) for run in _name_runs(text))
    found.discard("")
    return found


def query_entities(query: str, vocabulary: set[str] | frozenset[str]) -> list[str]:
    """Entities of a query that the store knows, sorted for a stable order."""
    found = {e for e in extract(query) if e in vocabulary}
    words = [normalise(w) for w in query.split()]
    words = [w for w in words if w]
    for n in range(1, MAX_QUERY_NGRAM + 1):
        for start in range(len(words) - n + 1):
            gram = " ".join(words[start : start + n])
            if gram in vocabulary and (n > 1 or gram not in OPENERS):
                found.add(gram)
    return sorted(found)
