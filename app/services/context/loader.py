"""The context loader: one scope's best memory, packed as Markdown into a token budget.

Entries with a query: score = bm25 · (1 + 2·(importance−1)/4 + 5·0.5^(age_days/365)),
then the unmatched; without a query: importance, then recency. Events: uncompressed only,
newest first; with a query, the matching ones first and long texts as the passages that
answer (app/services/context/evidence.py). Weights tuned by bench/tune_context.py and
bench/context_eval.py; budget rules in docs/context.md.
"""

import dataclasses
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, Generic, TypeVar

from pydantic import with_config
from sqlalchemy import Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import InvalidInput
from app.services import entry_rows, validation
from app.services.context import evidence, ranking, scope_params
from app.services.context.markdown import NEWER, cut_to_fit, render_entry, render_event
from app.services.context.ranking import WEIGHTS, Candidate, by_importance, rank
from app.services.events import COLUMNS as EVENT_COLUMNS
from app.services.events import to_event
from app.services.records import RECORD_JSON, Entry, Event, Scope
from app.services.search import analysis, page_cache
from app.storage.models import entries_table as en
from app.storage.models import events_table as ev
from app.storage.search import fulltext, spec
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction
from app.storage.types import utcnow
from app.tokens import estimate_tokens

MIN_TOKENS = 64  # room for a section header and one item cut down to its marker
MAX_TOKENS = 32_000
ENTRIES_SHARE = 0.7  # entries get up to 70% first; whatever either side leaves flows over
POOL = 200  # bm25 candidates re-scored in Python (more when the budget could hold more)
# No rendered item (title/kind line, id, date) is smaller than this, so ranking
# budget // MIN_ITEM_TOKENS + 1 candidates always ranks more than can be placed: a full
# list then means "something was left out" without counting the rest.
MIN_ITEM_TOKENS = 16
# Items that do not fit are passed over until this many were: each costs its rendering
# (its passages found), and what is left of the budget by then is small.
SKIPPED_MAX = 8
# The most candidates kept in the search cache for one question, so that one entry stays
# small (docs/context.md has its size); a maxTokens near the limit asks for more, which
# are found again each time rather than kept.
KEEP_MAX = 512
# Texts are read a page at a time in rank order, the first page sized for items of
# about this many tokens, so a call reads the few items that fit, not every candidate.
TYPICAL_ITEM_TOKENS = 64
ENTRIES_HEADER = "## Memory"
EVENTS_HEADER = "## Recent events"
MATCHED_EVENTS_HEADER = (
    "## Events on the question, newest first (newer: said after an item below on the same thing)"
)
OTHER_EVENTS_HEADER = "## Other recent events"
# What the mark of a newer item costs, held for it while packing so the marks added
# after never take the section over its budget.
NOTE_TOKENS = estimate_tokens(NEWER)
# The most the headers of a question's events take, held for them while packing.
HEADERS_ROOM = (
    f"{MATCHED_EVENTS_HEADER} (occurred 2000-01-01 to 2000-01-01 first)\n\n{OTHER_EVENTS_HEADER}\n"
)

T = TypeVar("T", Entry, Event)


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class MemoryContextResult:
    """What the context loader hands an agent session."""

    markdown: str
    """ready to paste into a prompt"""
    tokens: int  # estimate_tokens(markdown), never above the budget asked for
    """estimated tokens of markdown"""
    entries: list[Entry]
    """with `query`, each carries its score and matchedTerms for it"""
    events: list[Event]
    """recent events not yet folded into a summary"""
    truncated: bool  # something in the scope did not fit (or was cut)
    """something relevant was left out to stay in budget"""
    # With a query: each entry's id → (search.score, search.matched_terms) for that query.
    matches: dict[str, tuple[float, list[str]]] | None = None


def scopes_of(
    scope: Scope, scope_ref: str | None, institutional: bool
) -> list[tuple[Scope, str | None]]:
    pairs: list[tuple[Scope, str | None]] = [(scope, scope_ref)]
    if institutional and scope is not Scope.INSTITUTIONAL:
        pairs.append((Scope.INSTITUTIONAL, None))
    return pairs


# ------------------------------------------------------------------------ candidates

_KEY_COLUMNS = [en.c.importance, en.c.updated_at]


