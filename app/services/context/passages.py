"""The passages of a long text that answer a question: its lines or sentences that hold the
question's words (or fall in the time it names), chosen instead of the text's first part.

Pure functions; the context loader renders what is chosen here and says what was left out.
"""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.services.context.time_phrases import Window
from app.tokens import estimate_tokens

# A summary's line as the compactor writes it: "- 2026-03-04 · call_summary: ...".
_DATED = re.compile(r"^\s*[-*]?\s*(\d{4}-\d{2}-\d{2})\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$€£\"'(])")
_SUFFIXES = ("ing", "ies", "ied", "es", "ed", "ly", "s")
NEIGHBOUR_WEIGHT = 0.5  # of a unit's neighbours' scores added to its own
LONG_LINE_TOKENS = 60  # a longer line is split into sentences, each a passage of its own


def stem(word: str) -> str:
    """A light stem (lower case, common English suffixes off): close enough to the search's
    stemming to tell which sentence holds a word the search matched."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def pattern_of(stems: Sequence[str]) -> re.Pattern[str]:
    """Any word starting with one of `stems` (the longest first); the group is the stem."""
    alternatives = "|".join(re.escape(s) for s in sorted(stems, key=len, reverse=True))
    return re.compile(rf"\b({alternatives})\w*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Unit:
    """One line or sentence of a text, with its date when the line carries one."""

    text: str
    at: datetime | None


def units(text: str) -> list[Unit]:
    """The text's non-empty lines, long ones split into sentences, in order."""
    found: list[Unit] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _DATED.match(line)
        at = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC) if m else None
        pieces = [line]
        if estimate_tokens(line) > LONG_LINE_TOKENS:
            pieces = [p for p in _SENTENCE_END.split(line) if p.strip()]
        for piece in pieces:
            found.append(Unit(piece, at))
    return found


@dataclass(frozen=True, slots=True)
class Choice:
    shown: list[int]  # indexes into the units, in text order
    total: int  # units in the text


def choose(
    found: Sequence[Unit],
    pattern: re.Pattern[str],
    window: Window | None,
    room: int,
    *,
    neighbours: bool = True,
) -> Choice:
    """The units that best answer, within `room` tokens, in text order.

    A unit scores the rarer-in-this-text query words it holds, plus as much again when it
    is dated inside the question's window; units that score nothing are never chosen.
    """
    n = len(found)
    held = [{m.lower() for m in pattern.findall(u.text)} for u in found]
    df: dict[str, int] = {}
    for words in held:
        for w in words:
            df[w] = df.get(w, 0) + 1
    weight = {s: math.log(1 + n / (1 + d)) for s, d in df.items()}
    own = [sum(weight[s] for s in held[i]) for i in range(n)]
    scores: list[tuple[float, int]] = []
    for i, u in enumerate(found):
        # A unit next to one holding the words shares part of its score: in a summary of a
        # conversation the line after a question often holds its answer.
        score = own[i]
        if neighbours:
            score += NEIGHBOUR_WEIGHT * sum(own[j] for j in (i - 1, i + 1) if 0 <= j < n)
        if window is not None and u.at is not None and window.holds(u.at):
            score = score * 2 + 1
        if score > 0:
            scores.append((score, i))
    scores.sort(key=lambda x: (-x[0], x[1]))
    chosen: list[int] = []
    used = 0
    for _, i in scores:
        cost = estimate_tokens(found[i].text) + 2
        if used + cost > room:
            continue
        chosen.append(i)
        used += cost
    return Choice(sorted(chosen), n)


def render(found: Sequence[Unit], choice: Choice) -> str:
    """The chosen units, an ellipsis line wherever units were skipped between them."""
    lines: list[str] = []
    last = -1
    for i in choice.shown:
        if i > last + 1:
            lines.append("…")
        lines.append(found[i].text)
        last = i
    if choice.shown and last < choice.total - 1:
        lines.append("…")
    return "\n".join(lines)
