"""Leading serials: ``12. `` (the paper's style) and the native styles.

A serial is an integer at the very start of a line (or of a record's text)
that ends within the first 32 characters. :func:`read` gives its number and
where it ends; the reader still sees the line as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# name -> pattern; group 1 is the number, the match ends where the text begins.
# The digit counts keep the number's end within the first 32 characters.
STYLES: dict[str, re.Pattern[str]] = {
    "dot": re.compile(r"(\d{1,32})\. +"),
    "step": re.compile(r"Step (\d{1,27}): *"),
    "hash": re.compile(r"#(\d{1,31})(?: +|$)"),
    "paren": re.compile(r"\((\d{1,31})\) *"),
    "bracket": re.compile(r"\[(\d{1,31})\] *"),
}
PAPER_STYLE = "dot"
NATIVE_STYLES = ("step", "hash", "paren", "bracket")


@dataclass(frozen=True, slots=True)
class Serial:
    number: int
    end: int  # offset just past the serial and its trailing spaces


def read(text: str, style: str, start: int = 0) -> Serial | None:
    """The serial of ``style`` at ``text[start:]``, if there is one."""
    match = STYLES[style].match(text, start)
    return None if match is None else Serial(int(match.group(1)), match.end())


def lex(text: str, start: int = 0) -> tuple[str, Serial] | None:
    """The style and serial that open ``text[start:]``, in any style, if one does.

    The styles begin with different characters (a digit, ``S``, ``#``, ``(``, ``[``), so at most
    one matches and the order tried does not matter."""
    for style in STYLES:
        serial = read(text, style, start)
        if serial is not None:
            return style, serial
    return None