@cache
def _top_entries_statement(ref_is_none: bool) -> Select[Any]:
    return (
        select(en.c.seq, *_KEY_COLUMNS)
        .where(*scope_params.in_scope(en, 0, ref_is_none))
        .order_by(en.c.importance.desc(), en.c.updated_at.desc(), en.c.seq.desc())
        .limit(scope_params.LIMIT)
    )


async def _top_entries(
    conn: AsyncConnection, scopes: list[tuple[Scope, str | None]], limit: int
) -> list[Candidate]:
    # One query per scope, merged here: each sorts only its own scope's rows.
    found: list[Candidate] = []
    for scope, ref in scopes:
        stmt = _top_entries_statement(ref is None)
        values = scope_params.values([(scope, ref)]) | {"limit": limit}
        found.extend(
            Candidate(r.seq, r.importance, r.updated_at, 0.0)
            for r in await conn.execute(stmt, values)
        )
    return sorted(found, key=by_importance)[:limit]


async def candidates(
    conn: AsyncConnection,
    *,
    scopes: list[tuple[Scope, str | None]],
    query: str | None,
    limit: int,
) -> list[Candidate]:
    """The entries worth ranking: the best `max(POOL, limit)` by bm25, then as many of the
    rest by importance and recency as could still be placed (relevance 0) to fill the budget.

    An entry outside the bm25 pool counts as unmatched. `limit` exceeds what the budget
    can hold, so a full pool leaves nothing for the rest to fill.
    """
    if query is None:
        return await _top_entries(conn, scopes, limit)
    found = spec.Search(
        analysis.words(query, "query"),
        # No prefix terms: stemming already joins word forms, and bm25 would count the
        # documents of every word a prefix expands to (docs/context.md, "Tuning").
        prefix=False,
        any_of=[(s.value, r) for s, r in scopes],
    )
    target = spec.Target.of(conn)
    stmt = _matching_statement(target.dialect, scope_params.shape_of(scopes))
    page = {"page_offset": 0, "page_limit": max(POOL, limit)}
    values = fulltext.any_of_params(target, en, found) | page
    rows = list(await conn.execute(stmt, values))
    # The rank is better when lower (FTS5's bm25 is negative; PostgreSQL's ts_rank is
    # negated to match); the best match of this query scores 1.
    best = max((-r.rank for r in rows), default=0.0) or 1.0
    pool = {r.seq: Candidate(r.seq, r.importance, r.updated_at, -r.rank / best) for r in rows}
    if len(pool) < limit:
        for c in await _top_entries(conn, scopes, limit):
            pool.setdefault(c.seq, c)
    return list(pool.values())


@cache
def _matching_statement(dialect: str, shape: tuple[bool, ...]) -> Select[Any]:
    """The best `:page_limit` entries by bm25 in the scopes of `shape`, built once."""
    return fulltext.best_entries_any_of(dialect, shape, _KEY_COLUMNS)


async def _kept_candidates(
    db: TenantDb,
    conn: AsyncConnection,
    *,
    scopes: list[tuple[Scope, str | None]],
    query: str | None,
    limit: int,
) -> list[Candidate]:
    """`candidates(...)` with a query, from the search cache (app/services/search/page_cache.py)
    while the tenant's entries are unchanged since they were found: finding them costs
    FTS5 1-10 ms (each word's document count over the whole tenant, docs/context.md), and
    agents ask their sessions' opening questions again and again. What is kept is what
    ranking needs of each entry (no text), so ranking by recency still uses the time of
    this call. The revision is the first read of this call's read transaction, so on
    SQLite the entries read after it are of the very same snapshot."""
    cache = db.shared.get(page_cache.KEY)
    if query is None:
        return await candidates(conn, scopes=scopes, query=query, limit=limit)
    if not isinstance(cache, page_cache.SearchCache):
        return await _fused(db, conn, scopes, query, limit)
    revision = (await conn.execute(page_cache.REVISION)).scalar_one_or_none()
    if revision is None:  # no revision row (removed by hand): nothing can be kept
        return await _fused(db, conn, scopes, query, limit)
    key = (
        "context",
        db.tenant_id,
        tuple((s.value, r) for s, r in scopes),
        tuple(analysis.words(query, "query")),
        limit,
    )
    found = cache.get_value(key, revision)
    if found is None:
        found = tuple(await _fused(db, conn, scopes, query, limit))
        if len(found) <= KEEP_MAX:
            cache.put_value(key, revision, found)
    return list(found)


