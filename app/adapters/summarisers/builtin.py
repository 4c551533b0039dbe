"""The built-in extractive summariser (the embedded default): deterministic, no network, no
tokens spent; and its algorithm.

It only selects and arranges sentences already in the events: it never rewrites one, so a
number, name or date in the summary is always the one the event said; a relative date
("yesterday") gets its absolute date added in brackets, so the sentence still says when, and
a chat line keeps its speaker ("Dana: "), so the sentence still says who.
"""

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from app.adapters.summarisers.base import (
    CHARS_PER_TOKEN,
    MAX_TITLE,
    EventText,
    Summary,
    SummaryResult,
)

BUILTIN_SUMMARISER_NAME = "builtin-extractive-v2"


# --- sentences ---------------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
# Split after . ! ? when the next sentence starts; abbreviations are protected first.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9$€£])")
_ABBREVIATIONS = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|Prof|Inc|Ltd|Co|Corp|Jr|Sr|St|vs|etc|approx|Jan|Feb|Mar|Apr|"
    r"Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|e\.g|i\.e|U\.S|a\.m|p\.m)\.",
)
_PROTECT = "\x00"
_MAX_UNIT = 400  # longer run-on text is cut at a clause or word boundary, never mid-word


def _units(body: str) -> list[str]:
    """Sentences and bullet items of one event body, whitespace-normalised, verbatim."""
    blocks: list[str] = []
    paragraph: list[str] = []
    for line in body.splitlines():
        if not line.strip() or _BULLET.match(line) or _HEADING.match(line):
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
            if line.strip():
                blocks.append(_HEADING.sub("", _BULLET.sub("", line)))
        else:
            paragraph.append(line.strip())
    if paragraph:
        blocks.append(" ".join(paragraph))
    units: list[str] = []
    for block in blocks:
        protected = _ABBREVIATIONS.sub(lambda m: m.group().replace(".", _PROTECT), block)
        for sentence in _SENTENCE_END.split(protected):
            sentence = " ".join(sentence.replace(_PROTECT, ".").split())
            sentence = _BULLET.sub("", sentence)
            units.extend(_cut(sentence))
    return [u for u in units if u]


def _cut(text: str) -> list[str]:
    pieces: list[str] = []
    while len(text) > _MAX_UNIT:
        window = text[:_MAX_UNIT]
        at = max(window.rfind("; "), window.rfind(", "))
        at = at + 1 if at > _MAX_UNIT // 2 else window.rfind(" ")
        if at <= 0:
            at = _MAX_UNIT
        pieces.append(text[:at].strip())
        text = text[at:].strip()
    pieces.append(text)
    return pieces


# --- scoring -----------------------------------------------------------------------------


def _words(alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + alternatives + r")\b", re.IGNORECASE)


