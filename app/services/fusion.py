"""Search by words and by meaning, fused: reciprocal rank fusion of the keyword ranking and
the dense ranking of the tenant's entry vectors, with an entity-aware dense side (a search
word that is a tag in the searched scope is not sent to the embedder; entries carrying it
get a small boost). Entries not embedded yet are found by their words alone."""

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.adapters.embedders import Embedder, QueryVectors, from_blobs
from app.services import cursors, search
from app.services.records import Entry, EntryFilter, Page, new_edge
from app.storage import fulltext, reads, vectors
from app.storage.lists import in_list
from app.storage.models import entries_table as en
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement

log = logging.getLogger(__name__)

# The fused search's settings in TenantDb.shared (made by app/deps.py).
KEY = "semantic_search"
ENTITY_WORDS_MAX = 8  # search words looked up as tags: each is one index probe
TAG_ANSWERS_MAX = 65536  # of those probes' answers kept per process
SUBSET_SHARE = 4  # a search's rows scored on their own when fewer than 1 in this many
CANDIDATES_PER_HIT = 4  # nearest entries checked against a search's other filters, per hit
# A tag named in the search adds this share of a first rank's fused score (tuned with k on
# the evaluation set's train split: docs/search.md).
TAG_BOOST_SHARE = 1.0

# (columns of memory_entries..., seq, rank) rows of the keyword ranking, best first.
KeywordRows = Callable[[TenantDb, EntryFilter, int, int], Awaitable[list[Any]]]


@dataclass
class Semantic:
    """What a fused search needs: the tenant's embedder (None: keywords only), its constants,
    and the process's caches of question vectors and tenants' vector matrices."""

    embedder_for: Callable[[str], Embedder | None]
    k: int = 5
    depth: int = 100
    max_vectors: int = 200_000
    tag_boost: float = TAG_BOOST_SHARE
    # Nearer than this, or no hit by meaning: without a floor a search by meaning always
    # finds something, however unrelated (docs/search.md).
    min_similarity: float = 0.15
    matrices: int = 4  # tenants whose vectors are kept in memory, least recent dropped
    # A matrix that took longer than this to read is refreshed in the background after a
    # change, at most once per `refresh_gap` times its read time: while the indexer or the
    # writers move the revision on, a big tenant's searches would otherwise each wait for a
    # whole new read.
    inline_refresh_seconds: float = 0.05
    refresh_gap: float = 4.0
    queries: QueryVectors = field(default_factory=QueryVectors)
    _cache: "OrderedDict[str, _Matrix]" = field(default_factory=OrderedDict)
    # (tenant, entries revision, scope, scopeRef, tag) -> whether an entry there carries it
    _tags: "OrderedDict[tuple[Any, ...], bool]" = field(default_factory=OrderedDict)
    # One read of a tenant's vectors at a time: concurrent searches after a change wait
    # for it rather than each holding a copy.
    _loading: asyncio.Lock = field(default_factory=asyncio.Lock)
    _refreshing: "dict[str, asyncio.Task[None]]" = field(default_factory=dict)


@dataclass(frozen=True)
class _Matrix:
    model: str
    revision: int
    seqs: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    # Rows sorted by scope and scopeRef (as codes), and where each scope and each pair
    # starts and ends: a search reads its scope's rows as one slice.
    scope_codes: dict[str, int]
    ref_codes: dict[str | None, int]
    scope_rows: dict[int, tuple[int, int]]
    pair_rows: dict[tuple[int, int], tuple[int, int]]
    read_seconds: float = 0.0
    read_at: float = 0.0  # time.monotonic() when the read ended


ANY_REF = object()  # in Where.scopes: any scopeRef of the scope


@dataclass(frozen=True)
class Where:
    """Which embedded entries a dense ranking may return: those in one of `scopes` ((scope,
    scopeRef) pairs, a None scope for any scope, ANY_REF for any scopeRef; none: every
    entry), filtered in memory, and passing `conds` on memory_entries, checked in the
    database on the nearest candidates only."""

    scopes: tuple[tuple[str | None, object], ...] = ()
    conds: tuple[Any, ...] = ()


