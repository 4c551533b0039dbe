"""UTCDateTime: aware UTC datetimes out of both databases, to the microsecond, and its
one-call result processors give what TypeDecorator's general path gives."""

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from app.services import entries, events
from app.services.records import EntryIn, EventFilter, EventIn, Scope
from app.storage.models import events_table as ev_t
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction, write_transaction
from app.storage.types import UTCDateTime, sqlite_text

INSTANTS = [
    datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2000, 2, 29, 23, 59, 59, tzinfo=UTC),
    datetime(2026, 3, 4, 5, 6, 7, 120000, tzinfo=UTC),
    datetime(2026, 3, 4, 5, 6, 7, 999999, tzinfo=UTC),
    datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2026, 3, 4, 23, 30, tzinfo=timezone(timedelta(hours=-8))),  # next day in UTC
]


async def test_timestamps_round_trip_as_aware_utc(db: TenantDb) -> None:
    entry = await entries.create_entry(
        db, EntryIn(scope=Scope.ENTITY, scope_ref="ent_acme", title="t", summary="s")
    )
    appended = await events.append_events(
        db,
        [
            EventIn(
                scope=Scope.ENTITY,
                scope_ref="ent_acme",
                kind="decision",
                body=f"b{i}",
                occurred_at=at,
            )
            for i, at in enumerate(INSTANTS)
        ],
    )
    compressed_at = datetime(2026, 5, 6, 7, 8, 9, 10, tzinfo=timezone(timedelta(hours=2)))
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            update(ev_t)
            .where(ev_t.c.id == appended[0].event.id)
            .values(compressed_at=compressed_at, compressed_into=entry.id)
        )

    def check(value: datetime | None, expected: datetime | None) -> None:
        if expected is None:
            assert value is None
            return
        assert value is not None
        assert value.tzinfo is UTC and value.utcoffset() == timedelta(0)
        assert value == expected
        assert value.replace(tzinfo=None) == expected.astimezone(UTC).replace(tzinfo=None)

    for a, at in zip(appended, INSTANTS, strict=True):
        got = await events.get_event(db, a.event.id)
        assert got is not None
        check(got.occurred_at, at)
        check(got.recorded_at, a.event.recorded_at)
        check(got.compressed_at, compressed_at if a is appended[0] else None)
        assert got.compressed_into == (entry.id if a is appended[0] else None)
    page = await events.list_events(db, EventFilter(), first=50, after=None)
    assert [e.node.occurred_at for e in page.edges] == sorted(INSTANTS, reverse=True)
    for e in page.edges:
        check(e.node.occurred_at, e.node.occurred_at.astimezone(UTC))
    async with read_transaction(db.engine) as conn:
        column = (await conn.execute(select(ev_t.c.occurred_at))).scalars().all()
    assert sorted(column) == sorted(INSTANTS)
    assert all(v.tzinfo is UTC for v in column)


def processors(dialect: Dialect) -> tuple[Any, Any]:
    """UTCDateTime's processor for `dialect`, as SQLAlchemy gets it, and TypeDecorator's
    own: the dialect's parser, then process_result_value."""
    impl = UTCDateTime().dialect_impl(dialect)
    fast = impl.result_processor(dialect, None)
    assert fast is not None
    return fast, TypeDecorator.result_processor(impl, dialect, None)


def test_sqlite_processor_matches_the_general_path() -> None:
    dialect = sqlite.dialect()
    fast, slow = processors(dialect)
    values = [
        None,
        "2026-03-04 05:06:07.000089",  # what SQLAlchemy's SQLite DATETIME writes
        "2026-03-04 05:06:07.000000",
        "1970-01-01 00:00:00.000001",
        "9999-12-31 23:59:59.999999",
        "2026-03-04 05:06:07",  # e.g. SQLite's CURRENT_TIMESTAMP
        "2026-03-04T05:06:07.5",
        "2026-03-04",
        "2026-03-04 05:06:07.000089+02:00",  # text with its own offset: converted to UTC
        "2026-03-04T05:06:07Z",
    ]
    for value in values:
        got = fast(value)
        assert got == slow(value), value
        assert got is None or (got.tzinfo is UTC and got.utcoffset() == timedelta(0))
    assert fast("2026-03-04 05:06:07.000089+02:00") == datetime(2026, 3, 4, 3, 6, 7, 89, UTC)
    with pytest.raises(ValueError):
        fast("not a time")
    # Binds still store naive UTC text.
    bind = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert bind is not None
    at = datetime(2026, 3, 4, 7, 6, 7, 89, tzinfo=timezone(timedelta(hours=2)))
    assert fast(bind(at)) == at


def test_postgresql_processor_matches_the_general_path() -> None:
    dialect = postgresql.asyncpg.dialect()  # type: ignore[attr-defined]
    fast, slow = processors(dialect)
    at = datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=UTC)
    assert fast(at) is at
    assert fast(None) is None
    for value in [
        at,
        at.astimezone(timezone(timedelta(hours=-3))),
        at.replace(tzinfo=None),
        at.replace(tzinfo=timezone(timedelta(0))),
    ]:
        got = fast(value)
        assert got == slow(value) and got is not None and got.tzinfo is UTC


@pytest.mark.parametrize("at", [*INSTANTS, datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)])
def test_sqlite_text_is_the_text_utcdatetime_binds(at: datetime) -> None:
    # The event writer hands rows to the driver with sqlite_text: the stored text must be
    # byte for byte what SQLAlchemy binds, or comparisons and keyset cursors on these
    # columns (text in SQLite) would order wrongly.
    dialect = sqlite.dialect()
    bind = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert bind is not None
    assert sqlite_text(at) == bind(at)
    with pytest.raises(ValueError, match="naive"):
        sqlite_text(at.replace(tzinfo=None))
