"""DLP: find and redact (or block on) sensitive text before it leaves the service.

Pure functions over strings; it never logs, stores or returns the matched text itself.
"""

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum


class DlpMode(StrEnum):
    REDACT = "redact"
    BLOCK = "block"
    OFF = "off"


@dataclass(frozen=True)
class DlpFinding:
    """Where a sensitive span is; deliberately not what it says."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class DlpResult:
    text: str
    findings: tuple[DlpFinding, ...]
    blocked: bool

    def counts(self) -> dict[str, int]:
        """Findings per kind: safe to log and record on a compactor run."""
        return dict(Counter(f.kind for f in self.findings))


# A tenant's regexes run in-process and Python's `re` has no timeout, so two guards:
# patterns with a quantified group that itself repeats ((a+)+, (\w*)*, ...) are refused
# when configured, and each pattern only ever sees one line of at most this many
# characters (longer lines in overlapping windows), which bounds polynomial
# backtracking. Custom patterns therefore never match across a line break.
CUSTOM_WINDOW = 4096
CUSTOM_OVERLAP = 256

_NESTED_QUANTIFIER = re.compile(
    r"\((?!\?>)(?:[^()\\]|\\.)*?(?:[+*?]|\{\d*,\d*\})(?<!\+\+|\*\+|\?\+|\}\+)\)(?:[+*]|\{\d*,)"
)


def compile_custom(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    """Compile a tenant's DLP regexes; ValueError names the first unusable one by index."""
    compiled: list[re.Pattern[str]] = []
    for index, pattern in enumerate(patterns):
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"custom DLP pattern #{index} is not a valid regex: {exc}") from None
        if rx.fullmatch(""):
            raise ValueError(f"custom DLP pattern #{index} matches the empty string")
        if _NESTED_QUANTIFIER.search(pattern):
            raise ValueError(
                f"custom DLP pattern #{index} repeats a repeated group and could backtrack "
                "catastrophically; use a possessive quantifier or an atomic group instead"
            )
        compiled.append(rx)
    return compiled


@functools.lru_cache(maxsize=256)
def _compile_custom_cached(patterns: tuple[str, ...]) -> list[re.Pattern[str]]:
    return compile_custom(patterns)


# --- checksums -------------------------------------------------------------------------


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_ok(iban: str) -> bool:
    if not 15 <= len(iban) <= 34:
        return False
    iban = iban.upper()  # written in lowercase it is the same account
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


# --- detectors ---------------------------------------------------------------------------
# Every detector yields (start, end) spans. The built-in regexes start only where a token
# starts (a lookbehind) or use possessive quantifiers, so each stays linear in the input.

_Span = tuple[int, int]
_A = re.ASCII

# No lookbehind on purpose: scanning from every position guarantees any email-shaped
# substring left in the text is found; the {1,64} cap (RFC 5321's local-part limit)
# keeps that linear.
_EMAIL = re.compile(
    r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]++)*\.[A-Za-z]{2,63}", _A
)

# International numbers: "+44 20 7946 0958", or with the "00" dialling prefix instead of "+".
_PHONE_INTL = re.compile(
    r"(?<![0-9A-Za-z+])(?:\+|00)[1-9][0-9]{0,3}+(?:[ .-]?+(?:\([0-9]{1,4}+\)|[0-9]{1,5}+))++",
    _A,
)
_PHONE_NANP = re.compile(
    r"(?<![0-9A-Za-z$€£+])(?:\(\d{3}\)[ ]?+|\d{3}[ .-])\d{3}[ .-]\d{4}(?![0-9A-Za-z%])", _A
)
# National numbers with a trunk 0 (UK, FR, DE, ...): 020 7946 0958, 07700 900123.
_PHONE_TRUNK = re.compile(
    r"(?<![0-9A-Za-z$€£+.,/])0[1-9][0-9]{0,4}+(?:[ .-]?+[0-9]{2,4}+){2,4}+", _A
)
_DATE_START = re.compile(r"(?:\d{1,2}[ .-]\d{1,2}[ .-]\d{4}|\d{4}[ .-]\d{1,2}[ .-]\d{1,2})\b", _A)

_CARD = re.compile(r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])", _A)
# Any case: "de89 3704 0044 0532 0130 00" is as much an account as its uppercase form.
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}(?:[ ]?+[A-Za-z0-9]){11,30}+", _A)