_DECISION = _words(
    r"decid\w*|agree\w*|approv\w*|sign\w*|commit\w*|chose|chosen|select\w*|reject\w*|"
    r"declin\w*|confirm\w*|will|won't|must|shall|next steps?|deadlines?|due|action items?|"
    r"owner|assigned|plan\w*|launch\w*|cancel\w*|renew\w*|terminat\w*|escalat\w*|"
    r"priorit\w*|budget\w*|contract\w*|pric\w*|discount\w*|hired?|resign\w*|promot\w*|"
    r"switch\w*|migrat\w*|postpon\w*|delay\w*|paus\w*|requir\w*|policy|"
    r"goal\w*|target\w*"
)
_PATTERN = _words(
    r"prefers?|preferred|always|never|usually|often|every|recurring|again|repeated\w*|"
    r"wants?|needs?|expects?|asked|requested|insist\w*|relationship|trust\w*|champion|"
    r"blocker|decision[- ]maker"
)
_SENTIMENT = _words(
    r"frustrat\w*|unhappy|concern\w*|worr\w*|angry|upset|disappoint\w*|complain\w*|"
    r"threat\w*|churn\w*|risk\w*|delight\w*|happy|pleased|excit\w*|impress\w*|satisf\w*|"
    r"dissatisf\w*|tension|conflict\w*|relie\w*|improv\w*|deteriorat\w*|however|but now|"
    r"no longer"
)
_MONTHS = (
    r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
)
_FIGURE = re.compile(
    r"[$€£¥]\s?\d|\d[\d,.]*\s?(?:%|percent|k\b|m\b|bn\b|USD|EUR|GBP)|"
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
    rf"\b(?:{_MONTHS})\.? \d{{1,2}}\b|\b\d{{1,2}} (?:{_MONTHS})\b|\bQ[1-4]\b|"
    r"\b\d+(?:[.,]\d+)?\b",
)
_IDENTIFIER = re.compile(r"\b(?:[A-Z]{2,}[-_]?\d+[\w-]*|[A-Za-z]+-\d{2,}[\w-]*|[A-Z]{2,})\b")
_PROPER = re.compile(r"(?<=[a-z,;:)] )[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*")
_NOT_NAMES = frozenset(
    "I Monday Tuesday Wednesday Thursday Friday Saturday Sunday The We They He She It".split()
)
_FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|thanks?|thank you|cheers|great|good|nice|ok|okay|sure|yes|no|"
    r"cool|awesome|perfect|sounds good|good call|good point|will do|noted|got it|lol|"
    r"bye|see you|talk soon|welcome|\+1|all|everyone|team|folks|guys|so much|again|"
    r"for|the|a|meeting|call|chat|today|all the best|have a good (?:one|day|weekend)|"
    r"speak soon|let's wrap up|wrapping up|that's all|nothing else)\b[\s!.,:;]*)+$",
    re.IGNORECASE,
)


# A chat line's speaker ("Dana Whitfield: ..."): who said it, not what was said.
_SPEAKER = re.compile(r"^[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}: ")
_LOWER_WORD = re.compile(r"[a-z]{2,}")
_RARE_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
# A word in at most this share of a bucket's events (or in one of them) is rare there.
RARE_SHARE = 0.005


def _said(unit: str) -> str:
    return _SPEAKER.sub("", unit, count=1)


_FIRST_PERSON = _words(
    r"I|I'm|I've|I'd|I'll|my|me|mine|myself|we|we're|we've|we'd|we'll|our|ours|us"
)
_SECOND_PERSON = _words(r"you|your|yours|you're|you've|you'd|you'll|yourself")


def _voice(unit: str) -> int:
    """What a sentence's voice adds to its rank: a speaker's own statement (what they did,
    have, like or plan) holds the facts of a chat; a question or a reply about the listener
    ("That's great, you must be proud!") seldom does."""
    text = _said(unit).rstrip()
    if text.endswith("?"):
        return -2
    if _FIRST_PERSON.search(text):
        return 2
    if _SECOND_PERSON.search(text):
        return -1
    return 0


def rare_words(bodies: Sequence[str]) -> frozenset[str]:
    """The words (4+ letters, lower-cased) in few of these events: a sentence holding one
    says something said once, not the template of a routine message."""
    seen: Counter[str] = Counter()
    for body in bodies:
        seen.update({w.lower() for w in _RARE_WORD.findall(body)})
    most = max(1, int(len(bodies) * RARE_SHARE))
    return frozenset(w for w, n in seen.items() if n <= most)


def _score(unit: str, rare: frozenset[str] = frozenset()) -> int:
    """Higher = carries more of what a compacted memory must keep; -1 drops the unit.

    Scored without its speaker. A name alone carries nothing (a pleasantry naming
    someone), nor does a line of names and dates with under three other words (a header).
    """
    text = _said(unit)
    if _FILLER.match(text) or len(text.split()) < 3 and not _FIGURE.search(text):
        return -1
    decision = _DECISION.search(text) is not None
    names = [n for n in _PROPER.findall(text) if n not in _NOT_NAMES]
    rest = _FIGURE.sub(" ", _PROPER.sub(" ", text)).lower()
    if len(_LOWER_WORD.findall(rest)) < 3 and not decision:
        return -1
    signal = 3 * decision
    signal += min(len(_FIGURE.findall(text)), 2) * 2
    identifiers = len(_IDENTIFIER.findall(text))
    if _SENTIMENT.search(text):
        signal += 2
    if _PATTERN.search(text):
        signal += 1
    specific = any(w.lower() in rare for w in _RARE_WORD.findall(text))
    if specific:
        signal += 3  # as much as a decision: a once-said fact
    if signal == 0 and identifiers == 0:
        return -1
    score = signal + min(len(names) + identifiers, 2)
    if not (specific or identifiers or _FIGURE.search(text)):
        # Routine: every word is common in these events (a template said every week).
        score = min(score, 2)
    return score


