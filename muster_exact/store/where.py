"""A read narrowed to some records: ``store.context(q, where={...})``.

    where = {"speaker": "Caroline",                       # or a list: any of them
             "time": {"from": "2023-05-01", "to": "2023-06-30"},  # ISO 8601; either end may be left out
             "metadata": {"source": "email"}}             # equality on each key given

Every part given must hold (speaker AND time AND each metadata key). A record's speaker is its
``speaker`` (or ``role``) as text; its time is its ``time`` (or ``timestamp``, ``date``) read by
:func:`parse_time` (ISO 8601, a number of seconds since 1970 UTC, or a written date such as
LoCoMo's "1:56 pm on 8 May, 2023"); a record without a readable time is outside every time range.
A date-only ``to`` takes the whole day. Metadata keys compare JSON values (``1`` is not ``"1"``).

What the filter changes is only which units may be chosen and what of them is shown: a unit is a
candidate when a record it is cut from matches, and a unit cut across records that do not match
shows only the parts of the ones that do (a line each), so a context holds matching records only.
Detection, the cut, the parents, the floors, the order and the read budget U are those of the
whole store (a filter never re-cuts), each channel ranks every unit as it always does and keeps its
best candidates, and on a numbered log a unit is shown as the newest candidate version of its
slot. A filter is not access control: keep memories that must not meet in separate namespaces.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from muster_exact.core.errors import InputError
from muster_exact.text.records import SPEAKER_KEYS, TIME_KEYS

FIELDS = ("speaker", "time", "metadata")
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
# A clock before the date needs its minutes or am/pm ("1:56 pm on", "3pm"): "31 June" is no clock.
_CLOCK = (
    r"(?:(?P<hour>\d{1,2})(?::(?P<minute>\d{2})\s*(?P<half>am|pm)?|\s*(?P<half_only>am|pm))"
    r"\s*,?\s*(?:on\s+)?)?"
)
_DAY_MONTH = re.compile(
    rf"^{_CLOCK}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month>{_MONTH})\.?,?\s+(?P<year>\d{{4}})$", re.I
)
_MONTH_DAY = re.compile(
    rf"^{_CLOCK}(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})$", re.I
)


@dataclass(frozen=True)
class Where:
    """A checked filter (:func:`checked_where`)."""

    speakers: frozenset[str] | None = None
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def matches(self, record: Mapping[str, Any]) -> bool:
        if self.speakers is not None and _first(record, SPEAKER_KEYS) not in self.speakers:
            return False
        if self.start is not None or self.end is not None:
            when = parse_time(record.get(next((k for k in TIME_KEYS if k in record), "time")))
            if when is None or (self.start and when < self.start) or (self.end and when > self.end):
                return False
        if self.metadata:
            held = record.get("metadata")
            if not isinstance(held, Mapping):
                return False
            return all(key in held and _same(held[key], value) for key, value in self.metadata.items())
        return True


def checked_where(where: Any) -> Where | None:
    """``where`` as a :class:`Where`, or None for no filter (None or ``{}``); one clear
    :class:`InputError` for anything else."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InputError(f"where must be an object with {_fields()}, not {type(where).__name__}")
    unknown = sorted(str(k) for k in where if k not in FIELDS)
    if unknown:
        raise InputError(f"where: unknown field {unknown[0]!r}; a filter takes {_fields()}")
    if not where:
        return None
    start, end = _time_range(where.get("time"))
    return Where(_speakers(where.get("speaker")), start, end, _metadata(where.get("metadata")))


def parse_time(value: Any) -> dt.datetime | None:
    """A record's time as a naive UTC datetime, or None when it cannot be read (see the module)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            return dt.datetime.fromtimestamp(value, dt.UTC).replace(tzinfo=None)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = " ".join(value.strip().split())
    iso = _iso(text)
    if iso is not None:
        return iso
    match = _DAY_MONTH.match(text) or _MONTH_DAY.match(text)
    if match is None:
        return None
    hour, half = int(match["hour"] or 0), match["half"] or match["half_only"]
    if half:
        hour = hour % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return dt.datetime(
            int(match["year"]),
            _MONTHS[match["month"].lower()],
            int(match["day"]),
            hour,
            int(match["minute"] or 0),
        )
    except ValueError:  # 31 June, 25 pm
        return None


def _iso(text: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def _speakers(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if (
        isinstance(names, (str, bytes, Mapping))
        or not isinstance(names, Sequence)
        or not names
        or not all(isinstance(n, str) and n.strip() for n in names)
    ):
        raise InputError("where.speaker must be a speaker's name or a non-empty list of names")
    return frozenset(names)


def _time_range(value: Any) -> tuple[dt.datetime | None, dt.datetime | None]:
    if value is None:
        return None, None
    if not isinstance(value, Mapping) or not value or set(value) - {"from", "to"}:
        raise InputError('where.time must be {"from": ..., "to": ...} (ISO 8601; either may be left out)')
    start = _bound(value.get("from"), "from", end_of_day=False)
    end = _bound(value.get("to"), "to", end_of_day=True)
    if start is not None and end is not None and start > end:
        raise InputError(f"where.time: 'from' ({value['from']}) is after 'to' ({value['to']})")
    return start, end


def _bound(value: Any, name: str, end_of_day: bool) -> dt.datetime | None:
    if value is None:
        return None
    parsed = _iso(value) if isinstance(value, str) else None
    if parsed is None:
        raise InputError(
            f"where.time.{name} must be an ISO 8601 date or time (2023-05-08, 2023-05-08T14:30), "
            f"not {value!r}"
        )
    date_only = isinstance(value, str) and len(value.strip()) == 10
    return parsed + dt.timedelta(days=1, microseconds=-1) if end_of_day and date_only else parsed


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not value or not all(isinstance(k, str) for k in value):
        raise InputError("where.metadata must be a non-empty object of metadata keys and the values to match")
    return dict(value)


def _first(record: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        if record.get(key) is not None:
            return str(record[key])
    return None


def _same(held: Any, wanted: Any) -> bool:
    """Equal as JSON values: ``1`` is not ``"1"`` nor ``True``, ``1`` is ``1.0``."""
    return json.dumps(held, sort_keys=True) == json.dumps(wanted, sort_keys=True) or (
        type(held) in (int, float) and type(wanted) in (int, float) and held == wanted
    )


def _fields() -> str:
    return "speaker, time (from, to) and metadata"
