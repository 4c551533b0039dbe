"""The append-only event log. There is deliberately no update or delete here: only the
compactor marks events compressed (app/services/compaction/), and the database refuses
anything else."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, Select, and_, bindparam, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app import ids, metrics
from app.errors import Conflict, ExpectedError, ExpectedErrors, InvalidInput
from app.services import cursors, validation
from app.services.records import (
    Appended,
    Edge,
    Event,
    EventFilter,
    EventIn,
    Page,
    Scope,
    row_reader,
)
from app.services.search import analysis
from app.storage import event_log, reads
from app.storage.group_commit import GroupCommitter
from app.storage.lists import in_list, storable
from app.storage.models import events_table as ev
from app.storage.search import fulltext, spec
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, read_transaction
from app.storage.types import utcnow

COLUMNS = event_log.COLUMNS


# The Event of a row whose first columns are COLUMNS, in order (more may follow).
to_event = row_reader(Event, [c.name for c in COLUMNS])


# ---------------------------------------------------------------------------- appends


@dataclass(frozen=True, slots=True)
class _AppendRequest:
    events: list[EventIn]
    batch: bool  # all-or-nothing: one conflict fails every event of the request


def _committer(db: TenantDb, max_rows: int) -> GroupCommitter[_AppendRequest, list[Appended]]:
    committer = db.event_appends
    if committer is None:
        committer = db.event_appends = event_log.group_committer(
            db.engine,
            keys=_keys,
            decide=_decide_rows,
            size=lambda r: len(r.events),
            max_size=max_rows,
        )
    return committer


async def append_event(db: TenantDb, event: EventIn, *, max_rows: int = 2000) -> Appended:
    """Append one event; a known idempotency key with the same content replays it."""
    validation.check_event(event)
    [result] = await _committer(db, max_rows).submit(_AppendRequest([event], batch=False))
    if not result.replayed:
        metrics.EVENTS_APPENDED.inc()
    return result


async def append_events(
    db: TenantDb, events: list[EventIn], *, max_rows: int = 2000
) -> list[Appended]:
    """Append a batch, all or nothing."""
    validation.check_batch(events)
    results = await _committer(db, max_rows).submit(_AppendRequest(events, batch=True))
    metrics.EVENTS_APPENDED.inc(sum(not r.replayed for r in results))
    return results


def _same_content(stored: Event, new: EventIn) -> bool:
    return (
        stored.scope == new.scope
        and stored.scope_ref == new.scope_ref
        and stored.kind == new.kind
        and stored.body == new.body
        and stored.source == new.source
        and stored.source_ref == new.source_ref
        # A retry that leaves occurredAt to the server cannot disagree about it.
        and (new.occurred_at is None or new.occurred_at == stored.occurred_at)
    )


def _decide_rows(
    requests: Sequence[_AppendRequest], rows: Sequence[Any]
) -> tuple[list[list[Appended] | BaseException], list[Event]]:
    """`_decide` given the rows (COLUMNS) of the events stored under the group's keys,
    read by event_log inside the group commit's transaction."""
    known = {e.idempotency_key: e for e in map(to_event, rows) if e.idempotency_key}
    return _decide(requests, known)


def _keys(requests: Sequence[_AppendRequest]) -> set[str]:
    return {e.idempotency_key for r in requests for e in r.events if e.idempotency_key}


def _decide(
    requests: Sequence[_AppendRequest], known: dict[str, Event]
) -> tuple[list[list[Appended] | BaseException], list[Event]]:
    """Each request's answer (its events, replays, or its conflicts) given the events
    already stored under its keys, and the new events to insert."""
    now = utcnow()
    # An id for every event of the group, made in one call (some go unused: replays).
    fresh = iter(ids.new_ids(ids.EVENT, sum(len(r.events) for r in requests)))
    to_insert: list[Event] = []
    results: list[list[Appended] | BaseException] = []
    for request in requests:
        out: list[Appended] = []
        pending: dict[str, Event] = {}
        errors: list[ExpectedError] = []
        for i, new in enumerate(request.events):
            key = new.idempotency_key
            stored = (known.get(key) or pending.get(key)) if key else None
            if stored is not None:
                if _same_content(stored, new):
                    out.append(Appended(stored, True))
                    continue
                field = [str(i), "idempotencyKey"] if request.batch else ["idempotencyKey"]
                errors.append(
                    Conflict(
                        field,
                        f"idempotencyKey {key!r} was already used for a different event",
                    )
                )
                continue
            event = Event(
                id=next(fresh),
                scope=new.scope,
                scope_ref=new.scope_ref,
                kind=new.kind,
                body=new.body,
                source=new.source,
                source_ref=new.source_ref,
                occurred_at=new.occurred_at or now,
                recorded_at=now,
                compressed_at=None,
                compressed_into=None,
                idempotency_key=key,
            )
            if key:
                pending[key] = event
            out.append(Appended(event, False))
        if errors:
            results.append(errors[0] if len(errors) == 1 else ExpectedErrors(errors))
            continue
        known.update(pending)
        to_insert.extend(a.event for a in out if not a.replayed)
        results.append(out)
    return results, to_insert