async def _fused(
    db: TenantDb,
    conn: AsyncConnection,
    scopes: list[tuple[Scope, str | None]],
    query: str,
    limit: int,
) -> list[Candidate]:
    """`candidates(...)` with their relevance fused with meaning (docs/search.md) when the
    tenant's entries are embedded; the nearest entries the keywords missed join the pool."""
    found = await candidates(conn, scopes=scopes, query=query, limit=limit)
    pool = [(c.seq, c.relevance) for c in found if c.relevance > 0]
    fused = await ranking.fused_relevance(
        db, conn, scopes=scopes, query=query, keyword=pool, depth=max(POOL, limit)
    )
    if fused is None:
        return found
    by_seq = {c.seq: c for c in found}
    missing = [seq for seq in fused if seq not in by_seq]
    if missing:
        stmt = select(en.c.seq, *_KEY_COLUMNS).where(en.c.seq.in_(missing))
        for r in await conn.execute(stmt):
            by_seq[r.seq] = Candidate(r.seq, r.importance, r.updated_at, 0.0)
    return [dataclasses.replace(c, relevance=fused.get(c.seq, 0.0)) for c in by_seq.values()]


async def _recent_events(
    conn: AsyncConnection,
    scopes: list[tuple[Scope, str | None]],
    limit: int,
    kinds: scope_params.Kinds,
) -> list[int]:
    """Seqs of the newest uncompressed events, newest first (read from the index alone)."""
    found: list[tuple[datetime, int]] = []
    for scope, ref in scopes:
        values = scope_params.values([(scope, ref)]) | {"limit": limit} | kinds.values()
        rows = await conn.execute(_recent_events_statement(ref is None, kinds.shape), values)
        found.extend((r.occurred_at, r.seq) for r in rows)
    found.sort(reverse=True)
    return [seq for _, seq in found[:limit]]


@cache
def _recent_events_statement(ref_is_none: bool, kinds: tuple[bool, bool]) -> Select[Any]:
    return (
        select(ev.c.occurred_at, ev.c.seq)
        .where(
            *scope_params.in_scope(ev, 0, ref_is_none),
            ev.c.compressed_at.is_(None),
            *scope_params.of_kinds(ev, kinds),
        )
        # seq, not id, breaks ties: the partial index of uncompressed events ends in it
        # (the rowid), so SQLite walks it backwards and stops at the limit.
        .order_by(ev.c.occurred_at.desc(), ev.c.seq.desc())
        .limit(scope_params.LIMIT)
    )


class _Reader(Generic[T]):
    """Reads full rows by seq, in the order asked, remembering them (and each one's seq by
    its id) for a second pass."""

    def __init__(
        self, conn: AsyncConnection, table: Any, columns: Sequence[Any], to_item: Callable[[Any], T]
    ) -> None:
        self.conn: AsyncConnection = conn
        self.to_item: Callable[[Any], T] = to_item
        self.kept: dict[int, T] = {}
        self.seq_of: dict[str, int] = {}
        self.stmt = _rows_statement(table, tuple(columns))

    async def __call__(self, seqs: Sequence[int]) -> list[T]:
        missing = [s for s in seqs if s not in self.kept]
        if missing:
            for r in await self.conn.execute(self.stmt, {"seqs": missing}):
                item = self.kept[r.seq] = self.to_item(r)
                self.seq_of[item.id] = r.seq
        return [self.kept[s] for s in seqs]


@cache
def _rows_statement(table: Any, columns: tuple[Any, ...]) -> Select[Any]:
    # `columns` first: to_event/to_entry read them by position.
    return select(*columns, table.c.seq).where(table.c.seq.in_(bindparam("seqs", expanding=True)))


@dataclass(frozen=True, slots=True)
class _Section(Generic[T]):
    text: str
    tokens: int  # the sum of its pieces' estimates, never below estimate_tokens(text)
    items: list[T]  # shown, the last one possibly cut
    complete: bool  # every candidate shown in full
    cut: bool = False  # its one item is cut down to fit
    texts: tuple[str, ...] = ()  # each shown item as rendered, for a section laid out again