def _signature(unit: str) -> tuple[frozenset[str], frozenset[str]]:
    lowered = _said(unit).lower()
    return frozenset(re.findall(r"[a-z0-9]+", lowered)), frozenset(re.findall(r"\d[\d,.]*", unit))


def _near_duplicate(
    sig: tuple[frozenset[str], frozenset[str]], kept: list[tuple[frozenset[str], frozenset[str]]]
) -> bool:
    """Same words (Jaccard >= 0.8) and no number the kept sentence lacks."""
    words, numbers = sig
    for other_words, other_numbers in kept:
        if not numbers <= other_numbers:
            continue
        union = words | other_words
        if union and len(words & other_words) / len(union) >= 0.8:
            return True
    return False


# --- the summariser ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    event: int  # index into the chronologically sorted events
    position: int  # order within the whole input
    text: str
    score: int


def _title(scope_label: str, period_label: str, n: int) -> str:
    title = " ".join(f"{scope_label}: {period_label} summary ({n} events)".split())
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1] + "…"


def _footer(n: int) -> str:
    return f"_Summarised by {BUILTIN_SUMMARISER_NAME} from {n} events._"


# The share of its input a summary may keep (within max_chars): a chat's facts are spread over
# most of its turns, and at a third half of them were lost (docs/context-eval.md).
KEEP_SHARE = 2 / 3
MIN_BUDGET = 600  # characters a summary of a short input may always take


def summarise_extractive(
    events: Sequence[EventText], *, scope_label: str, period_label: str, max_chars: int = 4000
) -> Summary:
    """A deterministic extractive summary: the fact-bearing sentences, verbatim, by date.

    One line per day and kind, each event's sentences after its speaker. The body (footer
    included) stays within max_chars and, for inputs over 900 characters, within two thirds
    of the input.
    """
    if not events:
        raise ValueError("no events to summarise")
    if max_chars < 300:
        raise ValueError("max_chars must be at least 300 (room for one line and the footer)")
    ordered = sorted(events, key=lambda e: e.occurred_at)  # stable: ties keep input order
    n = len(ordered)
    input_chars = sum(len(e.body) for e in ordered)
    footer = _footer(n)
    budget = min(max_chars, max(int(input_chars * KEEP_SHARE), MIN_BUDGET)) - len(footer) - 2

    rare = rare_words([e.body for e in ordered])
    candidates: list[_Candidate] = []
    for index, event in enumerate(ordered):
        for unit in _units(event.body):
            score = _score(unit, rare)
            if score > 0:  # no signal at all: meeting prose the summary is meant to drop
                rank = score + _voice(unit)
                candidates.append(_Candidate(index, len(candidates), unit, rank))

    # A day's events of one kind share a line: its date and kind are written once.
    days = [(f"{e.occurred_at:%Y-%m-%d}", " ".join(e.kind.split())) for e in ordered]
    speakers = [_speaker(e.body) for e in ordered]
    chosen: list[_Candidate] = []
    signatures: list[tuple[frozenset[str], frozenset[str]]] = []
    events_used: set[int] = set()
    days_used: set[tuple[str, str]] = set()
    used = 0
    shown = {
        c.position: resolve_relative_dates(c.text, ordered[c.event].occurred_at.date())
        for c in candidates
    }  # scored and compared as said, shown with the absolute dates of relative ones
    for cand in sorted(candidates, key=lambda c: (-c.score, c.position)):
        cost = len(shown[cand.position]) + 1  # and the space or line break before it
        if cand.event not in events_used:
            # An event's first sentence pays for its speaker, and a day's for its prefix.
            speaker = speakers[cand.event]
            cost += len(speaker) if speaker and not cand.text.startswith(speaker) else 0
            day = days[cand.event]
            cost += len(_prefix(day)) if day not in days_used else 0
        if used + cost > budget:
            continue
        sig = _signature(cand.text)
        if _near_duplicate(sig, signatures):
            continue
        chosen.append(cand)
        signatures.append(sig)
        events_used.add(cand.event)
        days_used.add(days[cand.event])
        used += cost

    by_event: dict[int, list[str]] = {}
    for cand in sorted(chosen, key=lambda c: c.position):
        texts = by_event.setdefault(cand.event, [])
        speaker = speakers[cand.event]
        if not texts and speaker and not cand.text.startswith(speaker):
            texts.append(speaker.rstrip())  # who said it, as the event said it
        texts.append(shown[cand.position])
    by_day: dict[tuple[str, str], list[str]] = {}
    for index, texts in by_event.items():
        by_day.setdefault(days[index], []).append(" ".join(texts))
    lines = [_prefix(day) + " ".join(texts) for day, texts in by_day.items()]
    if not lines:
        lines.append("_No decisions, figures or commitments found in these events._")
    body = "\n".join(lines) + "\n\n" + footer
    tags = recurring_names(body, [e.body for e in ordered])
    return Summary(title=_title(scope_label, period_label, n), body=body, tags=tags)


