"""What a request carries, read before any route sees it: a write's body as JSON, and the query
string's parameters as UTF-8 text (:class:`~muster_exact.serve.guard.Guard` calls both).

Python's JSON reader refuses some bodies without saying where: bytes that are not UTF-8, nesting
deeper than its stack, an integer of more digits than Python converts (4,300). FastAPI answered
those with a 400 naming nothing. Here each is an :class:`InputError` (422) that names the field
(``records[0].metadata``), as every other malformed body is; nesting is bounded at
``MAX_REQUEST_DEPTH`` whatever the reader's stack would allow. A query string's percent-encoded
bytes that are not UTF-8 were read as U+FFFD (a call about another namespace); they are refused
naming the parameter.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any
from urllib.parse import unquote_to_bytes

from muster_exact.core.errors import InputError
from muster_exact.core.limits import MAX_REQUEST_DEPTH

NOT_JSON_BODY = object()  # what body_json gives for a body that is not one JSON document

_ESCAPED = re.compile("[\udc80-\udcff]")  # an undecodable byte, as 'surrogateescape' keeps it
# A JSON token: a string (escapes kept whole), one bracket or separator, or a run of anything else.
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}:,]|[^"\[\]{}:,]+')
_SHOWN_PARTS = 6  # of a path too deep to show whole


class _Digits(str):
    """An integer too long for Python to convert, kept as its digits to say where it is."""


def body_json(body: bytes) -> Any:
    """The body's JSON value, or ``NOT_JSON_BODY``; an :class:`InputError` naming the field for bytes
    that are not UTF-8, nesting deeper than ``MAX_REQUEST_DEPTH`` or an integer too long."""
    try:
        text, bad = body.decode("utf-8"), None
    except UnicodeDecodeError as exc:  # read on, to say where the bytes are
        text, bad = body.decode("utf-8", "surrogateescape"), exc.start
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(_deep_path(text)) from None
    except json.JSONDecodeError:
        if bad is not None:
            raise _not_utf8("the body", bad) from None
        return NOT_JSON_BODY
    except ValueError:  # an integer past sys.get_int_max_str_digits()
        value = json.loads(text, parse_int=_integer)
    _check(value, bad)
    return value


def long_integers(text: str) -> Any:
    """``text``'s JSON value when Python refuses it only for an integer too long to convert: each
    such integer kept as its digits, so that :func:`check_value` names where it is."""
    return json.loads(text, parse_int=_integer)


def check_value(value: Any) -> None:
    """Refuse a parsed value as a body is refused (:func:`body_json`): nesting past
    ``MAX_REQUEST_DEPTH``, an integer too long, each named by its path (``records[0].metadata``)."""
    _check(value, None)


def check_query(raw: bytes) -> None:
    """Refuse a query string whose percent-encoded bytes are not UTF-8, naming the parameter."""
    for part in raw.split(b"&"):
        name, _, value = part.partition(b"=")
        for piece in (name, value):
            try:
                unquote_to_bytes(piece.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                shown = unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8", "replace")
                raise InputError(
                    f"query parameter {shown!r} is not UTF-8 text; percent-encode its text as UTF-8"
                ) from None


def _integer(digits: str) -> int | _Digits:
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return _Digits(digits) if limit and len(digits.lstrip("-")) > limit else int(digits)


def _check(value: Any, bad: int | None) -> None:
    """The first thing in a parsed body no route may read: a container past the depth bound, an
    integer too long, or (``bad``: the body was not UTF-8) a string holding undecodable bytes.
    Walked with a list, not by recursion."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, (dict, list)):
            if len(path) >= MAX_REQUEST_DEPTH:
                raise _too_deep(path)
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if bad is not None and isinstance(key, str) and _ESCAPED.search(key):
                    raise _not_utf8(f"a key of {_shown(path)}", bad)
                stack.append((child, (*path, key)))
        elif isinstance(item, _Digits):
            raise InputError(
                f"{_shown(path)} is a number of {len(item.lstrip('-')):,} digits; send at most "
                f"{sys.get_int_max_str_digits():,}, or send it as a string"
            )
        elif bad is not None and isinstance(item, str) and _ESCAPED.search(item):
            raise _not_utf8(_shown(path), bad)


def _deep_path(text: str) -> tuple[Any, ...]:
    """Where a body too deep to parse first passes ``MAX_REQUEST_DEPTH``, from its tokens."""
    path: list[Any] = []
    arrays: list[bool] = []
    last = ""
    for token in _TOKEN.findall(text):
        if token in ("[", "{"):
            if len(path) >= MAX_REQUEST_DEPTH:
                break
            arrays.append(token == "[")
            path.append(0 if token == "[" else None)
        elif token in ("]", "}") and path:
            arrays.pop()
            path.pop()
        elif token == "," and arrays and arrays[-1]:
            path[-1] += 1
        elif token == ":" and path and last.startswith('"'):
            path[-1] = json.loads(last)
        if token.strip():
            last = token
    return tuple(path)


def _shown(path: tuple[Any, ...]) -> str:
    """``records[0].metadata``: a path as a caller reads it, shortened when very deep."""
    if not path:
        return "the body"
    shown = ""
    for part in path[:_SHOWN_PARTS]:
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            name = str(part)[:40].encode("utf-8", "backslashreplace").decode("utf-8")
            shown += f".{name}" if shown else name
    return shown + ("..." if len(path) > _SHOWN_PARTS else "")


def _too_deep(path: tuple[Any, ...]) -> InputError:
    return InputError(
        f"{_shown(path)} nests deeper than {MAX_REQUEST_DEPTH} levels; records and their metadata "
        "may nest much less deeply"
    )


def _not_utf8(where: str, byte: int) -> InputError:
    return InputError(f"{where} is not UTF-8 (byte {byte:,} of the body); send text as UTF-8")
