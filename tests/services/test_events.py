"""The event log through the services, against real SQLite files."""

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Executable, delete, func, select, text, update
from sqlalchemy.exc import IntegrityError

from app.errors import Conflict, ExpectedErrors, InvalidInput, TooLarge
from app.services import cursors, events, limits
from app.services.records import EventFilter, EventIn, Scope
from app.storage import postgres
from app.storage.models import events_table as ev_t
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction, write_transaction


def ev(body: str = "Acme approved the Q3 budget of $45,000.", **kw: object) -> EventIn:
    base: dict[str, object] = {
        "scope": Scope.ENTITY,
        "scope_ref": "ent_acme",
        "kind": "decision",
        "body": body,
    }
    base.update(kw)
    return EventIn(**base)  # type: ignore[arg-type]


async def count(db: TenantDb) -> int:
    async with read_transaction(db.engine) as conn:
        return int((await conn.execute(select(func.count()).select_from(ev_t))).scalar_one())


async def test_append_defaults_and_reads_back(db: TenantDb) -> None:
    before = datetime.now(UTC)
    result = await events.append_event(db, ev(source="inbox", source_ref="msg_1"))
    assert not result.replayed
    e = result.event
    assert e.id.startswith("evt_") and before <= e.occurred_at == e.recorded_at
    assert await events.get_event(db, e.id) == e
    assert await events.get_event(db, "evt_nope") is None