# ------------------------------------------------------------------------------ reads


async def get_event(db: TenantDb, event_id: str) -> Event | None:
    """One event by id, or None."""
    if not storable(event_id):  # no stored id holds NUL: nothing to look up
        return None
    rows = await read_rows(db.engine, select(*COLUMNS).where(ev.c.id == event_id))
    return to_event(rows[0]) if rows else None


async def list_events(
    db: TenantDb, flt: EventFilter, *, first: int, after: str | None
) -> Page[Event]:
    """Newest occurredAt first; most relevant first when flt.search is given."""
    _check_filter(flt, first)
    if _matches_nothing(flt):
        return Page([], has_next_page=False)
    if flt.search is not None:
        return await _search_page(db, flt, first=first, after=after)
    events, has_next_page = await _list_page(db, flt, first=first, after=after)
    edges = [Edge(cursors.encode("events", [e.occurred_at, e.id]), e) for e in events]
    return Page(edges, has_next_page)


async def list_events_next(
    db: TenantDb, flt: EventFilter, *, first: int, after: str | None
) -> tuple[list[Event], str | None]:
    """list_events as its events and the cursor of the next page (None on the last page),
    for callers without per-event cursors (REST): only one cursor is encoded."""
    _check_filter(flt, first)
    if _matches_nothing(flt):
        return [], None
    if flt.search is not None:
        page = await _search_page(db, flt, first=first, after=after)
        return [e.node for e in page.edges], page.end_cursor if page.has_next_page else None
    events, has_next_page = await _list_page(db, flt, first=first, after=after)
    if not has_next_page:
        return events, None
    last = events[-1]
    return events, cursors.encode("events", [last.occurred_at, last.id])


def _check_filter(flt: EventFilter, first: int) -> None:
    validation.check_first(first)
    validation.check_search(flt.search)
    validation.check_list_size(flt.kinds, "kinds")
    validation.check_filter_text(flt.scope_ref, flt.kinds, "kinds")
    if flt.scope not in (None, Scope.INSTITUTIONAL) and flt.scope_ref is not None:
        validation.check_scope(flt.scope, flt.scope_ref)
    if flt.occurred_after is not None:
        validation.check_time(flt.occurred_after, "occurredAfter")
    if flt.occurred_before is not None:
        validation.check_time(flt.occurred_before, "occurredBefore")


def _matches_nothing(flt: EventFilter) -> bool:
    """A filter value no stored event can hold (NUL, a lone surrogate): an empty page."""
    values = [*(flt.kinds or ()), *([flt.scope_ref] if flt.scope_ref is not None else [])]
    # A filter, not a new event: the institutional scope with a scopeRef matches no event
    # (as entries' filter), rather than being refused like an append.
    institutional_ref = flt.scope is Scope.INSTITUTIONAL and flt.scope_ref is not None
    return institutional_ref or not all(map(storable, values))


async def _search_page(
    db: TenantDb, flt: EventFilter, *, first: int, after: str | None
) -> Page[Event]:
    conds: list[Any] = []
    if flt.kinds:
        conds.append(in_list(ev.c.kind, flt.kinds))
    if flt.occurred_after is not None:
        conds.append(ev.c.occurred_at > flt.occurred_after)
    if flt.occurred_before is not None:
        conds.append(ev.c.occurred_at < flt.occurred_before)
    if flt.compressed is True:
        conds.append(ev.c.compressed_at.is_not(None))
    elif flt.compressed is False:
        conds.append(ev.c.compressed_at.is_(None))
    # Two statements (the high-water mark, then the page) that must agree.
    async with read_transaction(db.engine) as conn:
        return await _search_events(conn, flt, conds, first=first, after=after)


