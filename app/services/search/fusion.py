"""Search by words and by meaning, fused: a weighted sum of the keyword score (bm25 scaled so
the best hit is 1) and the dense score (cosine similarity scaled likewise) of the tenant's
entry vectors, with an entity-aware dense side (a search word that is a tag in the searched
scope is not sent to the embedder; entries carrying it get a small boost). Entries not
embedded yet are found by their words alone."""

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.adapters.embedders import Embedder, QueryVectors
from app.adapters.gateway import GatewayError
from app.errors import BudgetExceeded
from app.services import cursors
from app.services.records import Edge, Entry, EntryFilter, Page
from app.services.search import analysis, vector_matrix
from app.services.search.vector_matrix import ANY_REF, Matrices, Matrix, Where
from app.storage import reads
from app.storage.lists import in_list
from app.storage.models import entries_table as en
from app.storage.search import fulltext, spec, vectors
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement

log = logging.getLogger(__name__)

# The fused search's settings in TenantDb.shared (made by app/deps.py).
KEY = "semantic_search"
ENTITY_WORDS_MAX = 8  # search words looked up as tags: each is one index probe
TAG_ANSWERS_MAX = 65536  # of those probes' answers kept per process
CANDIDATES_PER_HIT = 4  # nearest entries checked against a search's other filters, per hit
# The fusion's constants, tuned on the evaluation set's train split (docs/search.md): the
# dense side's share of a fused score, the similarity that counts as nothing, and what a tag
# named in the search adds.
DENSE_WEIGHT = 0.1
SIMILARITY_ZERO = 0.05
TAG_BOOST = 0.2

# (seq, rank) of the keyword ranking (rank lower is better), best first.
KeywordRanking = Callable[[TenantDb, EntryFilter, int, int], Awaitable[list[tuple[int, float]]]]


@dataclass
class Semantic:
    """What a fused search needs: the tenant's embedder (None: keywords only), its constants,
    and the process's caches of question vectors and tenants' vector matrices."""

    embedder_for: Callable[[str], Awaitable[Embedder | None]]
    weight: float = DENSE_WEIGHT
    depth: int = 100
    tag_boost: float = TAG_BOOST
    zero: float = SIMILARITY_ZERO
    # Nearer than this, or no hit by meaning alone: without a floor a search by meaning
    # always finds something, however unrelated (docs/search.md).
    min_similarity: float = 0.15
    matrices: Matrices = field(default_factory=Matrices)
    queries: QueryVectors = field(default_factory=QueryVectors)
    # (tenant, scope, scopeRef, tag) -> (the entries revision it was read at, whether an
    # entry there carries it): one answer per question, the latest, so answers of past
    # revisions do not pile up to TAG_ANSWERS_MAX while writes move the revision on.
    _tags: "OrderedDict[tuple[Any, ...], tuple[int, bool]]" = field(default_factory=OrderedDict)


async def semantic_of(db: TenantDb) -> tuple[Semantic, Embedder] | None:
    sem = db.shared.get(KEY)
    if not isinstance(sem, Semantic):
        return None
    embedder = await sem.embedder_for(db.tenant_id)
    return None if embedder is None else (sem, embedder)


