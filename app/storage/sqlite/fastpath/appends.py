"""The event log's group commit in plain sqlite3, inside `write_on_thread`'s transaction:
the idempotency-key read, the insert (executemany, or one JSON statement for a large
group) and the search index, with no SQLAlchemy execution layer between them."""

import sqlite3
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import orjson
from sqlalchemy import Select

from app.storage import scopes
from app.storage.changes import outbox
from app.storage.search import fulltext
from app.storage.sqlite.fastpath.compiled import fetch_rows

_R = TypeVar("_R")
# The row tuples to insert, in the order of the columns named to `append_batch_on_thread`.
Rows = Sequence[tuple[object, ...]]


def append_batch_on_thread(
    conn: sqlite3.Connection,
    by_keys: Select[Any],
    keys: Collection[str],
    decide: Callable[[Sequence[Any]], tuple[_R, Rows]],
    columns: Sequence[str],
) -> _R:
    """event_log.append_batch on `conn`'s thread: the rows stored under `keys` (by the
    statement `by_keys`, its list bound as `keys`), `decide`'s answer and rows to insert,
    inserted and indexed. BEGIN IMMEDIATE already serialises writers: no lock to take."""
    rows: Sequence[Any] = fetch_rows(conn, by_keys, {"keys": sorted(keys)}) if keys else ()
    result, to_insert = decide(rows)
    if to_insert:
        insert_rows(conn, to_insert, columns)
    return result


def insert_rows(conn: sqlite3.Connection, rows: Rows, columns: Sequence[str]) -> None:
    """Insert event rows (tuples of `columns`), index them for search, announce them in
    the outbox and count them in their scopes' summary."""
    # The rows to index are exactly those above the highest seq read before the INSERT:
    # the write transaction (BEGIN IMMEDIATE) holds SQLite's write lock, so no other writer
    # adds a row in between. If anything fails the whole transaction rolls back, index rows
    # with it.
    (after,) = conn.execute(fulltext.LAST_EVENT_SEQ_SQL).fetchone()
    payload = _json_rows(rows) if len(rows) >= JSON_INSERT_ROWS else None
    if payload is None:
        conn.executemany(_insert_sql(columns), rows)
    else:
        conn.execute(_insert_json_sql(columns), (payload,))
    conn.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})
    conn.execute(outbox.ANNOUNCE_EVENTS_SQL, {"after": after})
    conn.execute(scopes.COUNT_EVENTS_SQL, {"after": after})


def _insert_sql(columns: Sequence[str]) -> str:
    return (
        f"INSERT INTO memory_events ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )


# A large group's rows in ONE statement: json_each unpacks a JSON array of row arrays
# inside SQLite. executemany steps SQLite once per row, and sqlite3 releases and takes back
# the GIL around every step: with the event loop busy, each take-back waits for the loop to
# let go, so a large insert crawled while requests were being parsed; one statement takes
# the GIL back once. A small group (a few single appends) is better off with executemany,
# where the JSON costs more than the waits (docs/benchmarks.md has the figures). A body
# may not hold a NUL character, which SQLite's JSON functions would end it at.
JSON_INSERT_ROWS = 100


def _insert_json_sql(columns: Sequence[str]) -> str:
    return (
        f"INSERT INTO memory_events ({', '.join(columns)}) SELECT "
        + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
        + " FROM json_each(?)"
    )


def _json_rows(rows: Sequence[tuple[object, ...]]) -> bytes | None:
    try:
        return orjson.dumps(rows)
    except TypeError:  # a lone surrogate: sqlite3's own binding reports it
        return None
