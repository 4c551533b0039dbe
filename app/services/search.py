"""Natural-language questions to the words a full-text search looks for.

How each storage backend searches for them (FTS5 MATCH, or a PostgreSQL tsquery) is in
app/storage/fulltext.py; this is the policy both share: which words count.
"""

import re

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
