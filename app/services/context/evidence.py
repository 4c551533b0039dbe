"""The context loader's question path: raw events ranked by relevance, recency and the time
the question names, and long texts cut down to the passages that answer it.

Without a question the loader never comes here (its events stay newest first).
"""

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import CompoundSelect, Select, bindparam, func, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from app.services.context import passages, scope_params, time_phrases
from app.services.records import Scope
from app.services.search import analysis
from app.storage.models import events_table as ev
from app.storage.search import fulltext, spec
from app.storage.types import UTCDateTime
from app.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class EventWeights:
    """score = relevance · (1 + recency·0.5^(age_days/half_life)) · (1 + window if in it)."""

    recency: float
    half_life_days: float
    window: float


# Tuned by bench/context_eval.py on the train split (docs/context.md).
EVENT_WEIGHTS = EventWeights(recency=1.0, half_life_days=90.0, window=4.0)
# Up to this many uncompressed events in the scopes (the usual case once the compactor
# runs) are scored from their own text; more, and the full-text index finds them.
SCAN_MAX = 500
# The bounds of the index's work for one question: the words ranked one by one (each is a
# query), the newest matches of each that count, the uncompressed events counted.
WORDS_MAX = 12
WORD_MATCHES_MAX = 1000
COUNT_MAX = 20_000
# A text longer than this is shown as its passages that answer the question.
PASSAGES_OVER_TOKENS = 96
# The most of a section's budget one item's passages may take, so several items fit.
ITEM_SHARE = 0.2
# The most an event's passages take: a turn of a conversation answers with a sentence or
# two, where a summary entry folds many.
EVENT_PASSAGES_TOKENS = 160


@dataclass(frozen=True, slots=True)
class Question:
    """What the loader looks for: the words (without the time phrase), and the time."""

    text: str  # the question without its time phrase: the words searched for
    words: list[str]
    stems: list[str]
    window: time_phrases.Window | None
    # Any word starting with one of `stems` (longest first): the group is the stem.
    pattern: re.Pattern[str]


def question(query: str, now: datetime) -> Question:
    window = time_phrases.window(query, now)
    text = time_phrases.without(query, window)
    words = analysis.terms(text) or analysis.words(query, "query")
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
    now: datetime,
    weights: EventWeights | None = None,
    kinds: scope_params.Kinds = scope_params.ALL_KINDS,
) -> list[int]:
    """Seqs of the uncompressed events matching the question, best first, re-scored with
    recency and the question's window; the caller adds the unmatched after.

    Relevance is bm25 among the scopes' uncompressed events: the rarity (idf) of the
    question's words each event holds, how often it holds them, against its length. Up to
    SCAN_MAX of them are read and scored from their text; more, and the full-text index
    says which events hold each word (each counted once).
    """
    if not scopes:
        return []
    # One query for all the scopes: a round trip to the database costs more than the
    # scan of a scope's few hundred rows.
    shape = scope_params.shape_of(scopes)
    values = scope_params.values(scopes) | kinds.values()
    counted = values | {"count_limit": COUNT_MAX + 1}
    n, lowest = (await conn.execute(_count_statement(shape, kinds.shape), counted)).one()
    if n <= SCAN_MAX:
        rows = await conn.execute(_texts_statement(shape, kinds.shape), values)
        scored = _scanned(list(rows), q)
    else:
        # Past COUNT_MAX the lowest seq counted is not the scopes' lowest: no bound.
        bound = lowest if n <= COUNT_MAX else None
        scored = await _indexed(conn, scopes, q, min(n, COUNT_MAX), bound, kinds)
    w = weights or EVENT_WEIGHTS
    scored.sort(key=lambda f: (-_score(f, q, w, now), -f.occurred_at.timestamp(), -f.seq))
    return [f.seq for f in scored]