async def _list_page(
    db: TenantDb, flt: EventFilter, *, first: int, after: str | None
) -> tuple[list[Event], bool]:
    """The events of a page without search, and whether another page follows."""
    params: dict[str, Any] = {"limit": first + 1}
    if flt.kinds:
        params["kinds"] = flt.kinds
    if flt.occurred_after is not None:
        params["occurred_after"] = flt.occurred_after
    if flt.occurred_before is not None:
        params["occurred_before"] = flt.occurred_before
    if flt.scope is not None:
        params["scope"] = flt.scope.value
    if flt.scope_ref is not None:
        params["scope_ref"] = flt.scope_ref
    if after is not None:
        at, eid = cursors.decode("events", after, types=(str, str))
        if not storable(eid):
            raise InvalidInput(["after"], "after is not a valid cursor")
        params["at"] = cursors.decode_time(at)
        params["eid"] = eid
    stmt = _list_statement(tuple(params), flt.compressed)
    # An index range; with the SQLite fast path read on the loop, and a filter that makes
    # SQLite walk far for its rows (a rare kind) runs out of the inline budget and moves
    # to aiosqlite's thread.
    rows = await reads.index_rows(db, stmt, params)
    events = [to_event(r) for r in rows]
    if len(events) > first:
        return events[:first], True
    return events, False


_LIST_STATEMENTS: dict[tuple[tuple[str, ...], bool | None], Select[Any]] = {}


def _list_statement(names: tuple[str, ...], compressed: bool | None) -> Select[Any]:
    """The page query of list_events (without search) for a filter of this shape: the
    names of the bound parameters it has values for, and `compressed`.

    Built once per shape (at most 2**6 * 3 of them) and then reused with new values: the
    expression costs more to build than to execute once SQLAlchemy has cached its
    compiled form, and the same statement object also keeps its cache key.
    """
    key = (names, compressed)
    stmt = _LIST_STATEMENTS.get(key)
    if stmt is not None:
        return stmt
    at_type = ev.c.occurred_at.type
    conds: list[Any] = []
    if "kinds" in names:
        conds.append(in_list(ev.c.kind, "kinds"))
    if "occurred_after" in names:
        conds.append(ev.c.occurred_at > bindparam("occurred_after", type_=at_type))
    if "occurred_before" in names:
        conds.append(ev.c.occurred_at < bindparam("occurred_before", type_=at_type))
    if compressed is True:
        conds.append(ev.c.compressed_at.is_not(None))
    elif compressed is False:
        conds.append(ev.c.compressed_at.is_(None))
    if "scope" in names:
        conds.append(ev.c.scope == bindparam("scope", type_=ev.c.scope.type))
    if "scope_ref" in names:
        conds.append(ev.c.scope_ref == bindparam("scope_ref", type_=ev.c.scope_ref.type))
    if "at" in names:
        at = bindparam("at", type_=at_type)
        conds.append(
            or_(
                ev.c.occurred_at < at,
                and_(ev.c.occurred_at == at, ev.c.id < bindparam("eid", type_=ev.c.id.type)),
            )
        )
    stmt = (
        select(*COLUMNS)
        .where(*conds)
        .order_by(ev.c.occurred_at.desc(), ev.c.id.desc())
        .limit(bindparam("limit", type_=Integer()))
    )
    _LIST_STATEMENTS[key] = stmt
    return stmt


async def _search_events(
    conn: AsyncConnection, flt: EventFilter, conds: list[Any], *, first: int, after: str | None
) -> Page[Event]:
    assert flt.search is not None
    query = spec.Search(
        analysis.words(flt.search, "search"),
        scope=None if flt.scope is None else flt.scope.value,
        scope_ref=None if flt.scope is None else flt.scope_ref,
    )
    if flt.scope is None and flt.scope_ref is not None:
        conds.append(ev.c.scope_ref == flt.scope_ref)
    hwm, offset = cursors.decode_search("events-search", after)
    if hwm is None:
        hwm = (await conn.execute(select(func.coalesce(func.max(ev.c.seq), 0)))).scalar_one()
    stmt = (
        fulltext.matching(spec.Target.of(conn), ev, query, COLUMNS)
        .where(ev.c.seq <= hwm, *conds)
        .order_by(text("rank"), ev.c.seq)
        .offset(offset)
        .limit(first + 1)
    )
    rows = list(await conn.execute(stmt))
    edges = [
        Edge(cursors.encode("events-search", [hwm, offset + i + 1]), to_event(row), -row.rank)
        for i, row in enumerate(rows[:first])
    ]
    return Page(edges, has_next_page=len(rows) > first)