async def _pack(
    header: str,
    order: Sequence[int],
    read: Callable[[Sequence[int]], Awaitable[list[T]]],
    render: Callable[[T], str],
    budget: int,
    *,
    extra: Callable[[T], int] | None = None,
) -> _Section[T]:
    """Items in `order` under `header` while the budget lasts, read a page at a time: an
    item that does not fit is left out and the next ones tried (first fit), so one long
    item does not keep the shorter ones after it out."""
    if not order:
        return _Section("", 0, [], complete=True)
    head = f"{header}\n\n"
    pieces, used, shown = [head], estimate_tokens(head), list[T]()
    texts: list[str] = []
    complete = True
    first_over: tuple[T, str] | None = None
    page, start = budget // TYPICAL_ITEM_TOKENS + 1, 0
    skipped = 0
    while start < len(order) and skipped < SKIPPED_MAX and budget - used >= MIN_ITEM_TOKENS:
        for item in await read(order[start : start + page]):
            if budget - used < MIN_ITEM_TOKENS:  # this item and the rest are left out
                complete = False
                break
            text = render(item)
            piece = f"{text}\n\n"
            cost = estimate_tokens(piece) + (extra(item) if extra else 0)
            if used + cost <= budget:
                pieces.append(piece)
                texts.append(text)
                used += cost
                shown.append(item)
                continue
            complete = False
            if first_over is None:
                first_over = (item, text)
            skipped += 1
            if skipped >= SKIPPED_MAX:
                break
        # The next page: no more than could still go in, and be passed over, of what is left.
        start, page = start + page, min(page * 2, (budget - used) // MIN_ITEM_TOKENS + SKIPPED_MAX)
    if not shown and first_over is not None:
        # Nothing fits whole: the first item is cut rather than dropped, so an agent learns
        # it exists, and its id, from the marker.
        item, text = first_over
        cut = cut_to_fit(text, item.id, budget - used, first=True)
        if cut is None:
            return _Section("", 0, [], complete=False)
        tokens = used + estimate_tokens(cut)
        return _Section(head + cut, tokens, [item], complete=False, cut=True)
    if not shown:  # no room for even one item: no header alone either
        return _Section("", 0, [], complete=False)
    complete = complete and start >= len(order)
    return _Section("".join(pieces), used, shown, complete, texts=tuple(texts))


def _newest_first(
    packed: _Section[Event],
    hits: set[int],
    seq_of: dict[str, int],
    q: evidence.Question,
) -> _Section[Event]:
    """The packed events laid out for a question: those on it newest first (a fact said
    again later reads in its latest form first; those in the time the question names before
    the others), each marked newer when an older one below speaks of the same words, then
    the other recent events."""
    window = q.window
    on = sorted(
        (e for e in packed.items if seq_of[e.id] in hits),
        # Those in the time the question names (if it names one) first.
        key=lambda e: (
            window is not None and window.holds(e.occurred_at),
            e.occurred_at,
            seq_of[e.id],
        ),
        reverse=True,
    )
    others = [e for e in packed.items if seq_of[e.id] not in hits]
    if packed.cut or not packed.items:
        # One item cut to fit, or none: its heading is the section's.
        header = MATCHED_EVENTS_HEADER if on else EVENTS_HEADER
        return dataclasses.replace(packed, text=packed.text.replace(HEADERS_ROOM, header, 1))
    text_of = dict(zip((e.id for e in packed.items), packed.texts, strict=True))
    words = {e.id: evidence.words_held(text_of[e.id], q) for e in on}
    pieces: list[str] = []
    if on:
        header = MATCHED_EVENTS_HEADER
        if q.window is not None:  # say how the question's time was read
            last = q.window.end - timedelta(days=1)
            header += f"; those of {q.window.start:%Y-%m-%d} to {last:%Y-%m-%d} first"
        pieces.append(f"{header}\n\n")
        for i, e in enumerate(on):
            text = text_of[e.id]
            if any(
                o.occurred_at < e.occurred_at and evidence.same_subject(words[e.id], words[o.id])
                for o in on[i + 1 :]
            ):
                # The mark ends the item's heading line.
                heading, rest = text.split("\n", 1)
                text = f"{heading}{NEWER}\n{rest}"
            pieces.append(text + "\n\n")
    if others:
        pieces.append(f"{OTHER_EVENTS_HEADER if on else EVENTS_HEADER}\n\n")
        pieces.extend(text_of[e.id] + "\n\n" for e in others)
    tokens = sum(estimate_tokens(p) for p in pieces)
    return _Section("".join(pieces), tokens, on + others, packed.complete)


# --------------------------------------------------------------------------- service


def _kinds(kinds: Sequence[str] | None, exclude_kinds: Sequence[str] | None) -> scope_params.Kinds:
    for values, field in ((kinds, "kinds"), (exclude_kinds, "excludeKinds")):
        validation.check_list_size(values, field)
        validation.check_filter_text(None, list(values or ()), field)
    return scope_params.Kinds(
        None if kinds is None else tuple(kinds), tuple(exclude_kinds) if exclude_kinds else None
    )


async def load_context(
    db: TenantDb,
    *,
    scope: Scope,
    scope_ref: str | None,
    query: str | None,
    max_tokens: int,
    include_institutional: bool,
    kinds: Sequence[str] | None = None,
    exclude_kinds: Sequence[str] | None = None,
    now: datetime | None = None,
) -> MemoryContextResult:
    """The best memory of one scope (and the institutional one) as Markdown, in budget;
    of the raw events, only those of `kinds` (when given) and none of `exclude_kinds`."""
    validation.check_scope(scope, scope_ref)
    event_kinds = _kinds(kinds, exclude_kinds)
    if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
        raise InvalidInput(
            ["maxTokens"], f"maxTokens must be {MIN_TOKENS} to {MAX_TOKENS}, got {max_tokens}"
        )
    validation.check_search(query, "query")
    if query is not None and not query.strip():
        query = None  # an agent passing "" means "no query", not an error
    scopes = scopes_of(scope, scope_ref, include_institutional)
    now = now or utcnow()
    q = None if query is None else evidence.question(query, now)
    room = math.floor(max_tokens * evidence.ITEM_SHARE)  # one item's passages at most

    def entry_text(e: Entry) -> str:
        return render_entry(e, q, room)

    def event_text(e: Event) -> str:
        return render_event(e, q, min(room, evidence.EVENT_PASSAGES_TOKENS))

    if q is not None:
        await ranking.prepare(db, q.text)
    async with read_transaction(db.engine) as conn:
        found = await _kept_candidates(
            db,
            conn,
            scopes=scopes,
            query=None if q is None else q.text,
            limit=max_tokens // MIN_ITEM_TOKENS + 1,
        )
        ranked = [c.seq for c in (rank(found, WEIGHTS, now) if query is not None else found)]
        read_entries = _Reader(conn, en, entry_rows.COLUMNS, entry_rows.to_entry)
        ent = await _pack(
            ENTRIES_HEADER,
            ranked,
            read_entries,
            entry_text,
            math.floor(max_tokens * ENTRIES_SHARE),
        )
        events_budget = max_tokens - ent.tokens
        limit = events_budget // MIN_ITEM_TOKENS + 1
        recent = await _recent_events(conn, scopes, limit, event_kinds)
        read_events = _Reader(conn, ev, EVENT_COLUMNS, to_event)
        if q is None:
            evs = await _pack(EVENTS_HEADER, recent, read_events, event_text, events_budget)
        else:
            # Matching events by relevance first, then the newest of the rest.
            matched = await evidence.ranked_events(conn, scopes, q, now, kinds=event_kinds)
            hits = set(matched)

            def note_room(e: Event) -> int:
                # Room for the mark the item may get once the section is newest first.
                return NOTE_TOKENS if read_events.seq_of[e.id] in hits else 0

            order = list(dict.fromkeys(matched + recent))
            packed = await _pack(
                HEADERS_ROOM, order, read_events, event_text, events_budget, extra=note_room
            )
            evs = _newest_first(packed, hits, read_events.seq_of, q)
        if not ent.complete and evs.tokens < events_budget:
            ent = await _pack(
                ENTRIES_HEADER, ranked, read_entries, entry_text, max_tokens - evs.tokens
            )

    markdown = ent.text + evs.text
    markdown = markdown.rstrip("\n") + "\n" if markdown else ""
    matches = None
    if query is not None:
        words = analysis.words(query, "query")
        terms = {
            e.id: analysis.matched_terms(words, [e.title, e.summary, *e.tags]) for e in ent.items
        }
        matches = {i: (analysis.score(words, m), m) for i, m in terms.items()}
    return MemoryContextResult(
        markdown=markdown,
        tokens=estimate_tokens(markdown),
        entries=ent.items,
        events=evs.items,
        truncated=not (ent.complete and evs.complete),
        matches=matches,
    )