def _uncompressed(
    shape: tuple[bool, ...], kinds: tuple[bool, bool], *columns: Any
) -> CompoundSelect[Any]:
    # A scope per arm: SQLite answers an OR of scopes with a row set built from both,
    # which made the count ten times slower than the index range of each.
    arms = [
        select(*columns).where(
            *scope_params.in_scope(ev, i, ref_is_none),
            ev.c.compressed_at.is_(None),
            *scope_params.of_kinds(ev, kinds),
        )
        for i, ref_is_none in enumerate(shape)
    ]
    return union_all(*arms)


@cache
def _count_statement(shape: tuple[bool, ...], kinds: tuple[bool, bool]) -> Select[int, Any]:
    """The scopes' uncompressed events counted from their index alone, at most
    `:count_limit` of them (a big scope's texts are never read for nothing), and their
    lowest seq."""
    first = _uncompressed(shape, kinds, ev.c.seq).limit(bindparam("count_limit")).subquery()
    return select(func.count(), func.min(first.c.seq))


@cache
def _texts_statement(shape: tuple[bool, ...], kinds: tuple[bool, bool]) -> CompoundSelect[Any]:
    columns = (ev.c.seq, ev.c.occurred_at, ev.c.scope, ev.c.scope_ref, ev.c.kind, ev.c.body)
    return _uncompressed(shape, kinds, *columns)


# bm25's usual constants: k1 bounds what repeating a word adds, b how much a text's
# length counts against it (a long assistant answer holds many words by its length alone).
K1 = 1.2
B = 0.75
# What an event's neighbours' relevance adds to its own; of how many of the best events
# found through the index the neighbours are read, and how far apart in the log they may be.
NEIGHBOUR_WEIGHT = 0.5
NEIGHBOURS_OF = 50
# Of how many of the events found through the index the lengths are read.
LENGTHS_OF = 200
NEIGHBOUR_SPAN = 4


@dataclass(frozen=True, slots=True)
class _Held:
    row: Any
    counts: dict[str, int]  # each question stem it holds, and how often (1 from the index)
    length: int  # characters of its text


def _bm25(held: Sequence[_Held], n: int, avg_length: float) -> dict[int, float]:
    """Each item's bm25 by seq, among `n` events whose texts average `avg_length`
    characters."""
    df = Counter(s for h in held for s in h.counts)
    idf = {s: math.log(1 + (n - d + 0.5) / (d + 0.5)) for s, d in df.items()}
    avg = avg_length or 1.0
    scores: dict[int, float] = {}
    for h in held:
        norm = K1 * (1 - B + B * h.length / avg)
        scores[h.row.seq] = sum(idf[s] * tf * (K1 + 1) / (tf + norm) for s, tf in h.counts.items())
    return scores


def _with_neighbours(
    rows: Sequence[Any], scores: dict[int, float], neighbours: dict[int, tuple[int, ...]]
) -> list[_Found]:
    """Each row's own score plus NEIGHBOUR_WEIGHT of its neighbours' (in a conversation the
    turn that answers often follows the one that holds the question's words), the best 1;
    rows scoring 0 left out."""
    found: list[tuple[Any, float]] = []
    for r in rows:
        x = scores.get(r.seq, 0.0)
        x += NEIGHBOUR_WEIGHT * sum(scores.get(m, 0.0) for m in neighbours.get(r.seq, ()))
        if x > 0:
            found.append((r, x))
    best = max((x for _, x in found), default=0.0) or 1.0
    return [_Found(r.seq, r.occurred_at, x / best) for r, x in found]


def _scanned(rows: Sequence[Any], q: Question) -> list[_Found]:
    """The events among `rows` holding a question word or next to one that does, scored
    among them."""
    held: list[_Held] = []
    total = 0
    for r in rows:
        text = f"{r.kind} {r.body}"
        total += len(text)
        # Substring tests first, then one regex pass (both in C) on the texts that pass.
        low = text.lower()
        if any(s in low for s in q.stems):
            counts = Counter(m.lower() for m in q.pattern.findall(text))
            if counts:
                held.append(_Held(r, counts, len(text)))
    scores = _bm25(held, len(rows), total / max(len(rows), 1))
    # Neighbours: the events just before and after in the same scope, in the log's order.
    return _with_neighbours(rows, scores, _adjacent(rows, lambda a, b: True))