def where_of(flt: EntryFilter, target: spec.Target) -> Where:
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
    keyword_ranking: KeywordRanking,
    to_entry: Callable[[Any], Entry],
    columns: Sequence[Any],
) -> Page[Entry] | None:
    """The fused page, or None when this search is keywords only (the tenant's switch, no
    embedder): the caller then searches by words as before."""
    if flt.keyword_only:
        return None
    found = await semantic_of(db)
    if found is None:
        return None
    sem, embedder = found
    assert flt.search is not None
    words = analysis.words(flt.search, "search")
    hwm, offset = cursors.decode_search("entries-search", after)
    state = await reads.index_rows(db, vectors.SEARCH_STATE, {})
    if not state or state[0][1]:  # the tenant's switch (or no such row: keywords)
        return None
    revision = int(state[0][0])
    matrix = await sem.matrices.get(db, embedder.model, revision)
    if not len(matrix.seqs):
        return None  # nothing embedded yet: the keyword search, exactly
    if hwm is None:
        async with read_statement(db.engine) as conn:
            hwm = int((await conn.execute(select(func.coalesce(func.max(en.c.seq), 0)))).scalar())
    if offset >= sem.depth:
        return Page([], has_next_page=False)
    try:
        dense, entity = await dense_ranking(db, sem, embedder, matrix, flt, hwm)
    except (GatewayError, BudgetExceeded) as exc:
        _fell_back(db, exc)
        return None
    keyword = await keyword_ranking(db, flt, hwm, sem.depth)
    candidates = list(dict.fromkeys([seq for seq, _ in keyword] + [seq for seq, _ in dense]))
    boosted = await _carrying(db, entity, flt, candidates) if entity else set()
    ranked = fuse(keyword, dense, sem, boosted=boosted)
    # Only the page's rows are read (the rankings are seqs and scores); an entry deleted
    # since the rankings were read is left out of the page.
    window = [seq for seq, _ in ranked[offset : offset + first]]
    async with read_statement(db.engine) as conn:
        stmt = select(*columns, en.c.seq).where(en.c.seq.in_(window))
        entries = {int(r[len(columns)]): to_entry(r) for r in await conn.execute(stmt)}
    similarity = dict(dense)
    edges = []
    for i, seq in enumerate(window):
        entry = entries.get(seq)
        if entry is None:
            continue
        matched = analysis.matched_terms(words, [entry.title, entry.summary, *entry.tags])
        cursor = cursors.encode("entries-search", [hwm, offset + i + 1])
        sim = similarity.get(seq)
        edges.append(
            Edge(
                cursor,
                entry,
                analysis.score(words, matched),
                matched,
                None if sim is None else round(sim, 4),
            )
        )
    return Page(
        edges, has_next_page=len(ranked) > offset + first, stale=matrix.revision != revision
    )


def _fell_back(db: TenantDb, exc: Exception) -> None:
    # The tenant's gateway failed or its budget is spent: its search is by words meanwhile.
    log.warning(
        "tenant %s searched by words only: its embedder failed (%s)",
        db.tenant_id,
        type(exc).__name__,
    )


async def prepare(db: TenantDb, text: str) -> None:
    """Embed the question now when the tenant's embedder is remote, so a caller that reads
    under a held connection (the context loader) finds its vector kept."""
    found = await semantic_of(db)
    if found is None or not getattr(found[1], "remote", False):
        return
    sem, embedder = found
    try:
        await sem.queries.vector(embedder, text)
    except (GatewayError, BudgetExceeded) as exc:
        _fell_back(db, exc)


async def dense_ranking(
    db: TenantDb,
    sem: Semantic,
    embedder: Embedder,
    matrix: Matrix,
    flt: EntryFilter,
    hwm: int,
) -> tuple[list[tuple[int, float]], set[str]]:
    """The dense side of `flt`'s search: (seq, similarity) nearest first, and the search's
    words that are tags in its scope (left out of the embedded text)."""
    assert flt.search is not None
    target = spec.Target.of_engine(db.engine)
    words = analysis.words(flt.search, "search")
    entity = await _entity_tags(db, sem, matrix.revision, target, words, flt)
    text = _dense_text(flt.search, entity)
    return await _dense(db, sem, embedder, matrix, where_of(flt, target), hwm, text), entity


async def current_matrix(db: TenantDb, sem: Semantic, model: str) -> Matrix:
    """The tenant's vectors by `model` now (the evaluation's entry point)."""
    state = await reads.index_rows(db, vectors.SEARCH_STATE, {})
    return await sem.matrices.get(db, model, int(state[0][0]))


