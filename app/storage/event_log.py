"""Writing events into the log, per backend: the rows, and (SQLite) their search index,
in the caller's write transaction; `append_batch` adds the idempotency keys' lock and read.

On SQLite the events are inserted and indexed for search in one transaction, so they are
searchable the moment the append is acknowledged and never indexed without being stored.
"""

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from enum import Enum
from typing import Any, Protocol, TypeVar

from sqlalchemy import Select, insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage import scopes, transactions
from app.storage.changes import outbox
from app.storage.group_commit import GroupCommitter
from app.storage.lists import in_list
from app.storage.models import events_table as ev
from app.storage.search import fulltext
from app.storage.sqlite.fastpath import Rows, append_batch_on_thread
from app.storage.sqlite.writer_lock import WriterLock
from app.storage.types import sqlite_text

# The columns of an event as the services read it: every column but the table's own key
# (app.services.events reads them by name into its record).
COLUMNS = [c for c in ev.columns if c.name != "seq"]

_R = TypeVar("_R")
Req = TypeVar("Req")
Res = TypeVar("Res")


class Event(Protocol):
    """What is written of an event (app.services.records.Event has it)."""

    @property
    def id(self) -> str: ...
    @property
    def scope(self) -> Enum: ...
    @property
    def scope_ref(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def source(self) -> str | None: ...
    @property
    def source_ref(self) -> str | None: ...
    @property
    def occurred_at(self) -> datetime: ...
    @property
    def recorded_at(self) -> datetime: ...
    @property
    def idempotency_key(self) -> str | None: ...


# Given the rows (COLUMNS) of the events already stored under a batch's idempotency keys:
# the batch's answer and the new events to insert.
Decide = Callable[[Sequence[Any]], tuple[_R, Sequence[Event]]]

_INSERT_COLUMNS = (
    "id",
    "scope",
    "scope_ref",
    "kind",
    "body",
    "source",
    "source_ref",
    "occurred_at",
    "recorded_at",
    "idempotency_key",
)
# The events stored under any of a list of idempotency keys, through the key's unique
# index: one statement (the list one bound parameter) whatever the number of keys.
BY_KEYS: Select[Any] = select(*COLUMNS).where(in_list(ev.c.idempotency_key, "keys"))


async def append_batch(conn: AsyncConnection, keys: Collection[str], decide: Decide[_R]) -> _R:
    """Inside the caller's write transaction: wait for any other writer of the same
    idempotency keys (another process may be appending one right now: the second then
    finds the first's event, a replay or a conflict, never a unique-key error), read the
    events stored under them, and insert the events `decide` returns."""
    rows: Sequence[Any] = ()
    if keys:
        await transactions.serialize(conn, *(f"idempotency/{k}" for k in sorted(keys)))
        rows = (await conn.execute(BY_KEYS, {"keys": sorted(keys)})).all()
    result, to_insert = decide(rows)
    if to_insert:
        await insert_events(conn, to_insert)
    return result


async def insert_events(conn: AsyncConnection, events: Sequence[Event]) -> None:
    """Insert new events (compressed_at and compressed_into empty) inside the caller's
    write transaction, indexed for search (PostgreSQL: a generated column; SQLite: the
    rows above the highest seq before the insert, see fulltext.INDEX_EVENTS_SQL) and
    announced in the outbox (app.storage.changes.outbox) and counted in their scopes' summary
    (app.storage.scopes)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(insert(ev), [_row(e) for e in events])
        ids = [e.id for e in events]
        await outbox.announce_events(conn, ids)
        await scopes.count_events(conn, ids)
        return
    after = (await conn.execute(text(fulltext.LAST_EVENT_SEQ_SQL))).scalar_one()
    await conn.execute(insert(ev), [_row(e) for e in events])
    await conn.execute(text(fulltext.INDEX_EVENTS_SQL), {"after": after})
    await conn.execute(text(outbox.ANNOUNCE_EVENTS_SQL), {"after": after})
    await conn.execute(text(scopes.COUNT_EVENTS_SQL), {"after": after})


def group_committer(
    engine: AsyncEngine,
    *,
    keys: Callable[[Sequence[Req]], Collection[str]],
    decide: Callable[
        [Sequence[Req], Sequence[Any]], tuple[list[Res | BaseException], Sequence[Event]]
    ],
    size: Callable[[Req], int],
    max_size: int,
) -> GroupCommitter[Req, Res]:
    """A group commit of append requests: each group is one `append_batch` of every
    request's keys, `decide(requests, stored rows)` answering each request (with the SQLite
    fast path, the whole transaction is one call on aiosqlite's thread)."""

    async def apply(conn: AsyncConnection, requests: Sequence[Req]) -> list[Res | BaseException]:
        return await append_batch(conn, keys(requests), lambda rows: decide(requests, rows))

    def apply_on_thread(conn: Any, requests: Sequence[Req]) -> list[Res | BaseException]:
        def decide_rows(rows: Sequence[Any]) -> tuple[list[Res | BaseException], Rows]:
            result, to_insert = decide(requests, rows)
            return result, _sqlite_rows(to_insert)

        return append_batch_on_thread(conn, BY_KEYS, keys(requests), decide_rows, _INSERT_COLUMNS)

    # Writers of one SQLite file in other processes (serve --workers) queue on its lock.
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    writer_lock = WriterLock(database) if database and database != ":memory:" else None
    return GroupCommitter(
        engine,
        apply,
        apply_on_thread=apply_on_thread,
        size=size,
        max_size=max_size,
        writer_lock=writer_lock,
    )


def _sqlite_rows(events: Sequence[Event]) -> list[tuple[object, ...]]:
    """Positional tuples straight for sqlite3 (_INSERT_COLUMNS), not SQLAlchemy's per-row
    parameter processing (construct_params, then two processors per timestamp: about a
    third of the event loop's time in a 500-event batch). The values are the ones
    SQLAlchemy would bind: text columns as they are, timestamps as UTCDateTime binds them on
    SQLite (`sqlite_text`, held equal by tests/storage/test_types.py). A group shares its
    `recorded_at`, and most events their `occurred_at` with it, so each distinct timestamp
    is formatted once."""
    texts: dict[object, str] = {}
    rows: list[tuple[object, ...]] = []
    for e in events:
        occurred = texts.get(e.occurred_at)
        if occurred is None:
            occurred = texts[e.occurred_at] = sqlite_text(e.occurred_at)
        recorded = texts.get(e.recorded_at)
        if recorded is None:
            recorded = texts[e.recorded_at] = sqlite_text(e.recorded_at)
        rows.append(
            (
                e.id,
                e.scope.value,
                e.scope_ref,
                e.kind,
                e.body,
                e.source,
                e.source_ref,
                occurred,
                recorded,
                e.idempotency_key,
            )
        )
    return rows


def _row(e: Event) -> dict[str, object]:
    return {
        "id": e.id,
        "scope": e.scope.value,
        "scope_ref": e.scope_ref,
        "kind": e.kind,
        "body": e.body,
        "source": e.source,
        "source_ref": e.source_ref,
        "occurred_at": e.occurred_at,
        "recorded_at": e.recorded_at,
        "compressed_at": None,
        "compressed_into": None,
        "idempotency_key": e.idempotency_key,
    }