def semantic_of(db: TenantDb) -> tuple[Semantic, Embedder] | None:
    sem = db.shared.get(KEY)
    if not isinstance(sem, Semantic):
        return None
    embedder = sem.embedder_for(db.tenant_id)
    return None if embedder is None else (sem, embedder)


def where_of(flt: EntryFilter, target: fulltext.Target) -> Where:
    """The search's filters (list_entries' own) as a dense ranking's Where."""
    scopes: tuple[tuple[str | None, object], ...] = ()
    if flt.scope is not None or flt.scope_ref is not None:
        scope = None if flt.scope is None else flt.scope.value
        scopes = ((scope, ANY_REF if flt.scope_ref is None else flt.scope_ref),)
    conds: list[Any] = []
    if flt.tags:
        scope = None if flt.scope is None else flt.scope.value
        conds.append(fulltext.entries_tagged(target, flt.tags, scope, flt.scope_ref))
    if flt.min_importance is not None and flt.min_importance > 1:
        conds.append(en.c.importance >= flt.min_importance)
    if flt.sources:
        conds.append(in_list(en.c.source, [s.value for s in flt.sources]))
    return Where(scopes, tuple(conds))


async def fused_page(
    db: TenantDb,
    flt: EntryFilter,
    *,
    first: int,
    after: str | None,
    keyword_rows: KeywordRows,
    to_entry: Callable[[Any], Entry],
    columns: Sequence[Any],
) -> Page[Entry] | None:
    """The fused page, or None when this search is keywords only (the tenant's switch, no
    embedder): the caller then searches by words as before."""
    found = semantic_of(db)
    if found is None or flt.keyword_only:
        return None
    sem, embedder = found
    assert flt.search is not None
    words = search.words(flt.search, "search")
    hwm, offset = cursors.decode_search("entries-search", after)
    state = await reads.index_rows(db, vectors.SEARCH_STATE, {})
    if not state or state[0][1]:  # the tenant's switch (or no such row: keywords)
        return None
    revision = int(state[0][0])
    matrix = await _matrix(db, sem, embedder.model, revision)
    if not len(matrix.seqs):
        return None  # nothing embedded yet: the keyword search, exactly
    if hwm is None:
        async with read_statement(db.engine) as conn:
            hwm = int((await conn.execute(select(func.coalesce(func.max(en.c.seq), 0)))).scalar())
    if offset >= sem.depth:
        return Page([], has_next_page=False)
    keyword = await keyword_rows(db, flt, hwm, sem.depth)
    dense, entity = await dense_ranking(db, sem, embedder, matrix, flt, hwm)
    rows = {int(r[len(columns)]): r for r in keyword}
    missing = [seq for seq, _ in dense if seq not in rows]
    if missing:
        async with read_statement(db.engine) as conn:
            stmt = select(*columns, en.c.seq).where(en.c.seq.in_(missing))
            rows.update({int(r[len(columns)]): r for r in await conn.execute(stmt)})
    entries = {seq: to_entry(r) for seq, r in rows.items()}
    similarity = dict(dense)
    ranked = fuse(
        [int(r[len(columns)]) for r in keyword], [seq for seq, _ in dense], k=sem.k,
        boosted={s for s, e in entries.items() if entity and entity & set(e.tags)},
        boost=sem.tag_boost,
    )  # fmt: skip
    ranked = [s for s in ranked if s in entries]  # an entry deleted meanwhile
    edges = []
    for i, seq in enumerate(ranked[offset : offset + first]):
        entry = entries[seq]
        matched = search.matched_terms(words, [entry.title, entry.summary, *entry.tags])
        cursor = cursors.encode("entries-search", [hwm, offset + i + 1])
        sim = similarity.get(seq)
        edges.append(
            new_edge(cursor, entry, search.score(words, matched), matched,
                     None if sim is None else round(sim, 4))
        )  # fmt: skip
    return Page(
        edges, has_next_page=len(ranked) > offset + first, stale=matrix.revision != revision
    )