async def _indexed(
    conn: AsyncConnection,
    scopes: Sequence[tuple[Scope, str | None]],
    q: Question,
    n: int,
    from_seq: int | None,
    kinds: scope_params.Kinds,
) -> list[_Found]:
    """The events holding each question word, one index query per word (the newest
    WORD_MATCHES_MAX of them, and as many inside the question's window), scored as
    `_scanned` scores: never bm25 of the index, whose statistics cover the whole tenant
    and cost a walk of every row holding each word."""
    target = spec.Target.of(conn)
    shape = scope_params.shape_of(scopes)
    bounded = from_seq is not None
    stmts = [_word_statement(target.dialect, shape, kinds.shape, bounded, windowed=False)]
    bounds: dict[str, Any] = kinds.values()
    if from_seq is not None:
        bounds["from_seq"] = from_seq
    if q.window is not None:
        stmts.append(_word_statement(target.dialect, shape, kinds.shape, bounded, windowed=True))
        bounds |= {"start": q.window.start, "end": q.window.end}
    words: dict[str, str] = {}  # a word per stem: "contact" and "contacted" are one query
    for word in q.words[:WORDS_MAX]:
        words.setdefault(passages.stem(word), word)
    held: dict[int, _Held] = {}
    for stem, word in words.items():
        found = spec.Search([word], prefix=False, any_of=_in_scopes(scopes))
        values = fulltext.any_of_params(target, ev, found) | bounds
        for stmt in stmts:
            for r in await conn.execute(stmt, values):
                if r.seq not in held:
                    held[r.seq] = _Held(r, {}, 0)
                held[r.seq].counts[stem] = 1
    # The index says which events hold a word, not how often. Their lengths are read for
    # the LENGTHS_OF best by the words' rarity alone (a text's length costs a read of it:
    # for every match that was most of a question's time at a million events); the others
    # count as of the average length.
    rarity = _bm25(list(held.values()), n, 0.0)
    first = sorted(rarity, key=rarity.__getitem__, reverse=True)[:LENGTHS_OF]
    length_of: dict[int, int] = {}
    if first:
        length_of = dict(list(await conn.execute(_lengths_statement(), {"seqs": first})))
    avg = sum(length_of.values()) / max(len(length_of), 1)
    sized = [_Held(h.row, h.counts, length_of.get(s, round(avg))) for s, h in held.items()]
    scores = _bm25(sized, n, avg)
    # Neighbours: the events appended just before and after in the same scope, of the best
    # NEIGHBOURS_OF found: their seqs within NEIGHBOUR_SPAN either side are read in one
    # query (other scopes' appends may come between), the uncompressed ones in the scopes.
    best = sorted(scores, key=scores.__getitem__, reverse=True)[:NEIGHBOURS_OF]
    spanned = set(best)
    rows = {seq: h.row for seq, h in held.items()}
    span = range(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1)
    wanted = sorted({s + d for s in best for d in span} - rows.keys())
    if wanted:
        around = _seqs_statement(shape, kinds.shape)
        values = scope_params.values(scopes) | kinds.values() | {"seqs": wanted}
        rows |= {r.seq: r for r in await conn.execute(around, values)}
    candidates = list(rows.values())

    def spanned_pair(a: Any, b: Any) -> bool:
        # One of the two had its span read whole, so nothing of the scope lies between.
        return (a.seq in spanned or b.seq in spanned) and b.seq - a.seq <= NEIGHBOUR_SPAN

    return _with_neighbours(candidates, scores, _adjacent(candidates, spanned_pair))