@pytest.mark.parametrize(
    ("event", "field", "error"),
    [
        (ev(scope_ref=None), "scopeRef", InvalidInput),
        (ev(scope=Scope.INSTITUTIONAL), "scopeRef", InvalidInput),
        (ev(scope_ref="  "), "scopeRef", InvalidInput),
        (ev(scope_ref="x" * 201), "scopeRef", TooLarge),
        (ev(kind="Call Summary"), "kind", InvalidInput),
        (ev(kind="call__summary"), "kind", InvalidInput),
        (ev(kind="a" * 65), "kind", TooLarge),
        (ev(body=" \n"), "body", InvalidInput),
        (ev(body="é" * (limits.EVENT_BODY_MAX_BYTES // 2 + 1)), "body", TooLarge),
        (ev(body="before\x00after"), "body", InvalidInput),  # PostgreSQL can't store it
        (ev(occurred_at=datetime(2026, 1, 1)), "occurredAt", InvalidInput),
        (ev(occurred_at=datetime.now(UTC) + timedelta(days=2)), "occurredAt", InvalidInput),
        (ev(idempotency_key="k\n1"), "idempotencyKey", InvalidInput),
    ],
)
async def test_invalid_events_name_the_field_and_store_nothing(
    db: TenantDb, event: EventIn, field: str, error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        await events.append_event(db, event)
    assert info.value.field == [field]  # type: ignore[attr-defined]
    assert await count(db) == 0


async def test_body_limit_is_exact(db: TenantDb) -> None:
    await events.append_event(db, ev(body="x" * limits.EVENT_BODY_MAX_BYTES))
    with pytest.raises(TooLarge, match="65537 bytes; the limit is 65536"):
        await events.append_event(db, ev(body="x" * (limits.EVENT_BODY_MAX_BYTES + 1)))
    # Bytes, not characters: one character short of the limit, but two bytes over it.
    with pytest.raises(TooLarge, match="65537 bytes; the limit is 65536"):
        await events.append_event(db, ev(body="é" + "x" * (limits.EVENT_BODY_MAX_BYTES - 1)))
    # Blank is any whitespace at all (str.isspace's), not only spaces and newlines.
    with pytest.raises(InvalidInput, match="body must not be empty"):
        await events.append_event(db, ev(body="\u2003\t\u3000"))


async def test_institutional_event_has_no_scope_ref(db: TenantDb) -> None:
    e = (await events.append_event(db, ev(scope=Scope.INSTITUTIONAL, scope_ref=None))).event
    assert e.scope is Scope.INSTITUTIONAL and e.scope_ref is None


async def test_idempotent_replay_and_conflict(db: TenantDb) -> None:
    first = await events.append_event(db, ev(idempotency_key="hook-1"))
    again = await events.append_event(db, ev(idempotency_key="hook-1"))
    assert again.replayed and again.event == first.event
    with pytest.raises(Conflict) as info:
        await events.append_event(db, ev(body="something else", idempotency_key="hook-1"))
    assert info.value.field == ["idempotencyKey"]
    # A retry that names the original occurredAt is the same; a different one conflicts.
    same = await events.append_event(
        db, ev(idempotency_key="hook-1", occurred_at=first.event.occurred_at)
    )
    assert same.replayed
    with pytest.raises(Conflict):
        await events.append_event(
            db, ev(idempotency_key="hook-1", occurred_at=first.event.occurred_at - timedelta(1))
        )
    assert await count(db) == 1


async def test_concurrent_replays_of_one_key_store_one_event(db: TenantDb) -> None:
    results = await asyncio.gather(
        *(events.append_event(db, ev(idempotency_key="same")) for _ in range(20))
    )
    assert len({r.event.id for r in results}) == 1
    assert sum(not r.replayed for r in results) == 1
    assert await count(db) == 1


async def test_batch_is_all_or_nothing(db: TenantDb) -> None:
    await events.append_event(db, ev(idempotency_key="taken"))
    good = [ev(body=f"event {i}") for i in range(5)]
    with pytest.raises(ExpectedErrors) as info:
        await events.append_events(db, [*good, ev(kind="Bad Kind"), ev(scope_ref=None)])
    assert [e.field for e in info.value.errors] == [
        ["5", "kind"],
        ["6", "scopeRef"],
    ]
    with pytest.raises(Conflict) as conflict:
        await events.append_events(db, [*good, ev(body="other", idempotency_key="taken")])
    assert conflict.value.field == ["5", "idempotencyKey"]
    assert await count(db) == 1
    stored = await events.append_events(db, good)
    assert [a.event.body for a in stored] == [e.body for e in good]
    assert await count(db) == 6


async def test_batch_limits(db: TenantDb) -> None:
    with pytest.raises(InvalidInput):
        await events.append_events(db, [])
    with pytest.raises(TooLarge, match="at most 1000"):
        await events.append_events(db, [ev()] * (limits.BATCH_MAX + 1))


async def test_concurrent_appends_share_transactions_and_all_commit(db: TenantDb) -> None:
    results = await asyncio.gather(*(events.append_event(db, ev(body=f"e{i}")) for i in range(200)))
    assert len({r.event.id for r in results}) == 200
    assert await count(db) == 200
    committer = db.event_appends
    assert committer is not None and committer.groups < 200


async def test_one_failing_request_does_not_fail_its_group(db: TenantDb) -> None:
    # Bypass validation to make the database itself refuse one row inside a shared group.
    bad = ev(scope_ref=None)
    ok = [events.append_event(db, ev(body=f"ok {i}")) for i in range(10)]
    committer = events._committer(db, 2000)
    outcome = await asyncio.gather(
        *ok, committer.submit(events._AppendRequest([bad], batch=False)), return_exceptions=True
    )
    assert all(not isinstance(o, BaseException) for o in outcome[:10])
    assert isinstance(outcome[10], IntegrityError)
    assert await count(db) == 10


async def test_a_client_that_goes_away_leaves_its_group_answered_and_its_write_done(
    db: TenantDb,
) -> None:
    """Cancelling one waiting append (a client that disconnected) cancels only its own
    wait: the group it shares is written and every other request in it answered; the
    writer keeps serving."""
    waiting = [asyncio.create_task(events.append_event(db, ev(body=f"w{i}"))) for i in range(20)]
    await asyncio.sleep(0)  # all of them queued for the writer
    waiting[3].cancel()
    done = await asyncio.gather(*waiting, return_exceptions=True)
    assert isinstance(done[3], asyncio.CancelledError)
    assert all(not isinstance(d, BaseException) for i, d in enumerate(done) if i != 3)
    assert await count(db) == 20  # the cancelled client's event was written with its group
    assert not (await events.append_event(db, ev(body="after"))).replayed
    assert await count(db) == 21


async def test_events_are_immutable_in_the_database(db: TenantDb) -> None:
    e = (await events.append_event(db, ev())).event
    refused: list[Executable] = [
        update(ev_t).values(body="rewritten"),
        update(ev_t).values(kind="other", compressed_at=None),
        update(ev_t).values(occurred_at=datetime(2020, 1, 1, tzinfo=UTC)),
        delete(ev_t),
    ]
    if db.engine.dialect.name == "postgresql":
        schema = postgres.tenant_schema(db.tenant_id)
        refused.append(text(f"TRUNCATE {schema}.memory_events, {schema}.memory_entry_sources"))
    for statement in refused:
        with pytest.raises(IntegrityError, match="append-only|immutable"):
            async with write_transaction(db.engine) as conn:
                await conn.execute(statement)
    async with write_transaction(db.engine) as conn:  # the compactor's update is allowed
        await conn.execute(update(ev_t).values(compressed_at=ev_t.c.recorded_at))
    stored = await events.get_event(db, e.id)
    assert stored is not None and stored.body == e.body and stored.compressed_at is not None


async def test_list_filters_and_order(db: TenantDb) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    await events.append_events(
        db,
        [
            ev(body="a", occurred_at=t0),
            ev(body="b", occurred_at=t0 + timedelta(days=1), kind="call_summary"),
            ev(body="c", occurred_at=t0 + timedelta(days=2), scope_ref="ent_beta"),
            ev(body="d", occurred_at=t0 + timedelta(days=3), scope=Scope.TEAM, scope_ref="u1"),
        ],
    )

    async def bodies(**kw: object) -> list[str]:
        page = await events.list_events(db, EventFilter(**kw), first=50, after=None)  # type: ignore[arg-type]
        return [e.node.body for e in page.edges]

    assert await bodies() == ["d", "c", "b", "a"]
    assert await bodies(scope=Scope.ENTITY) == ["c", "b", "a"]
    assert await bodies(scope=Scope.ENTITY, scope_ref="ent_acme") == ["b", "a"]
    assert await bodies(scope_ref="ent_beta") == ["c"]
    assert await bodies(kinds=["call_summary"]) == ["b"]
    assert await bodies(occurred_after=t0, occurred_before=t0 + timedelta(days=2)) == ["b"]
    assert await bodies(compressed=True) == []
    assert await bodies(compressed=False) == ["d", "c", "b", "a"]


async def test_pagination_is_stable_while_appending(db: TenantDb) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    await events.append_events(
        db, [ev(body=f"old {i}", occurred_at=t0 + timedelta(minutes=i)) for i in range(25)]
    )
    seen: list[str] = []
    after = None
    while True:
        page = await events.list_events(db, EventFilter(), first=7, after=after)
        seen += [e.node.body for e in page.edges]
        # New events (newer than everything) keep arriving between pages.
        await events.append_event(db, ev(body="new"))
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert seen[: seen.index("old 24") + 1] == seen[:1] + seen[1 : seen.index("old 24") + 1]
    old = [b for b in seen if b.startswith("old")]
    assert old == [f"old {i}" for i in reversed(range(25))]


async def test_bad_cursors_and_page_cap(db: TenantDb) -> None:
    for cursor in ("garbage", "W10", "WyJlbnRyaWVzIiwiYSIsImIiXQ"):
        with pytest.raises(InvalidInput) as info:
            await events.list_events(db, EventFilter(), first=5, after=cursor)
        assert info.value.field == ["after"]
    with pytest.raises(InvalidInput, match="capped at 100"):
        await events.list_events(db, EventFilter(), first=101, after=None)


async def test_search_events(db: TenantDb) -> None:
    await events.append_events(
        db,
        [
            ev(body="Client agreed to raise the ROAS target to 4.0"),
            ev(body="Weekly sync, nothing notable", kind="call_summary"),
            ev(body="ROAS dropped after the campaign change", scope_ref="ent_beta"),
        ],
    )
    page = await events.list_events(
        db,
        EventFilter(search="what is the ROAS target?", scope=Scope.ENTITY, scope_ref="ent_acme"),
        first=10,
        after=None,
    )
    assert [e.node.body for e in page.edges] == ["Client agreed to raise the ROAS target to 4.0"]
    assert page.edges[0].score is not None and page.edges[0].score > 0
    everywhere = await events.list_events(db, EventFilter(search="roas"), first=1, after=None)
    assert everywhere.has_next_page
    rest = await events.list_events(
        db, EventFilter(search="roas"), first=5, after=everywhere.end_cursor
    )
    assert len(rest.edges) == 1 and rest.edges[0].node.id != everywhere.edges[0].node.id


async def test_forged_cursor_values_and_naive_filters_are_client_errors(db: TenantDb) -> None:
    from app.services import cursors

    for forged in (
        cursors.encode("events", ["not a time", "evt_x"]),
        cursors.encode("events", ["2026-01-01T00:00:00", "evt_x"]),  # no time zone
        cursors.encode("events-search", [1.0, 2**70]),
    ):
        for flt in (EventFilter(), EventFilter(search="roas")):
            with pytest.raises(InvalidInput) as bad:
                await events.list_events(db, flt, first=5, after=forged)
            assert bad.value.field == ["after"]
    with pytest.raises(InvalidInput) as info:
        await events.list_events(
            db, EventFilter(occurred_after=datetime(2026, 1, 1)), first=5, after=None
        )
    assert info.value.field == ["occurredAfter"]


@pytest.mark.parametrize(
    "when",
    [datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))), datetime(1969, 12, 31, tzinfo=UTC)],
)
async def test_occurred_at_before_1970_is_refused(db: TenantDb, when: datetime) -> None:
    with pytest.raises(InvalidInput, match="after 1970"):
        await events.append_event(db, ev(occurred_at=when))


async def test_search_pagination_is_stable_while_appending(db: TenantDb) -> None:
    await events.append_events(
        db, [ev(body=f"ROAS note {i} " + "roas " * (i % 5)) for i in range(20)]
    )
    first = await events.list_events(db, EventFilter(search="roas"), first=10, after=None)
    # bm25 scores move with every append: new unrelated and matching events arrive.
    await events.append_events(db, [ev(body=f"unrelated filler {i} words") for i in range(200)])
    await events.append_events(db, [ev(body=f"new ROAS remark {i}") for i in range(5)])
    second = await events.list_events(
        db, EventFilter(search="roas"), first=50, after=first.end_cursor
    )
    seen = [e.node.body for e in first.edges + second.edges]
    assert len(seen) == len(set(seen)) == 20  # none skipped, none repeated, none new
    assert all(b.startswith("ROAS note") for b in seen)


async def test_pages_of_reused_statements_match_a_reference_across_filters(db: TenantDb) -> None:
    """list_events reuses one statement per filter shape with new values: every shape,
    run twice with different values and interleaved with the others, pages exactly as
    filtering and sorting in Python does, and list_events_next agrees with it."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    kinds = ["decision", "call_summary", "campaign_change"]
    refs = ["ent_acme", "ent_beta"]
    batch = [
        ev(
            body=f"e{i}",
            kind=kinds[i % 3],
            scope_ref=refs[i % 2],
            # ties on occurredAt, broken by id
            occurred_at=t0 + timedelta(hours=i // 3, microseconds=(i % 2) * 7),
        )
        for i in range(36)
    ] + [
        ev(body=f"t{i}", scope=Scope.TEAM, scope_ref="u1", occurred_at=t0 + timedelta(hours=i))
        for i in range(4)
    ]
    stored = [a.event for a in await events.append_events(db, batch)]
    compressed = {e.id for e in stored[::4]}
    async with write_transaction(db.engine) as conn:
        await conn.execute(update(ev_t).where(ev_t.c.id.in_(compressed)).values(compressed_at=t0))

    def reference(f: EventFilter) -> list[str]:
        chosen = [
            e
            for e in stored
            if (f.scope is None or e.scope == f.scope)
            and (f.scope_ref is None or e.scope_ref == f.scope_ref)
            and (not f.kinds or e.kind in f.kinds)
            and (f.occurred_after is None or e.occurred_at > f.occurred_after)
            and (f.occurred_before is None or e.occurred_at < f.occurred_before)
            and (f.compressed is None or (e.id in compressed) == f.compressed)
        ]
        return [e.id for e in sorted(chosen, key=lambda e: (e.occurred_at, e.id), reverse=True)]

    async def walk(f: EventFilter, first: int) -> list[str]:
        got: list[str] = []
        after = after_next = None
        while True:
            page = await events.list_events(db, f, first=first, after=after)
            nodes, next_cursor = await events.list_events_next(db, f, first=first, after=after_next)
            assert [e.node for e in page.edges] == nodes
            assert next_cursor == (page.end_cursor if page.has_next_page else None)
            for e in page.edges:  # every edge's cursor continues right after it
                rest = await events.list_events(db, f, first=1, after=e.cursor)
                later = got + [x.node.id for x in page.edges]
                i = later.index(e.node.id)
                assert [x.node.id for x in rest.edges] == reference(f)[i + 1 : i + 2]
            got += [e.node.id for e in page.edges]
            assert len(page.edges) <= first
            if not page.has_next_page:
                return got
            assert page.edges
            after, after_next = page.end_cursor, next_cursor

    t5 = t0 + timedelta(hours=5)
    shapes = [
        lambda v: EventFilter(),
        lambda v: EventFilter(scope=Scope.ENTITY, scope_ref=refs[v]),
        lambda v: EventFilter(scope=[Scope.ENTITY, Scope.TEAM][v]),
        lambda v: EventFilter(scope_ref=["ent_beta", "u1"][v]),
        lambda v: EventFilter(kinds=[["decision"], ["call_summary", "campaign_change"]][v]),
        lambda v: EventFilter(occurred_after=t0 + timedelta(hours=2 + v), compressed=bool(v)),
        lambda v: EventFilter(
            occurred_before=t5 + timedelta(microseconds=7 * v), compressed=not v, kinds=kinds[v:]
        ),
        lambda v: EventFilter(
            scope=Scope.ENTITY,
            scope_ref="ent_acme",
            occurred_after=t0,
            occurred_before=t5 + timedelta(hours=v),
        ),
    ]
    for v in (0, 1):
        for first in (1, 4, 50):
            for shape in shapes:
                f = shape(v)
                assert await walk(f, first) == reference(f), (f, first)
                assert reference(f), f  # every filter finds something


async def test_a_dying_writer_fails_its_requests_instead_of_hanging(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    committer = events._committer(db, 2000)

    async def broken(*_: object) -> None:
        raise AssertionError("a bug in the writer itself")

    monkeypatch.setattr(committer, "_commit", broken)
    with pytest.raises(AssertionError):
        await asyncio.wait_for(events.append_event(db, ev(body="lost?")), timeout=5)
    monkeypatch.undo()
    # The next append starts a new writer and succeeds.
    assert not (await events.append_event(db, ev(body="after"))).replayed
    assert await count(db) == 1


# -------------------------------------------- NUL characters and long filter lists

NUL = "ref\x00x"


async def test_a_nul_in_an_id_or_a_filter_value_finds_nothing(db: TenantDb) -> None:
    """No stored text holds NUL (PostgreSQL's text cannot), so an id or a filter value with
    one matches nothing: the same answer on both backends, never a database error."""
    await events.append_event(db, ev())
    assert await events.get_event(db, "evt_\x00") is None
    for flt in (
        EventFilter(kinds=[NUL]),
        EventFilter(kinds=["decision", NUL]),
        EventFilter(scope_ref=NUL),
        EventFilter(kinds=[NUL], search="budget"),
        EventFilter(scope_ref=NUL, search="budget"),
    ):
        page = await events.list_events(db, flt, first=10, after=None)
        assert page.edges == [] and not page.has_next_page, flt
        assert await events.list_events_next(db, flt, first=10, after=None) == ([], None)
    # With a scope, scopeRef is checked as on writes: a clear error naming it.
    with pytest.raises(InvalidInput) as err:
        await events.list_events(
            db, EventFilter(scope=Scope.ENTITY, scope_ref=NUL), first=10, after=None
        )
    assert err.value.field == ["scopeRef"]
    # A forged cursor carrying NUL is not a cursor of this list.
    forged = cursors.encode("events", [datetime.now(UTC).isoformat(), "evt_\x00"])
    with pytest.raises(InvalidInput) as err:
        await events.list_events(db, EventFilter(), first=10, after=forged)
    assert err.value.field == ["after"]


@pytest.mark.parametrize("n", [limits.FILTER_VALUES_MAX + 1, 40_000])
async def test_a_kinds_list_over_its_cap_is_too_large(db: TenantDb, n: int) -> None:
    kinds = [f"kind_{i}" for i in range(n)]
    for call in (events.list_events, events.list_events_next):
        with pytest.raises(TooLarge) as err:
            await call(db, EventFilter(kinds=kinds), first=10, after=None)
        assert err.value.field == ["kinds"]
        assert str(limits.FILTER_VALUES_MAX) in err.value.message


async def test_a_full_kinds_list_is_one_parameter(db: TenantDb) -> None:
    """A list at its cap reads as a short one (bound as one parameter: the statement does
    not grow with it), with and without a search."""
    await events.append_events(db, [ev(kind="decision"), ev(kind="note"), ev(kind="call")])
    kinds = ["decision", "note"] + [f"kind_{i}" for i in range(limits.FILTER_VALUES_MAX - 2)]
    page = await events.list_events(db, EventFilter(kinds=kinds), first=10, after=None)
    assert sorted(e.node.kind for e in page.edges) == ["decision", "note"]
    found = await events.list_events(
        db, EventFilter(kinds=kinds, search="budget"), first=10, after=None
    )
    assert sorted(e.node.kind for e in found.edges) == ["decision", "note"]


async def test_a_lone_surrogate_finds_no_id_and_is_refused_in_a_filter(db: TenantDb) -> None:
    """Not UTF-8, so never stored: an id holding one is found nowhere; a filter value
    holding one is refused naming the field, rather than an encoding error."""
    await events.append_event(db, ev())
    bad = "ref\ud800x"
    assert await events.get_event(db, bad) is None
    for flt, field in (
        (EventFilter(kinds=[bad]), ["kinds", "0"]),
        (EventFilter(scope_ref=bad), ["scopeRef"]),
        (EventFilter(scope_ref=bad, search="budget"), ["scopeRef"]),
    ):
        with pytest.raises(InvalidInput) as refused:
            await events.list_events_next(db, flt, first=10, after=None)
        assert refused.value.field == field, flt
