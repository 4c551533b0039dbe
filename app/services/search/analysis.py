"""Natural-language questions to the words a full-text search looks for.

How each storage backend searches for them (FTS5 MATCH, or a PostgreSQL tsquery) is in
app/storage/search/fulltext.py; this is the policy both share: which words count.
"""

import bisect
import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence

import snowballstemmer  # type: ignore[import-untyped]

from app.errors import InvalidInput

# A stop-word list small enough to read. Written out rather than pulled from a package:
# it is policy (which words never decide the ranking), and it must not change under us.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves tell know say said anything something thing things get got
    please us let lets did does don t s ve ll re d m
    """.split()
)

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 64


def terms(text: str) -> list[str]:
    """The words of a question that should decide the ranking, in order, deduplicated.

    Stop words are dropped unless nothing else is left ("who is it?" still searches).
    """
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if w.replace("_", "")]
    meaningful = [w for w in words if w not in STOP_WORDS]
    return list(dict.fromkeys(meaningful or words))[:MAX_TERMS]


def words(text: str, field: str) -> list[str]:
    """The question's searchable words; none (only punctuation, say) is an error naming
    `field`."""
    found = terms(text)
    if not found:
        raise InvalidInput([field], f"{field} has no searchable words (letters or digits)")
    return found


# ---------------------------------------------------------------- scores a client can use
# A hit's score is the share of the search's words it contains (docs/rest.md, "Scores"):
# matched as the full-text index matches them, so it is the same on both backends.

MIN_PREFIX_LEN = 3  # as app/storage/search/fulltext.py: a word also matches as a prefix from 3
# Porter's stemmer, as SQLite FTS5's `porter` tokenizer (PostgreSQL's english config is its
# Snowball successor: the two agree on all but rare words). A library, not hand-written.
_STEMMER = snowballstemmer.stemmer("porter")


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    # Pure Python and the same few words again and again (a page's, a tenant's): kept.
    return str(_STEMMER.stemWord(word))


def _folded(text: str) -> str:
    """Lowercase without diacritics, as the index reads text (remove_diacritics 2)."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def matched_terms(words: Sequence[str], texts: Iterable[str]) -> list[str]:
    """Which of the search's `words` (as `words()` gives them) occur in `texts`: the same
    word, a longer word it begins (from MIN_PREFIX_LEN characters), or the same stem."""
    if not words:
        return []
    text = _folded(" ".join(texts))
    found = set(_WORD.findall(text))
    ordered: list[str] | None = None  # sorted once, if a word needs a prefix look-up
    matched = []
    for word in words:
        w = _folded(word)
        if w in found:
            matched.append(word)
            continue
        stem = _stem(w)
        # A word's stem begins like it (bar a final y/i): only the text's words that begin
        # like the stem are looked at, found by bisection (no work per word of the text).
        head = stem[: max(len(stem) - 1, 1)]
        if head not in text:  # no word of the text begins with it (a C substring scan)
            continue
        if ordered is None:
            ordered = sorted(found)
        candidates = _beginning(ordered, head)
        if any(
            (len(w) >= MIN_PREFIX_LEN and f.startswith(w)) or _stem(f) == stem for f in candidates
        ):
            matched.append(word)
    return matched


def _beginning(ordered: list[str], head: str) -> Iterator[str]:
    """The words of the sorted list `ordered` that begin with `head`."""
    for i in range(bisect.bisect_left(ordered, head), len(ordered)):
        if not ordered[i].startswith(head):
            return
        yield ordered[i]


def score(words: Sequence[str], matched: Sequence[str]) -> float:
    """The share of the search's words a hit contains, 0 to 1 (1: every word)."""
    return len(matched) / len(words) if words else 0.0
