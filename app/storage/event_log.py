"""Writing events into the log, per backend: the rows, and (SQLite) their search index.

One call per write transaction (the group commit's): on SQLite the events are inserted and
indexed for search in that transaction, so they are searchable the moment the append is
acknowledged and never indexed without being stored.
"""

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import Protocol

import orjson
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage import fulltext
from app.storage.models import events_table as ev
from app.storage.types import sqlite_text


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


_COLUMNS = (
    "id", "scope", "scope_ref", "kind", "body", "source", "source_ref", "occurred_at",
    "recorded_at", "idempotency_key",
)  # fmt: skip
_INSERT_SQLITE = (
    f"INSERT INTO memory_events ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
)


async def insert_events(conn: AsyncConnection, events: Sequence[Event]) -> None:
    """PostgreSQL: insert new events (compressed_at and compressed_into empty) inside the
    caller's write transaction. search_vector is a generated column: nothing else to
    write. (SQLite: `insert_events_sqlite`.)"""
    if conn.dialect.name != "postgresql":
        raise ValueError("insert_events is PostgreSQL's; SQLite's is insert_events_sqlite")
    await conn.execute(insert(ev), [_row(e) for e in events])


def insert_events_sqlite(conn: sqlite3.Connection, events: Sequence[Event]) -> None:
    """SQLite: insert new events and index them for search, inside the write transaction
    open on `conn` (app.storage.engine.write_on_thread), on the connection's thread."""
    # The rows to index are exactly those above the highest seq read before the INSERT:
    # the write transaction (BEGIN IMMEDIATE) holds SQLite's write lock, so no other writer
    # adds a row in between. If anything fails the whole transaction rolls back, index rows
    # with it (the group commit then retries each request in a transaction of its own,
    # which reads its own starting point).
    (after,) = conn.execute(fulltext.LAST_EVENT_SEQ_SQL).fetchone()
    # Positional tuples straight to sqlite3, not SQLAlchemy's per-row parameter processing
    # (construct_params, then two processors per timestamp: about a third of the event
    # loop's time in a 500-event batch, py-spy of `http_bench --only batch`). The values
    # are the ones SQLAlchemy would bind: text columns as they are, timestamps as
    # UTCDateTime binds them on SQLite (`sqlite_text`, held equal by tests/storage/
    # test_types.py). A group shares its `recorded_at`, and most events their
    # `occurred_at` with it, so each distinct timestamp is formatted once.
    texts: dict[object, str] = {}
    rows = []
    for e in events:
        occurred = texts.get(e.occurred_at)
        if occurred is None:
            occurred = texts[e.occurred_at] = sqlite_text(e.occurred_at)
        recorded = texts.get(e.recorded_at)
        if recorded is None:
            recorded = texts[e.recorded_at] = sqlite_text(e.recorded_at)
        rows.append((
            e.id, e.scope.value, e.scope_ref, e.kind, e.body, e.source, e.source_ref,
            occurred, recorded, e.idempotency_key,
        ))  # fmt: skip
    payload = _json_rows(rows) if len(rows) >= JSON_INSERT_ROWS else None
    if payload is None:
        conn.executemany(_INSERT_SQLITE, rows)
    else:
        conn.execute(_INSERT_SQLITE_JSON, (payload,))
    conn.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})


# A large group's rows in ONE statement: json_each unpacks a JSON array of row arrays
# inside SQLite. executemany steps SQLite once per row, and sqlite3 releases and takes back
# the GIL around every step: with the event loop busy, each take-back waits for the loop to
# let go (up to sys.getswitchinterval(), 5 ms), so a 500-row insert crawled while requests
# were being parsed. One statement takes the GIL back once, and SQLite's JSON parsing runs
# on the other CPU meanwhile. Batches of 500: 39-53 -> 56-66 requests/s (http_bench --only
# batch, 2 alternating pairs, 06:21-06:23). A group of single appends (~32 rows) is better
# off with executemany (the JSON costs more than the waits: 5,190-6,140 -> 4,664-5,349
# events/s through REST, http_bench --only append, 06:23-06:26). (A body may not hold a
# NUL character, which SQLite's JSON functions would end it at: app/services/validation.)
JSON_INSERT_ROWS = 100
_INSERT_SQLITE_JSON = (
    f"INSERT INTO memory_events ({', '.join(_COLUMNS)}) SELECT "
    + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(_COLUMNS)))
    + " FROM json_each(?)"
)


def _json_rows(rows: Sequence[tuple[object, ...]]) -> bytes | None:
    try:
        return orjson.dumps(rows)
    except TypeError:  # a lone surrogate: sqlite3's own binding reports it
        return None


def _row(e: Event) -> dict[str, object]:
    return {
        "id": e.id, "scope": e.scope.value, "scope_ref": e.scope_ref, "kind": e.kind,
        "body": e.body, "source": e.source, "source_ref": e.source_ref,
        "occurred_at": e.occurred_at, "recorded_at": e.recorded_at,
        "compressed_at": None, "compressed_into": None, "idempotency_key": e.idempotency_key,
    }  # fmt: skip
