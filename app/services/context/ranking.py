"""How the context loader orders a scope's entries: relevance to the question, lifted by
importance and recency (the formula in Weights), ties to importance then recency; and the
relevance fused with meaning: the keyword pool's order and the dense ranking of the entries
in the loaded scopes, by reciprocal rank fusion, scaled so the best is 1 as the keyword
relevance was."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from app.services.records import Scope
from app.services.search import fusion, vector_matrix
from app.storage.search import vectors
from app.storage.tenants import TenantDb


@dataclass(frozen=True, slots=True)
class Weights:
    """score = relevance · (1 + importance·(imp−1)/4 + recency·0.5^(age_days/half_life))."""

    importance: float
    recency: float
    half_life_days: float


# Tuned by bench/tune_context.py on tests/fixtures/context_labelled.json (docs/context.md).
WEIGHTS = Weights(importance=2.0, recency=5.0, half_life_days=365.0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What ranking needs of an entry, read before its text."""

    seq: int
    importance: int
    updated_at: datetime
    # −bm25 scaled so the best match is 1.0 (the scale does not change the order);
    # 0.0 for an entry that does not match the query.
    relevance: float


def score(c: Candidate, weights: Weights, now: datetime) -> float:
    """The documented formula (module docstring); higher is better, 0 when unmatched.

    Multiplying rather than adding keeps text relevance in charge: importance and recency
    reorder the entries that match, never lift one that does not above one that does.
    """
    age_days = max((now - c.updated_at).total_seconds(), 0.0) / 86_400
    recency = math.pow(0.5, age_days / weights.half_life_days)
    importance = (c.importance - 1) / 4
    return c.relevance * (1 + weights.importance * importance + weights.recency * recency)


def by_importance(c: Candidate) -> tuple[int, float, int]:
    return (-c.importance, -c.updated_at.timestamp(), -c.seq)


def rank(candidates: Sequence[Candidate], weights: Weights, now: datetime) -> list[Candidate]:
    """Best first; ties (the unmatched all score 0) go to importance, then recency."""
    return sorted(candidates, key=lambda c: (-score(c, weights, now), *by_importance(c)))


RRF_K = 5  # a hit at rank r on a side scores 1 / (RRF_K + r) (docs/search.md)


async def prepare(db: TenantDb, query: str) -> None:
    """Before the read transaction: the question's vector when the embedder is remote."""
    await fusion.prepare(db, query)


async def fused_relevance(
    db: TenantDb,
    conn: AsyncConnection,
    *,
    scopes: Sequence[tuple[Scope, str | None]],
    query: str,
    keyword: Sequence[tuple[int, float]],
    depth: int,
) -> dict[int, float] | None:
    """seq -> fused relevance (0 to 1) of the keyword pool (seq, relevance) and the
    nearest entries of `scopes`; None when the search is by words only (no embedder, the
    tenant's switch, nothing embedded yet). Read in `conn`'s snapshot."""
    found = await fusion.semantic_of(db)
    if found is None:
        return None
    sem, embedder = found
    state = (await conn.execute(vectors.SEARCH_STATE)).first()
    if state is None or state[1]:
        return None
    matrix = await sem.matrices.get(db, embedder.model, int(state[0]), conn)
    if not len(matrix.seqs):
        return None
    where = vector_matrix.Where(scopes=tuple((s.value, r) for s, r in scopes))
    hwm = int(matrix.seqs.max())
    dense = await fusion._dense(db, sem, embedder, matrix, where, hwm, query, conn)
    ordered = [seq for seq, _ in sorted(keyword, key=lambda k: -k[1])]
    scores: dict[int, float] = {}
    for ranking in (ordered, [seq for seq, sim in dense[:depth] if sim >= sem.min_similarity]):
        for rank, seq in enumerate(ranking, 1):
            scores[seq] = scores.get(seq, 0.0) + 1.0 / (RRF_K + rank)
    best = max(scores.values(), default=0.0) or 1.0
    return {seq: s / best for seq, s in scores.items()}