def _adjacent(rows: Sequence[Any], keep: Callable[[Any, Any], bool]) -> dict[int, tuple[int, ...]]:
    """Each row's seq -> the seqs of the rows just before and after it in its scope (by seq),
    for the pairs `keep` accepts."""
    neighbours: dict[int, tuple[int, ...]] = {}
    in_order = sorted(rows, key=lambda r: (r.scope, r.scope_ref or "", r.seq))
    for a, b in itertools.pairwise(in_order):
        if (a.scope, a.scope_ref) == (b.scope, b.scope_ref) and keep(a, b):
            neighbours[a.seq] = (*neighbours.get(a.seq, ()), b.seq)
            neighbours[b.seq] = (*neighbours.get(b.seq, ()), a.seq)
    return neighbours


@cache
def _lengths_statement() -> Select[Any]:
    length = func.length(ev.c.kind) + func.length(ev.c.body) + 1
    return select(ev.c.seq, length).where(ev.c.seq.in_(bindparam("seqs", expanding=True)))


@cache
def _seqs_statement(shape: tuple[bool, ...], kinds: tuple[bool, bool]) -> CompoundSelect[Any]:
    """The uncompressed events among `:seqs` in the scopes of `shape`."""
    columns = (ev.c.seq, ev.c.occurred_at, ev.c.scope, ev.c.scope_ref)
    arms = [
        select(*columns).where(
            ev.c.seq.in_(bindparam("seqs", expanding=True)),
            *scope_params.in_scope(ev, i, ref_is_none),
            ev.c.compressed_at.is_(None),
            *scope_params.of_kinds(ev, kinds),
        )
        for i, ref_is_none in enumerate(shape)
    ]
    return union_all(*arms)


@cache
def _word_statement(
    dialect: str,
    shape: tuple[bool, ...],
    kinds: tuple[bool, bool],
    bounded: bool,
    *,
    windowed: bool,
) -> Select[Any]:
    """One word's newest WORD_MATCHES_MAX uncompressed events in the scopes of `shape`
    (from `:from_seq` on when `bounded`; inside `:start`-`:end` when `windowed`)."""
    columns = [ev.c.occurred_at, ev.c.scope, ev.c.scope_ref]
    stmt = fulltext.any_of_statement(dialect, ev, shape, columns, ranked=False)
    stmt = stmt.where(ev.c.compressed_at.is_(None), *scope_params.of_kinds(ev, kinds))
    if bounded:
        stmt = stmt.where(fulltext.from_seq_condition(dialect))
    if windowed:
        start = bindparam("start", type_=UTCDateTime)
        end = bindparam("end", type_=UTCDateTime)
        stmt = stmt.where(ev.c.occurred_at >= start, ev.c.occurred_at < end)
    newest = fulltext.events_newest_first(spec.Target(dialect))
    return stmt.order_by(newest).limit(WORD_MATCHES_MAX)


def words_held(text: str, q: Question) -> frozenset[str]:
    """The question's stems `text` holds."""
    return frozenset(m.lower() for m in q.pattern.findall(text))


def same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two texts holding these question stems speak of the same thing: they share
    two of them, or the one a text holds alone."""
    shared = len(a & b)
    return shared >= 2 or (shared == 1 and (len(a) == 1 or len(b) == 1))


def passage_text(
    text: str, q: Question, room: int, *, neighbours: bool = True
) -> tuple[str, int] | None:
    """`text` as the passages that answer `q` within `room` tokens, and how many of its
    lines or sentences were left out; None when it is short or nothing in it matches.
    `neighbours`: the units next to those holding the words count too (passages.choose)."""
    if estimate_tokens(text) <= min(PASSAGES_OVER_TOKENS, room):
        return None
    found = passages.units(text)
    choice = passages.choose(found, q.pattern, q.window, room, neighbours=neighbours)
    if not choice.shown:
        return None
    return passages.render(found, choice), choice.total - len(choice.shown)