def fuse(
    keyword: Sequence[tuple[int, float]],
    dense: Sequence[tuple[int, float]],
    sem: Semantic,
    *,
    boosted: Collection[int] = (),
) -> list[tuple[int, float]]:
    """(seq, fused score) best first: `(1 - sem.weight)` times the keyword score (the rank
    over the best rank: bm25 and negated ts_rank are lower when better, the best is 1) plus
    `sem.weight` times the dense score (the similarity above `sem.zero` over the nearest's,
    the nearest is 1), plus `sem.tag_boost` when `boosted`. An entry on the dense side
    alone needs `sem.min_similarity`. Ties by the keyword rank, then the newer entry.
    Scores, not ranks: a keyword hit far ahead of the next stays ahead (rank fusion levels
    them), and the dense side's share is small because its scores are close together."""
    scores: dict[int, float] = {}
    if keyword:
        best = min(rank for _, rank in keyword)
        for seq, rank in keyword:
            scores[seq] = (1.0 - sem.weight) * (rank / best if best < 0 else 1.0)
    near = [(seq, sim) for seq, sim in dense if sim > sem.zero]
    if near:
        top = near[0][1] - sem.zero
        for seq, sim in near:
            if seq in scores or sim >= sem.min_similarity:
                scores[seq] = scores.get(seq, 0.0) + sem.weight * (sim - sem.zero) / top
    for seq in boosted:
        if seq in scores:
            scores[seq] += sem.tag_boost
    at = {seq: i for i, (seq, _) in enumerate(keyword)}
    order = sorted(scores, key=lambda s: (-scores[s], at.get(s, len(at)), -s))
    return [(seq, scores[seq]) for seq in order]


async def _carrying(
    db: TenantDb, entity: set[str], flt: EntryFilter, seqs: Sequence[int]
) -> set[int]:
    """Which of `seqs` carry one of the `entity` tags (read by the tag index, not the rows)."""
    target = spec.Target.of_engine(db.engine)
    scope = None if flt.scope is None else flt.scope.value
    tagged = or_(*(fulltext.entries_tagged(target, [t], scope, flt.scope_ref) for t in entity))
    async with read_statement(db.engine) as conn:
        rows = await conn.execute(select(en.c.seq).where(en.c.seq.in_(seqs), tagged))
        return {int(seq) for (seq,) in rows}


async def _entity_tags(
    db: TenantDb,
    sem: Semantic,
    revision: int,
    target: spec.Target,
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
        known = sem._tags.get((db.tenant_id, scope, flt.scope_ref, tag))
        if known is None or known[0] != revision:
            unknown.append(tag)
        elif known[1]:
            found.add(tag)
    if unknown:
        async with read_statement(db.engine) as conn:
            for tag in unknown:
                cond = fulltext.entries_tagged(target, [tag], scope, flt.scope_ref)
                scoped = [cond] + ([en.c.scope == scope] if scope is not None else [])
                hit = (await conn.execute(select(en.c.seq).where(*scoped).limit(1))).first()
                key = (db.tenant_id, scope, flt.scope_ref, tag)
                sem._tags[key] = (revision, hit is not None)
                sem._tags.move_to_end(key)
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
    return rest if analysis.terms(rest) else text


async def _dense(
    db: TenantDb,
    sem: Semantic,
    embedder: Embedder,
    matrix: Matrix,
    where: Where,
    hwm: int,
    text: str,
    conn: AsyncConnection | None = None,
) -> list[tuple[int, float]]:
    """(seq, cosine similarity) of the `sem.depth` nearest embedded entries that pass
    `where`, nearer than `sem.zero`, nearest first (`fuse` applies `sem.min_similarity`);
    `where`'s conditions read in `conn` when given (a caller that holds a connection must not
    wait for a second one from the same pool)."""
    if conn is not None and getattr(embedder, "remote", False):
        # A network call is never made while holding a connection: the caller asked for the
        # question's vector beforehand (`prepare`); without it, this side finds nothing.
        held = sem.queries.held(embedder, text)
        if held is None:
            return []
        query = held
    else:
        query = await sem.queries.vector(embedder, text)
    # With conditions to check in the database, more candidates than a page needs: the
    # check is bounded by this, whatever the tenant's size.
    wanted = sem.depth * (CANDIDATES_PER_HIT if where.conds else 1)
    found = await asyncio.to_thread(vector_matrix.nearest, matrix, query, hwm, where, wanted)
    nearest = [(seq, sim) for seq, sim in found if sim > sem.zero]
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
