"""Time phrases of a question ("in May", "last month", "3 weeks ago") as a window of time.

Pure functions over the question and a 'now': the context loader ranks occurredAt (and a
summary's dated lines) by the window found here; nothing here reads storage.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

# Order matters: the first pattern that matches names the window.
_MONTH_YEAR = re.compile(
    rf"\b(?:(?:in|during|of|for|on|from|since)\s+)?({_MONTH})\.?,?\s+(\d{{4}})\b", re.I
)
# A month without a year needs a preposition before it ("may" is also a verb).
_MONTH_ALONE = re.compile(
    rf"\b(?:in|during|of|for|from|since|early|late|mid)\s+({_MONTH})\b\.?", re.I
)
_YEAR = re.compile(r"\b(?:in|during|of|for)\s+((?:19|20)\d{2})\b", re.I)
_AGO = re.compile(
    r"\b(\d{1,3}|an?|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", re.I
)
_RELATIVE = re.compile(
    r"\b(yesterday|today|(?:last|this|past|previous)\s+(?:week|month|year))\b", re.I
)


@dataclass(frozen=True, slots=True)
class Window:
    """A stretch of time a question names: [start, end)."""

    start: datetime
    end: datetime
    phrase: str  # the words that named it, as written

    def holds(self, at: datetime) -> bool:
        return self.start <= at < self.end

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return start < self.end and self.start < end


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def window(question: str, now: datetime) -> Window | None:
    """The window of time the question names, if any, read relative to `now`."""
    now = now.astimezone(UTC)
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if m := _MONTH_YEAR.search(question):
        start, end = _month(int(m.group(2)), _MONTHS[m.group(1).lower()])
        return Window(start, end, m.group(0))
    if m := _MONTH_ALONE.search(question):
        month = _MONTHS[m.group(1).lower()]
        year = now.year if month <= now.month else now.year - 1  # the latest one begun
        start, end = _month(year, month)
        return Window(start, end, m.group(0))
    if m := _RELATIVE.search(question):
        phrase = " ".join(m.group(1).lower().split())
        if phrase == "today":
            return Window(today, today + timedelta(days=1), m.group(0))
        if phrase == "yesterday":
            return Window(today - timedelta(days=1), today, m.group(0))
        which, unit = phrase.split()
        current = which == "this"
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            start = monday if current else monday - timedelta(days=7)
            return Window(start, start + timedelta(days=7), m.group(0))
        if unit == "month":
            start, end = _month(now.year, now.month)
            if not current:
                start, end = _month(
                    *((now.year - 1, 12) if now.month == 1 else (now.year, now.month - 1))
                )
            return Window(start, end, m.group(0))
        start = datetime(now.year - (not current), 1, 1, tzinfo=UTC)
        return Window(start, start.replace(year=start.year + 1), m.group(0))
    if m := _AGO.search(question):
        n = _NUMBERS.get(m.group(1).lower()) or int(m.group(1))
        days = _UNIT_DAYS[m.group(2).lower()]
        center = today - timedelta(days=n * days)
        half = timedelta(days=max(days // 2, 1))
        return Window(center - half, center + half + timedelta(days=1), m.group(0))
    if m := _YEAR.search(question):
        start = datetime(int(m.group(1)), 1, 1, tzinfo=UTC)
        return Window(start, start.replace(year=start.year + 1), m.group(0))
    return None


def without(question: str, found: Window | None) -> str:
    """The question without the phrase that named the window (its words are not topics)."""
    if found is None:
        return question
    rest = " ".join(question.replace(found.phrase, " ").split())
    return rest or question
