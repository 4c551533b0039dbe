"""Full-text search behind one interface: natural-language questions to FTS5 MATCH queries.

Dialect-specific by design (the rest of the services are not): SQLite FTS5 with porter
stemming. Filters (scope, scopeRef, tags) are opaque tokens in the index's `filters`
column, so they narrow the MATCH itself rather than filtering its results afterwards.
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
MIN_PREFIX_LEN = 3

ENTRY_TEXT_COLUMNS = "{title summary tags}"
EVENT_TEXT_COLUMNS = "{body kind}"


def filter_token(marker: str, value: str) -> str:
    """One FTS token for a filter value; twin of the SQL in the tenant migration 0001.

    Hex keeps any value a single alphanumeric token; the trailing digit keeps the porter
    stemmer from touching it.
    """
    return f"{marker}{value.encode('utf-8').hex()}9"


def scope_token(scope: str, scope_ref: str | None = None, *, with_ref: bool) -> str:
    return filter_token("k", f"{scope}/{scope_ref or ''}" if with_ref else scope)


def tag_token(tag: str) -> str:
    return filter_token("t", tag)


def terms(text: str) -> list[str]:
    """The words of a question that should decide the ranking, in order, deduplicated.

    Stop words are dropped unless nothing else is left ("who is it?" still searches).
    """
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if w.replace("_", "")]
    meaningful = [w for w in words if w not in STOP_WORDS]
    return list(dict.fromkeys(meaningful or words))[:MAX_TERMS]


def text_query(text: str, columns: str, *, field: str = "search", prefix: bool = True) -> str:
    """An FTS5 expression matching any of the question's terms, stemmed or as a prefix.

    Every term is a quoted string, so no user input is ever read as FTS5 syntax
    (AND, NEAR, quotes, parentheses, column filters). bm25 adds up over the terms an
    entry matches: matching more of them ranks higher, none is required.
    """
    found = terms(text)
    if not found:
        raise InvalidInput([field], f"{field} has no searchable words (letters or digits)")
    alternatives: list[str] = []
    for term in found:
        quoted = '"' + term.replace('"', '""') + '"'
        alternatives.append(quoted)
        if prefix and len(term) >= MIN_PREFIX_LEN:
            alternatives.append(quoted + "*")
    return f"{columns} : ({' OR '.join(alternatives)})"


def filter_query(tokens: list[str]) -> str:
    return " AND ".join(f'filters : "{t}"' for t in tokens)


def any_filter_query(tokens: list[str]) -> str:
    """Rows carrying at least one of `tokens` (a scope, or the institutional scope)."""
    return "filters : (" + " OR ".join(f'"{t}"' for t in tokens) + ")"


def match_expression(
    text_expr: str | None, filter_tokens: list[str], *, any_of: list[str] | None = None
) -> str:
    """text AND every filter token AND (when given) at least one of `any_of`."""
    parts = (
        ([f"({text_expr})"] if text_expr else [])
        + ([filter_query(filter_tokens)] if filter_tokens else [])
        + ([any_filter_query(any_of)] if any_of else [])
    )
    assert parts, "a MATCH needs text or filters"
    return " AND ".join(parts)