def _prefix(day: tuple[str, str]) -> str:
    """A summary line's start, as the context loader reads its date: "- 2024-03-04 · call: "."""
    return f"- {day[0]} · {day[1]}: "


def _speaker(body: str) -> str:
    """The event's speaker label ("Dana Whitfield: "), or "" when it opens with none."""
    m = _SPEAKER.match(body.lstrip())
    return m.group() if m else ""


# --- the names a summary is tagged with ----------------------------------------------------

NAME_TAGS = 5  # names tagged on one summary, besides "compactor" and its kinds
NAME_TAG_MAX_CHARS = 40
_LINE_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}): ", re.MULTILINE)


def recurring_names(summary: str, bodies: Sequence[str], limit: int = NAME_TAGS) -> tuple[str, ...]:
    """The capitalised names (speakers, and names within sentences) that recur across
    these events and that the summary mentions, most frequent first, at most `limit`."""
    seen: Counter[str] = Counter()
    for body in bodies:
        said = _LINE_SPEAKER.sub("", body)  # a speaker's surname alone is not another name
        seen.update(set(_PROPER.findall(said)) | set(_LINE_SPEAKER.findall(body)))
    names: list[str] = []
    for name, count in sorted(seen.items(), key=lambda item: (-item[1], item[0])):
        if count < 2 or len(names) >= limit:
            break
        if (
            name in _NOT_NAMES
            or len(name) > NAME_TAG_MAX_CHARS
            or not re.search(rf"\b{re.escape(name)}\b", summary)
        ):
            continue
        names.append(name)
    return tuple(names)


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


@dataclass(frozen=True)
class BuiltinSummariser:
    """The embedded default: extractive, deterministic, no network, no tokens spent."""

    @property
    def name(self) -> str:
        return BUILTIN_SUMMARISER_NAME

    @property
    def remote(self) -> bool:
        return False

    async def summarise(
        self,
        events: list[EventText],
        *,
        scope_label: str,
        period_label: str,
        max_output_tokens: int,
    ) -> SummaryResult:
        summary = summarise_extractive(
            events,
            scope_label=scope_label,
            period_label=period_label,
            max_chars=max(300, max_output_tokens * CHARS_PER_TOKEN),
        )
        return SummaryResult(
            title=summary.title,
            body=summary.body,  # ends with its own "_Summarised by builtin-extractive-v2…_"
            model=BUILTIN_SUMMARISER_NAME,
            prompt_tokens=0,
            completion_tokens=0,
            tags=summary.tags,
        )
