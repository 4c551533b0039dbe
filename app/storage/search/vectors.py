"""Entry vectors in the tenant's own database: what needs embedding, storing vectors of an
entry version, the candidates a search scores, the indexer's lease and the keyword-only
switch. Vectors are compact BLOBs scored in the process (docs/search.md says why)."""

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.models import embedding_leases_table as lease
from app.storage.models import entries_revision_table, search_settings_table
from app.storage.models import entries_table as en
from app.storage.models import entry_vectors_table as vec
from app.storage.types import utcnow

# An entry's text as the embedder reads it: title, tags, summary.
TEXT_COLUMNS = (en.c.title, en.c.tags, en.c.summary)


def _joined(model: str) -> Any:
    return en.outerjoin(vec, and_(vec.c.model == model, vec.c.entry_seq == en.c.seq))


async def pending(conn: AsyncConnection, model: str, limit: int) -> list[tuple[Any, ...]]:
    """Up to `limit` entries with no vector by `model` of their current version, oldest
    first: (seq, version, title, tags, summary)."""
    stmt = (
        select(en.c.seq, en.c.version, *TEXT_COLUMNS)
        .select_from(_joined(model))
        .where(or_(vec.c.entry_seq.is_(None), vec.c.version != en.c.version))
        .order_by(en.c.seq)
        .limit(limit)
    )
    return [tuple(r) for r in await conn.execute(stmt)]


async def counts(conn: AsyncConnection, model: str) -> tuple[int, int]:
    """(entries with a current vector by `model`, entries)."""
    total = (await conn.execute(select(func.count()).select_from(en))).scalar_one()
    done = (
        await conn.execute(
            select(func.count())
            .select_from(en.join(vec, vec.c.entry_seq == en.c.seq))
            .where(vec.c.model == model, vec.c.version == en.c.version)
        )
    ).scalar_one()
    return int(done), int(total)


async def store(conn: AsyncConnection, model: str, rows: Sequence[tuple[int, int, bytes]]) -> int:
    """Keep (seq, version, vector) rows whose entry is still at that version (one changed or
    deleted meanwhile is embedded again, or not at all); replaces older vectors. Idempotent:
    two processes storing the same row leave one. Returns how many were stored."""
    if not rows:
        return 0
    seqs = [seq for seq, _, _ in rows]
    now = dict(
        tuple(r)
        for r in await conn.execute(select(en.c.seq, en.c.version).where(en.c.seq.in_(seqs)))
    )
    keep = [
        {"model": model, "entry_seq": seq, "version": version, "vector": blob}
        for seq, version, blob in rows
        if now.get(seq) == version
    ]
    await conn.execute(delete(vec).where(vec.c.model == model, vec.c.entry_seq.in_(seqs)))
    if keep:
        await conn.execute(insert(vec), keep)
    return len(keep)


async def drop_other_models(conn: AsyncConnection, model: str) -> int:
    """Delete the vectors of every model but `model` (once `model` has caught up)."""
    result = await conn.execute(delete(vec).where(vec.c.model != model))
    return max(result.rowcount or 0, 0)


async def bump_revision(conn: AsyncConnection) -> None:
    """Move the entries revision on: cached search pages were ranked without these vectors."""
    rev = entries_revision_table
    await conn.execute(update(rev).values(n=rev.c.n + 1))


async def claim(conn: AsyncConnection, model: str, owner: str, seconds: float) -> bool:
    """Take or renew the lease on embedding this tenant's entries for `model`; False when
    another process holds it."""
    now = utcnow()
    until = now + timedelta(seconds=seconds)
    taken = await conn.execute(
        update(lease)
        .where(lease.c.model == model, or_(lease.c.owner == owner, lease.c.until < now))
        .values(owner=owner, until=until)
    )
    if taken.rowcount:
        return True
    exists = (await conn.execute(select(lease.c.model).where(lease.c.model == model))).first()
    if exists is not None:
        return False
    await conn.execute(insert(lease).values(model=model, owner=owner, until=until))
    return True


async def matrix_rows(
    conn: AsyncConnection, model: str, *, limit: int
) -> list[tuple[int, str, str | None, bytes]]:
    """(seq, scope, scopeRef, vector) of the newest `limit` entries whose vector by `model`
    is of their current version: what a process holds to rank by meaning."""
    stmt = (
        select(en.c.seq, en.c.scope, en.c.scope_ref, vec.c.vector)
        .select_from(en.join(vec, vec.c.entry_seq == en.c.seq))
        .where(vec.c.model == model, vec.c.version == en.c.version)
        .order_by(en.c.seq.desc())
        .limit(limit)
    )
    return [(int(q), s, r, bytes(b)) for q, s, r, b in await conn.execute(stmt)]


# The entries revision and the keyword-only switch in one index-bounded read: what a search
# reads before it knows whether to fuse.
SEARCH_STATE = select(
    entries_revision_table.c.n,
    select(search_settings_table.c.keyword_only).scalar_subquery(),
).where(entries_revision_table.c.id == 1)


async def keyword_only(conn: AsyncConnection) -> bool:
    row = (await conn.execute(select(search_settings_table.c.keyword_only))).first()
    return bool(row[0]) if row is not None else False


async def set_keyword_only(conn: AsyncConnection, value: bool) -> None:
    await conn.execute(update(search_settings_table).values(keyword_only=value))
    await bump_revision(conn)  # cached pages were searched under the other setting
