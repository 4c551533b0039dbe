"""Column types shared by both databases."""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

_fromisoformat = datetime.fromisoformat


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in Python, naive UTC in SQLite (which has no time zones),
    `timestamptz` in PostgreSQL.

    Every timestamp is stored in UTC so ISO text sorts in time order and keyset
    cursors compare correctly.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected datetime, got {type(value).__name__}")
        if value.tzinfo is None:
            raise ValueError("naive datetime: every timestamp must carry a time zone")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def result_processor(
        self, dialect: Dialect, coltype: Any
    ) -> Callable[[Any], datetime | None] | None:
        """One function per value instead of TypeDecorator's three (its closure, the
        dialect's parser, then process_result_value), each a Python call: a page of 50
        events converts 150 timestamps. The same values as the general path, which
        stays the fallback for anything unexpected."""
        general = super().result_processor(dialect, coltype)
        assert general is not None

        if dialect.name == "sqlite":
            # SQLAlchemy's SQLite DATETIME stores naive UTC as "YYYY-MM-DD HH:MM:SS.ffffff"
            # and parses it with datetime.fromisoformat; appending the offset makes that one
            # parse return the aware value (.replace(tzinfo=...) costs ~10x the parse).
            def from_sqlite(value: Any) -> datetime | None:
                if value is None:
                    return None
                if value.__class__ is str:
                    try:
                        parsed = _fromisoformat(value + "+00:00")
                    except ValueError:  # e.g. text that carries its own offset
                        return general(value)
                    if parsed.tzinfo is UTC:  # not so for a date alone: it drops the offset
                        return parsed
                return general(value)

            return from_sqlite

        def from_aware(value: Any) -> datetime | None:
            # asyncpg hands timestamptz back as aware datetimes in datetime.UTC already.
            if value is None:
                return None
            if value.__class__ is datetime and value.tzinfo is UTC:
                return value
            return general(value)

        return from_aware


def sqlite_text(value: datetime) -> str:
    """The text UTCDateTime binds for `value` on SQLite ("YYYY-MM-DD HH:MM:SS.ffffff", naive
    UTC: SQLAlchemy's DATETIME storage format), for writers that hand rows to the driver
    themselves (app/storage/event_log.py). One C call instead of TypeDecorator's two
    processors per value; tests/storage/test_types.py holds the two equal."""
    if value.tzinfo is None:
        raise ValueError("naive datetime: every timestamp must carry a time zone")
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def utcnow() -> datetime:
    return datetime.now(UTC)
