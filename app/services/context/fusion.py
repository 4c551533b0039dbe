"""The context loader's relevance fused with meaning: the keyword pool's order and the
dense ranking of the entries in the loaded scopes, by reciprocal rank fusion, scaled so the
best is 1 as the keyword relevance was. Ranks rather than the search's score fusion
(app/services/search/fusion.py): the loader multiplies relevance by importance and recency, and
a hit by meaning alone needs a relevance that can compete with the keyword pool's."""

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from app.services.records import Scope
from app.services.search import fusion, vector_matrix
from app.storage.search import vectors
from app.storage.tenants import TenantDb

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