async def dense_ranking(
    db: TenantDb,
    sem: Semantic,
    embedder: Embedder,
    matrix: "_Matrix",
    flt: EntryFilter,
    hwm: int,
) -> tuple[list[tuple[int, float]], set[str]]:
    """The dense side of `flt`'s search: (seq, similarity) nearest first, and the search's
    words that are tags in its scope (left out of the embedded text)."""
    assert flt.search is not None
    target = fulltext.Target.of_engine(db.engine)
    words = search.words(flt.search, "search")
    entity = await _entity_tags(db, sem, matrix.revision, target, words, flt)
    text = _dense_text(flt.search, entity)
    return await _dense(db, sem, embedder, matrix, where_of(flt, target), hwm, text), entity


async def current_matrix(db: TenantDb, sem: Semantic, model: str) -> "_Matrix":
    """The tenant's vectors by `model` now (the evaluation's entry point)."""
    state = await reads.index_rows(db, vectors.SEARCH_STATE, {})
    return await _matrix(db, sem, model, int(state[0][0]))


def fuse(
    keyword: Sequence[int],
    dense: Sequence[int],
    *,
    k: int,
    boosted: set[int],
    boost: float = TAG_BOOST_SHARE,
) -> list[int]:
    """Reciprocal rank fusion: each id scores 1/(k + rank) on each side it is on (ranks from
    1), plus `boost` times a first rank's score when `boosted`; best first, ties by the
    keyword rank, then the newer entry."""
    scores: dict[int, float] = {}
    for ranking in (keyword, dense):
        for rank, seq in enumerate(ranking, 1):
            scores[seq] = scores.get(seq, 0.0) + 1.0 / (k + rank)
    for seq in boosted:
        if seq in scores:
            scores[seq] += boost / (k + 1)
    at = {seq: i for i, seq in enumerate(keyword)}
    return sorted(scores, key=lambda s: (-scores[s], at.get(s, len(at)), -s))


async def _entity_tags(
    db: TenantDb,
    sem: Semantic,
    revision: int,
    target: fulltext.Target,
    words: Sequence[str],
    flt: EntryFilter,
) -> set[str]:
    """The search's words (as written, or capitalised) that are tags of an entry in the
    searched scope; each answer kept until the tenant's entries change."""
    scope = None if flt.scope is None else flt.scope.value
    found: set[str] = set()
    tags = [t for w in words[:ENTITY_WORDS_MAX] for t in dict.fromkeys([w, w.capitalize()])]
    unknown = []
    for tag in tags:
        known = sem._tags.get((db.tenant_id, revision, scope, flt.scope_ref, tag))
        if known is None:
            unknown.append(tag)
        elif known:
            found.add(tag)
    if unknown:
        async with read_statement(db.engine) as conn:
            for tag in unknown:
                cond = fulltext.entries_tagged(target, [tag], scope, flt.scope_ref)
                scoped = [cond] + ([en.c.scope == scope] if scope is not None else [])
                hit = (await conn.execute(select(en.c.seq).where(*scoped).limit(1))).first()
                sem._tags[(db.tenant_id, revision, scope, flt.scope_ref, tag)] = hit is not None
                if hit is not None:
                    found.add(tag)
        while len(sem._tags) > TAG_ANSWERS_MAX:
            sem._tags.popitem(last=False)
    return found


def _dense_text(text: str, entity: set[str]) -> str:
    """The search without its entity words (unless nothing else is left)."""
    if not entity:
        return text
    lowered = {t.lower() for t in entity}
    kept = [w for w in re.findall(r"\w+|\W+", text) if w.lower() not in lowered]
    rest = "".join(kept).strip()
    return rest if search.terms(rest) else text


