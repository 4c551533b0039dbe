"""Erasure: a subject's (scope, scopeRef) events, entries, summaries folded from its events
and every entry version, or one event, gone in one transaction, with a receipt that holds
counts and never content. The only deletes the event log lets through
(app/storage/data_rights/erasure.py)."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app import ids
from app.errors import InvalidInput, NotFound, TooLarge
from app.services import cursors, limits, validation
from app.services.data_rights import history
from app.services.records import Edge, ErasureReceipt, Page, Scope
from app.storage.data_rights.erasure import erasing_transaction, vacuum_tenant
from app.storage.lists import in_list, storable
from app.storage.models import changes_table as ch
from app.storage.models import entries_table as en
from app.storage.models import entry_sources_table as src
from app.storage.models import entry_versions_table as ve
from app.storage.models import erasures_table as er
from app.storage.models import events_table as ev
from app.storage.models import webhook_deliveries_table as wd
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows
from app.storage.types import utcnow

_RECEIPT = [
    er.c.id,
    er.c.erased_at,
    er.c.target,
    er.c.scope,
    er.c.scope_ref,
    er.c.event_id,
    er.c.events,
    er.c.entries,
    er.c.versions,
    er.c.released,
    er.c.requested_by,
]


def _receipt(row: Any) -> ErasureReceipt:
    return ErasureReceipt(
        id=row[0],
        erased_at=row[1],
        target=row[2],
        scope=Scope(row[3]),
        scope_ref=row[4],
        event_id=row[5],
        events=row[6],
        entries=row[7],
        versions=row[8],
        released=row[9],
        requested_by=row[10],
    )


async def erase_subject(
    db: TenantDb,
    scope: Scope,
    scope_ref: str | None,
    *,
    by: str,
    max_events: int | None = limits.ERASURE_EVENTS_MAX,
) -> ErasureReceipt:
    """Erase every event and entry of (scope, scopeRef), the summaries folded from its
    events (their other events released), and every version of those entries."""
    validation.check_scope(scope, scope_ref)
    history.check_actor(by)
    subject = and_(ev.c.scope == scope.value, _same_ref(ev.c.scope_ref, scope_ref))
    async with erasing_transaction(db.engine) as conn:
        if max_events is not None:
            count = (await conn.execute(select(func.count()).where(subject))).scalar_one()
            if count > max_events:
                raise TooLarge(
                    ["scopeRef"],
                    f"the subject has {count} events; an erasure over the API removes at most "
                    f"{max_events} (an operator erases more with `jet-memory erase`)",
                )
        event_ids = select(ev.c.id).where(subject).scalar_subquery()
        folded = select(src.c.entry_id).where(src.c.event_id.in_(event_ids))
        own = select(en.c.id).where(en.c.scope == scope.value, _same_ref(en.c.scope_ref, scope_ref))
        entry_ids = [r[0] for r in await conn.execute(folded.union(own))]
        await _erase_outbox(
            conn,
            or_(
                and_(ch.c.scope == scope.value, _same_ref(ch.c.scope_ref, scope_ref)),
                in_list(ch.c.object_id, entry_ids),
            ),
        )
        await conn.execute(delete(src).where(src.c.event_id.in_(event_ids)))
        events = (await conn.execute(delete(ev).where(subject))).rowcount
        counts = await _erase_entries(conn, entry_ids)
        versions = (
            await conn.execute(
                delete(ve).where(ve.c.scope == scope.value, _same_ref(ve.c.scope_ref, scope_ref))
            )
        ).rowcount
        return await _write_receipt(
            conn,
            target="subject",
            scope=scope,
            scope_ref=scope_ref,
            event_id=None,
            events=events,
            entries=counts[0],
            versions=counts[1] + versions,
            released=counts[2],
            by=by,
        )


async def erase_event(db: TenantDb, event_id: str, *, by: str) -> ErasureReceipt:
    """Erase one event; a summary that folded it is erased too, and the other events it
    folded are released for the next compaction run to summarise again."""
    history.check_actor(by)
    if not storable(event_id):
        raise NotFound(["id"], f"no memory event {event_id!r}")
    async with erasing_transaction(db.engine) as conn:
        found = (
            await conn.execute(
                select(ev.c.scope, ev.c.scope_ref, ev.c.compressed_into).where(ev.c.id == event_id)
            )
        ).first()
        if found is None:
            raise NotFound(["id"], f"no memory event {event_id!r}")
        folded = select(src.c.entry_id).where(src.c.event_id == event_id)
        entry_ids = sorted(
            {r[0] for r in await conn.execute(folded)} | ({found[2]} if found[2] else set())
        )
        await _erase_outbox(conn, in_list(ch.c.object_id, [event_id, *entry_ids]))
        await conn.execute(delete(src).where(src.c.event_id == event_id))
        events = (await conn.execute(delete(ev).where(ev.c.id == event_id))).rowcount
        counts = await _erase_entries(conn, entry_ids)
        return await _write_receipt(
            conn,
            target="event",
            scope=Scope(found[0]),
            scope_ref=found[1],
            event_id=event_id,
            events=events,
            entries=counts[0],
            versions=counts[1],
            released=counts[2],
            by=by,
        )


async def _erase_outbox(conn: AsyncConnection, changes: Any) -> None:
    """Delete the change-feed rows (and their webhook deliveries) that name the erased
    events and entries. Run before the entries go, so the entry.deleted rows the erasure
    itself writes stay: they tell listeners to drop their copies."""
    ids = select(ch.c.id).where(changes).scalar_subquery()
    await conn.execute(delete(wd).where(wd.c.change_id.in_(ids)))
    await conn.execute(delete(ch).where(changes))


async def _erase_entries(conn: AsyncConnection, entry_ids: list[str]) -> tuple[int, int, int]:
    """Erase entries with their versions and provenance, releasing the events they folded
    that are still stored: (entries, versions, released)."""
    if not entry_ids:
        return 0, 0, 0
    released = (
        await conn.execute(
            update(ev)
            .where(in_list(ev.c.compressed_into, entry_ids))
            .values(compressed_at=None, compressed_into=None)
        )
    ).rowcount
    await conn.execute(delete(src).where(in_list(src.c.entry_id, entry_ids)))
    versions = (await conn.execute(delete(ve).where(in_list(ve.c.entry_id, entry_ids)))).rowcount
    entries = (await conn.execute(delete(en).where(in_list(en.c.id, entry_ids)))).rowcount
    return entries, versions, released


async def _write_receipt(
    conn: AsyncConnection,
    *,
    target: str,
    scope: Scope,
    scope_ref: str | None,
    event_id: str | None,
    events: int,
    entries: int,
    versions: int,
    released: int,
    by: str,
) -> ErasureReceipt:
    receipt = ErasureReceipt(
        id=ids.new_id(ids.ERASURE),
        erased_at=utcnow(),
        target=target,
        scope=scope,
        scope_ref=scope_ref,
        event_id=event_id,
        events=events,
        entries=entries,
        versions=versions,
        released=released,
        requested_by=by,
    )
    await conn.execute(
        insert(er).values(
            id=receipt.id,
            erased_at=receipt.erased_at,
            target=target,
            scope=scope.value,
            scope_ref=scope_ref,
            event_id=event_id,
            events=events,
            entries=entries,
            versions=versions,
            released=released,
            requested_by=by,
        )
    )
    return receipt


def _same_ref(column: Any, scope_ref: str | None) -> Any:
    return column.is_(None) if scope_ref is None else column == scope_ref


async def list_erasures(db: TenantDb, *, first: int, after: str | None) -> Page[ErasureReceipt]:
    """The tenant's erasure receipts, newest first."""
    validation.check_first(first)
    conds: list[Any] = []
    if after is not None:
        at, rid = cursors.decode("erasures", after, types=(str, str))
        if not storable(rid):
            raise InvalidInput(["after"], "after is not a valid cursor")
        at_dt = cursors.decode_time(at)
        conds.append(or_(er.c.erased_at < at_dt, and_(er.c.erased_at == at_dt, er.c.id < rid)))
    stmt = (
        select(*_RECEIPT)
        .where(*conds)
        .order_by(er.c.erased_at.desc(), er.c.id.desc())
        .limit(first + 1)
    )
    rows: Sequence[Any] = await read_rows(db.engine, stmt)
    edges = [
        Edge(cursors.encode("erasures", [r[1].isoformat(), r[0]]), _receipt(r))
        for r in rows[:first]
    ]
    return Page(edges, has_next_page=len(rows) > first)


async def reclaim_space(db: TenantDb) -> None:
    """Rewrite the tenant's tables now so erased rows' space is reused (an operator's step
    after an erasure on PostgreSQL, where deleted rows stay in their pages until VACUUM)."""
    await vacuum_tenant(db.engine)