_SECRETS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}+", _A),
    re.compile(r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{10,}+", _A),
    re.compile(r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}+", _A),
    re.compile(r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{20,}+", _A),
    re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}+", _A),
    re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])", _A),
    re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]++", _A),
    re.compile(
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[\s\S]*?"
        r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----|\Z)",
        _A,
    ),
)
# Only the value is redacted, so "password=[REDACTED:secret]" still reads as what it was.
_BEARER = re.compile(
    r"(?<![A-Za-z0-9])(?:bearer|basic)\s++(?P<v>[A-Za-z0-9._~+/-]{8,}+=*)", _A | re.I
)
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<k>[A-Za-z0-9_.-]{0,40}?"
    r"(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|apikey|private[_-]?key|"
    r"credentials?)[A-Za-z0-9_.-]{0,40}?)[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?P<v>[^\s\"',;]{4,}+)",
    _A | re.I,
)
_URL_CREDENTIALS = re.compile(r"://[^\s:/@]{1,256}:(?P<v>[^\s@/]{1,256})@", _A)
# "=" only as base64 padding, so "key=<token>" redacts the token, not the key name.
_TOKEN = re.compile(r"(?<![A-Za-z0-9_+-])[A-Za-z0-9_+-]{32,}+=*", _A)
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", _A)


def _iter_spans(rx: re.Pattern[str], text: str) -> Iterable[_Span]:
    for m in rx.finditer(text):
        yield m.span("v") if "v" in rx.groupindex else m.span()


def _bounded(text: str, start: int, end: int) -> bool:
    """Not glued to a longer number, word, amount or percentage."""
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "$€£+"):
        return False
    after = text[end : end + 2]
    if after[:1].isalnum() or after[:1] == "%":
        return False
    return not (len(after) == 2 and after[0] in ".,/" and after[1].isdigit())


def _digit_count(s: str) -> int:
    return sum(ch.isdigit() for ch in s)


def _phones(text: str) -> Iterable[_Span]:
    for m in _PHONE_INTL.finditer(text):
        prefix = 2 if m.group().startswith("00") else 0  # "00" is the prefix, not the number
        if 8 <= _digit_count(m.group()) - prefix <= 15 and _bounded(text, *m.span()):
            yield m.span()
    yield from _iter_spans(_PHONE_NANP, text)
    for m in _PHONE_TRUNK.finditer(text):
        candidate = m.group()
        if (
            9 <= _digit_count(candidate) <= 12
            and not _DATE_START.match(candidate)
            and _bounded(text, *m.span())
        ):
            yield m.span()


def _grouping_ok(candidate: str, *, spans: tuple[tuple[int, ...], ...] = ()) -> bool:
    """Printed cards and IBANs come in groups of four (or a known issuer layout)."""
    sizes = tuple(len(g) for g in re.split(r"[ -]", candidate))
    if len(sizes) == 1 or sizes in spans:
        return True
    return all(n == 4 for n in sizes[:-1]) and 1 <= sizes[-1] <= 4


def _shrinking(start: int, candidate: str) -> Iterator[tuple[int, str]]:
    """The candidate, then each prefix that ends before one of its separators."""
    yield start + len(candidate), candidate
    for i in range(len(candidate) - 1, 0, -1):
        if candidate[i] in " -":
            yield start + i, candidate[:i]


_CARD_LAYOUTS = ((4, 6, 4), (4, 6, 5))  # Diners, Amex


def _cards(text: str) -> Iterable[_Span]:
    for m in _CARD.finditer(text):
        for end, candidate in _shrinking(m.start(), m.group()):
            digits = candidate.replace(" ", "").replace("-", "")
            if len(digits) < 13:
                break
            if _grouping_ok(candidate, spans=_CARD_LAYOUTS) and _luhn_ok(digits):
                yield m.start(), end
                break


def _ibans(text: str) -> Iterable[_Span]:
    for m in _IBAN.finditer(text):
        glued = m.end() < len(text) and text[m.end()].isalnum()
        candidates = _shrinking(m.start(), m.group())
        if glued:
            next(candidates)
        for end, candidate in candidates:
            if _grouping_ok(candidate) and _iban_ok(candidate.replace(" ", "")):
                yield m.start(), end
                break