async def _dense(
    db: TenantDb,
    sem: Semantic,
    embedder: Embedder,
    matrix: "_Matrix",
    where: Where,
    hwm: int,
    text: str,
    conn: AsyncConnection | None = None,
) -> list[tuple[int, float]]:
    """(seq, cosine similarity) of the `sem.depth` nearest embedded entries at least
    `sem.min_similarity` near that pass `where`, nearest first; its conditions read in `conn`
    when given (a caller that holds a connection must not wait for a second one from the
    same pool)."""
    query = await sem.queries.vector(embedder, text)
    # With conditions to check in the database, more candidates than a page needs: the
    # check is bounded by this, whatever the tenant's size.
    wanted = sem.depth * (CANDIDATES_PER_HIT if where.conds else 1)
    nearest = await asyncio.to_thread(_nearest, matrix, query, hwm, where, wanted)
    nearest = [(seq, sim) for seq, sim in nearest if sim >= sem.min_similarity]
    if not where.conds or not nearest:
        return nearest[: sem.depth]
    stmt = select(en.c.seq).where(en.c.seq.in_([s for s, _ in nearest]), *where.conds)
    if conn is not None:
        rows = await conn.execute(stmt)
    else:
        async with read_statement(db.engine) as own:
            rows = await own.execute(stmt)
    passing = {int(s) for (s,) in rows}
    return [(seq, sim) for seq, sim in nearest if seq in passing][: sem.depth]


def _nearest(
    matrix: _Matrix,
    query: npt.NDArray[np.float32],
    hwm: int,
    where: Where,
    depth: int,
) -> list[tuple[int, float]]:
    seqs, sims = [], []
    # Rows are kept sorted by scope and scopeRef, so a scope's rows are one slice: scored in
    # place, neither copied nor masked out of the whole matrix.
    for start, end in _row_ranges(matrix, where.scopes):
        part = matrix.seqs[start:end]
        scored = matrix.vectors[start:end] @ query
        below = part <= hwm
        seqs.append(part[below])
        sims.append(scored[below])
    if not seqs:
        return []
    found, scores = np.concatenate(seqs), np.concatenate(sims)
    if not len(found):
        return []
    top = (
        np.argpartition(-scores, depth - 1)[:depth] if len(scores) > depth
        else np.arange(len(scores))
    )  # fmt: skip
    order = top[np.argsort(-scores[top], kind="stable")]
    return [(int(found[i]), float(scores[i])) for i in order]


def _row_ranges(
    matrix: _Matrix, scopes: Sequence[tuple[str | None, object]]
) -> list[tuple[int, int]]:
    """The matrix's row slices holding `scopes` (Where.scopes), without overlaps."""
    if not scopes:
        return [(0, len(matrix.seqs))]
    ranges: set[tuple[int, int]] = set()
    for scope, ref in scopes:
        scope_code = None if scope is None else matrix.scope_codes.get(scope)
        if scope is not None and scope_code is None:
            continue
        if ref is ANY_REF:
            ranges.add(
                (0, len(matrix.seqs)) if scope_code is None else matrix.scope_rows[scope_code]
            )
            continue
        ref_code = matrix.ref_codes.get(ref if isinstance(ref, str) else None)
        if ref_code is None:
            continue
        ranges.update(
            rows for (s, r), rows in matrix.pair_rows.items()
            if r == ref_code and (scope_code is None or s == scope_code)
        )  # fmt: skip
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


