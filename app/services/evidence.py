"""The context loader's question path: raw events ranked by relevance, recency and the time
the question names, and long texts cut down to the passages that answer it.

Without a question the loader never comes here (its events stay newest first).
"""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.services import passages, search, temporal
from app.services.records import Scope
from app.storage import fulltext
from app.storage.models import events_table as ev
from app.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class EventWeights:
    """score = relevance · (1 + recency·0.5^(age_days/half_life)) · (1 + window if in it)."""

    recency: float
    half_life_days: float
    window: float


# Tuned by bench/context_eval.py on the train split (docs/context.md).
EVENT_WEIGHTS = EventWeights(recency=1.0, half_life_days=90.0, window=4.0)
EVENT_POOL = 200  # matching events ranked in Python (more when the budget could hold more)
# Up to this many uncompressed events in the scopes (the usual case once the compactor
# runs) are scored from their own text: the cost follows the scope's raw events, where the
# full-text index's follows how many events of the whole tenant hold the question's words.
SCAN_MAX = 500
# A text longer than this is shown as its passages that answer the question.
PASSAGES_OVER_TOKENS = 96
# The most of a section's budget one item's passages may take, so several items fit.
ITEM_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class Question:
    """What the loader looks for: the words (without the time phrase), and the time."""

    text: str  # the question without its time phrase: the words searched for
    words: list[str]
    stems: list[str]
    window: temporal.Window | None
    # Any word starting with one of `stems` (longest first): the group is the stem.
    pattern: re.Pattern[str]


def question(query: str, now: datetime) -> Question:
    window = temporal.window(query, now)
    text = temporal.without(query, window)
    words = search.terms(text) or search.words(query, "query")
    stems = list(dict.fromkeys(passages.stem(w) for w in words))
    return Question(text, words, stems, window, passages.pattern_of(stems))


@dataclass(frozen=True, slots=True)
class _Found:
    seq: int
    occurred_at: datetime
    relevance: float


def _score(f: _Found, q: Question, w: EventWeights, now: datetime) -> float:
    age_days = max((now - f.occurred_at).total_seconds(), 0.0) / 86_400
    score = f.relevance * (1 + w.recency * math.pow(0.5, age_days / w.half_life_days))
    if q.window is not None and q.window.holds(f.occurred_at):
        score *= 1 + w.window
    return score


def _in_scopes(scopes: Sequence[tuple[Scope, str | None]]) -> list[tuple[str, str | None]]:
    return [(s.value, r) for s, r in scopes]


async def ranked_events(
    conn: AsyncConnection,
    scopes: Sequence[tuple[Scope, str | None]],
    q: Question,
    limit: int,
    now: datetime,
    weights: EventWeights | None = None,
) -> list[int]:
    """Seqs of the uncompressed events matching the question, best first, re-scored with
    recency and the question's window; the caller adds the unmatched after.

    Up to SCAN_MAX uncompressed events in the scopes are scored from their text; more, and
    the full-text index finds the best `max(EVENT_POOL, limit)`, and as many again inside
    the question's window.
    """
    # One query for all the scopes: a round trip to the database costs more than the
    # scan of a scope's few hundred rows.
    in_scopes = [
        and_(ev.c.scope == scope.value, ev.c.scope_ref.is_(None))
        if ref is None
        else and_(ev.c.scope == scope.value, ev.c.scope_ref == ref)
        for scope, ref in scopes
    ]
    # The seqs first (the uncompressed events' index holds them), the texts only when few
    # enough to scan: a big scope's texts were read for nothing.
    uncompressed = (or_(*in_scopes), ev.c.compressed_at.is_(None))
    stmt = select(ev.c.seq).where(*uncompressed).limit(SCAN_MAX + 1)
    seqs: list[int] = [s for (s,) in await conn.execute(stmt)] if scopes else []
    if len(seqs) <= SCAN_MAX:
        texts = select(ev.c.seq, ev.c.occurred_at, ev.c.kind, ev.c.body)
        rows = list(await conn.execute(texts.where(ev.c.seq.in_(seqs)))) if seqs else []
        scored = _scanned(rows, q)
    else:
        scored = await _indexed(conn, scopes, q, max(EVENT_POOL, limit))
    w = weights or EVENT_WEIGHTS
    scored.sort(key=lambda f: (-_score(f, q, w, now), -f.occurred_at.timestamp(), -f.seq))
    return [f.seq for f in scored]


def _scanned(rows: Sequence[Any], q: Question) -> list[_Found]:
    """The events among `rows` holding a question word, relevance by the rarity (idf) of
    the words each holds among them: bm25 without its length and frequency terms."""
    held: list[tuple[Any, set[str]]] = []
    for r in rows:
        text = f"{r.kind} {r.body}"
        # Substring tests first, then one regex pass (both in C) on the texts that pass.
        low = text.lower()
        if any(s in low for s in q.stems):
            words = {m.lower() for m in q.pattern.findall(text)}
            if words:
                held.append((r, words))
    df = {s: sum(s in words for _, words in held) for s in q.stems}
    n = len(rows)
    idf = {s: math.log(1 + (n - d + 0.5) / (d + 0.5)) for s, d in df.items() if d}
    relevance = [(r, sum(idf[s] for s in words)) for r, words in held]
    best = max((x for _, x in relevance), default=0.0) or 1.0
    return [_Found(r.seq, r.occurred_at, x / best) for r, x in relevance]


async def _indexed(
    conn: AsyncConnection, scopes: Sequence[tuple[Scope, str | None]], q: Question, pool: int
) -> list[_Found]:
    found = fulltext.Search(q.words, prefix=False, any_of=_in_scopes(scopes))
    base = fulltext.events(fulltext.Target.of(conn), found, [ev.c.occurred_at]).where(
        ev.c.compressed_at.is_(None)
    )
    stmts = [base]
    if q.window is not None:
        stmts.append(
            base.where(ev.c.occurred_at >= q.window.start, ev.c.occurred_at < q.window.end)
        )
    rows: dict[int, Any] = {}
    for stmt in stmts:
        inner = stmt.subquery()
        page = select(inner).order_by(inner.c.rank, inner.c.seq).limit(pool)
        for r in await conn.execute(page):
            rows.setdefault(r.seq, r)
    best = max((-r.rank for r in rows.values()), default=0.0) or 1.0
    return [_Found(r.seq, r.occurred_at, -r.rank / best) for r in rows.values()]


def passage_text(text: str, q: Question, room: int) -> tuple[str, int] | None:
    """`text` as the passages that answer `q` within `room` tokens, and how many of its
    lines or sentences were left out; None when it is short or nothing in it matches."""
    if estimate_tokens(text) <= min(PASSAGES_OVER_TOKENS, room):
        return None
    found = passages.units(text)
    choice = passages.choose(found, q.pattern, q.window, room)
    if not choice.shown:
        return None
    return passages.render(found, choice), choice.total - len(choice.shown)