def _secrets(text: str) -> Iterable[_Span]:
    for rx in _SECRETS:
        yield from _iter_spans(rx, text)
    for m in _BEARER.finditer(text):
        if _looks_like_token(m.group("v"), min_len=24):
            yield m.span("v")
    for m in _ASSIGNMENT.finditer(text):
        # "max_tokens: 800" is a setting; a numeric password still counts.
        if not m.group("v").isdigit() or re.search(r"pass|pwd|secret", m.group("k"), re.I):
            yield m.span("v")
    yield from _iter_spans(_URL_CREDENTIALS, text)
    for m in _TOKEN.finditer(text):
        if _UUID.fullmatch(m.group()) is None and _high_entropy(m.group()):
            yield m.span()


def _looks_like_token(value: str, *, min_len: int) -> bool:
    # "Bearer authentication" is prose; a real token has a digit or is long.
    return any(ch.isdigit() for ch in value) or len(value) >= min_len


def _high_entropy(token: str) -> bool:
    """Random-looking, not a long identifier such as customer_relationship_2024_report."""
    letters = sum(ch.isalpha() for ch in token)
    digits = sum(ch.isdigit() for ch in token)
    if letters < 2 or digits < 2:
        return False
    classes = [
        "d" if ch.isdigit() else "u" if ch.isupper() else "l" for ch in token if ch.isalnum()
    ]
    switches = sum(a != b for a, b in zip(classes, classes[1:], strict=False))
    counts = Counter(token)
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return entropy >= 3.0 and switches / len(token) >= 0.2


def _custom(text: str, patterns: Sequence[re.Pattern[str]]) -> Iterable[_Span]:
    line_start = 0
    for line in text.split("\n"):
        offset = 0
        while True:
            window = line[offset : offset + CUSTOM_WINDOW]
            for rx in patterns:
                for m in rx.finditer(window):
                    if m.end() > m.start():
                        yield line_start + offset + m.start(), line_start + offset + m.end()
            if offset + CUSTOM_WINDOW >= len(line):
                break
            offset += CUSTOM_WINDOW - CUSTOM_OVERLAP
        line_start += len(line) + 1


# Ties between overlapping findings of equal length go to the earlier kind here.
_DETECTORS: tuple[tuple[str, Callable[[str], Iterable[_Span]]], ...] = (
    ("secret", _secrets),
    ("card", _cards),
    ("iban", _ibans),
    ("email", lambda text: _iter_spans(_EMAIL, text)),
    ("phone", _phones),
)
_PRIORITY = {kind: i for i, (kind, _) in enumerate(_DETECTORS)} | {"custom": len(_DETECTORS)}


def _merge(raw: list[tuple[int, int, str]]) -> tuple[DlpFinding, ...]:
    """Union overlapping spans; the merged span keeps the kind of its longest part."""
    merged: list[DlpFinding] = []
    best: tuple[int, int] = (0, 0)
    for start, end, kind in sorted(raw):
        rank = (end - start, -_PRIORITY[kind])
        if merged and start < merged[-1].end:
            last = merged[-1]
            if rank > best:
                best = rank
            else:
                kind = last.kind
            merged[-1] = DlpFinding(kind, last.start, max(last.end, end))
        else:
            best = rank
            merged.append(DlpFinding(kind, start, end))
    return tuple(merged)


def scan(text: str, *, mode: DlpMode, custom_patterns: Sequence[str] = ()) -> DlpResult:
    """Find sensitive spans in text and apply the tenant's mode to them.

    Invalid custom patterns raise ValueError; validate them with compile_custom when the
    tenant configures them so a scan never does.
    """
    if mode == DlpMode.OFF:
        return DlpResult(text=text, findings=(), blocked=False)
    raw = [(s, e, kind) for kind, detect in _DETECTORS for s, e in detect(text)]
    if custom_patterns:
        compiled = _compile_custom_cached(tuple(custom_patterns))
        raw.extend((s, e, "custom") for s, e in _custom(text, compiled))
    findings = _merge(raw)
    if mode == DlpMode.BLOCK:
        return DlpResult(text=text, findings=findings, blocked=bool(findings))
    parts: list[str] = []
    cursor = 0
    for f in findings:
        parts.append(text[cursor : f.start])
        parts.append(f"[REDACTED:{f.kind}]")
        cursor = f.end
    parts.append(text[cursor:])
    return DlpResult(text="".join(parts), findings=findings, blocked=False)