async def _matrix(
    db: TenantDb, sem: Semantic, model: str, revision: int, conn: AsyncConnection | None = None
) -> _Matrix:
    """The tenant's current vectors by `model` as one matrix, read again when its entries
    `revision` moved (a write, or the indexer storing vectors): at once when the read is
    quick, else in the background while searches use the matrix they have (entries embedded
    since are found by their words meanwhile). Read in `conn` when given."""
    held = sem._cache.get(db.tenant_id)
    if held is not None and held.model == model:
        if held.revision == revision:
            sem._cache.move_to_end(db.tenant_id)
            return held
        if held.read_seconds >= sem.inline_refresh_seconds:
            _refresh_later(db, sem, model, revision, held)
            return held
    if conn is not None:
        return await _read_now(db, sem, model, revision, conn)
    async with read_statement(db.engine) as own:
        return await _read_now(db, sem, model, revision, own)


async def _read_now(
    db: TenantDb, sem: Semantic, model: str, revision: int, conn: AsyncConnection
) -> _Matrix:
    # The connection is taken before the lock, so the lock's holder never waits for the pool
    # while others hold the pool's connections and wait for the lock.
    async with sem._loading:
        held = sem._cache.get(db.tenant_id)
        if held is not None and held.model == model and held.revision == revision:
            return held  # read meanwhile by the search this one waited for
        return await _read_matrix(db, sem, model, revision, conn)


def _refresh_later(db: TenantDb, sem: Semantic, model: str, revision: int, held: _Matrix) -> None:
    """One background read of the tenant's matrix at a time, spaced by `refresh_gap`."""
    if db.tenant_id in sem._refreshing:
        return
    if time.monotonic() - held.read_at < sem.refresh_gap * held.read_seconds:
        return

    async def refresh() -> None:
        async with read_statement(db.engine) as conn:
            await _read_now(db, sem, model, revision, conn)

    task = asyncio.get_running_loop().create_task(refresh())
    sem._refreshing[db.tenant_id] = task
    task.add_done_callback(lambda t: _refreshed(sem, db.tenant_id, t))


def _refreshed(sem: Semantic, tenant_id: str, task: "asyncio.Task[None]") -> None:
    sem._refreshing.pop(tenant_id, None)
    if not task.cancelled() and task.exception() is not None:
        # The next search that finds the matrix stale tries again; searches keep the old one.
        log.warning("refreshing the vectors of tenant %s failed: %r", tenant_id, task.exception())


def _runs(keys: npt.NDArray[np.int64], parts: Any = None) -> dict[Any, tuple[int, int]]:
    """Where each value of sorted `keys` starts and ends; keyed by the value, or by the
    tuple of `parts` at that row."""
    if not len(keys):
        return {}
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    return {
        (int(keys[a]) if parts is None else tuple(int(p[a]) for p in parts)): (int(a), int(b))
        for a, b in zip(starts, ends, strict=True)
    }


async def _read_matrix(
    db: TenantDb, sem: Semantic, model: str, revision: int, conn: AsyncConnection
) -> _Matrix:
    started = time.monotonic()
    rows = await vectors.matrix_rows(conn, model, limit=sem.max_vectors)
    scope_codes: dict[str, int] = {}
    ref_codes: dict[str | None, int] = {}
    count = len(rows)
    scopes = np.fromiter(
        (scope_codes.setdefault(r[1], len(scope_codes)) for r in rows), dtype=np.int64, count=count
    )
    refs = np.fromiter(
        (ref_codes.setdefault(r[2], len(ref_codes)) for r in rows), dtype=np.int64, count=count
    )
    order = np.lexsort((refs, scopes))
    scopes, refs = scopes[order], refs[order]
    seqs = np.fromiter((rows[i][0] for i in order), dtype=np.int64, count=count)
    matrix = await asyncio.to_thread(from_blobs, [rows[i][3] for i in order])
    ended = time.monotonic()
    held = _Matrix(
        model, revision, seqs, matrix, scope_codes, ref_codes,
        _runs(scopes), _runs(scopes * len(ref_codes) + refs, (scopes, refs)),
        ended - started, ended,
    )  # fmt: skip
    sem._cache[db.tenant_id] = held
    while len(sem._cache) > sem.matrices:
        sem._cache.popitem(last=False)
    return held
