"""Relative dates in an event's text resolved against when the event occurred, so a fact
sentence lifted out of it still says when: "yesterday" becomes "yesterday (2024-03-11)"."""

import re
from datetime import date, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# Hand-written: the phrases are few and fixed, and a general date parser would also rewrite
# absolute dates the summary must keep verbatim.
_RELATIVE = re.compile(
    r"\b(?:(?P<day>yesterday|today|tonight|tomorrow|last night|this (?:morning|afternoon|"
    r"evening))|(?P<rel>last|this|next) (?P<unit>week|weekend|month|year)|"
    r"(?P<wrel>last|next) (?P<weekday>" + "|".join(_WEEKDAYS) + r")|"
    r"(?P<n>\d{1,2}|a|one|two|three|four|five|six) (?P<nunit>days?|weeks?|months?|years?) ago)"
    r"\b(?! \()",
    re.IGNORECASE,
)


def _month(d: date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _resolve(m: re.Match[str], on: date) -> str | None:
    if m["day"]:
        day = m["day"].lower()
        shift = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(day, 0)
        return f"{on + timedelta(days=shift):%Y-%m-%d}"
    if m["unit"]:
        shift = {"last": -1, "this": 0, "next": 1}[m["rel"].lower()]
        unit = m["unit"].lower()
        if unit == "week":
            return f"week of {_monday(on) + timedelta(weeks=shift):%Y-%m-%d}"
        if unit == "weekend":
            saturday = _monday(on) + timedelta(days=5, weeks=shift)
            return f"{saturday:%Y-%m-%d}"
        if unit == "month":
            return _month(on, shift)
        return f"{on.year + shift}"
    if m["weekday"]:
        target = _WEEKDAYS.index(m["weekday"].lower())
        if m["wrel"].lower() == "last":
            back = (on.weekday() - target) % 7 or 7
            return f"{on - timedelta(days=back):%Y-%m-%d}"
        ahead = (target - on.weekday()) % 7 or 7
        return f"{on + timedelta(days=ahead):%Y-%m-%d}"
    n = _NUMBERS.get(m["n"].lower()) or int(m["n"])
    unit = m["nunit"].lower().rstrip("s")
    if unit == "day":
        return f"{on - timedelta(days=n):%Y-%m-%d}"
    if unit == "week":
        return f"week of {_monday(on - timedelta(weeks=n)):%Y-%m-%d}"
    if unit == "month":
        return _month(on, -n)
    return f"{on.year - n}"


def resolve_relative_dates(text: str, on: date) -> str:
    """`text` with each relative date phrase followed by its absolute date in brackets."""

    def annotate(m: re.Match[str]) -> str:
        resolved = _resolve(m, on)
        return m.group() if resolved is None else f"{m.group()} ({resolved})"

    return _RELATIVE.sub(annotate, text)
