"""InlineReader (app/storage/sqlite/fastpath/inline_reader.py): the events page read with
sqlite3 on the event loop's thread gives exactly what SQLAlchemy's execution gives, and
hands over to the engine whenever it will not answer (an expanding IN list, over its
budget, an error)."""

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app.config import Settings
from app.services import events
from app.services.records import Event, EventFilter, EventIn, Scope
from app.storage import reads
from app.storage.models import events_table
from app.storage.sqlite.fastpath import compiled as engine_module
from app.storage.sqlite.fastpath.inline_reader import InlineReader
from app.storage.tenants import TenantDb

pytestmark = pytest.mark.sqlite_only  # SQLite's own connection


@pytest.fixture(autouse=True)
def _fast_path_only(settings: Settings) -> None:
    if not settings.sqlite_fast_path:
        pytest.skip("the InlineReader is the SQLite fast path's (JET_SQLITE_FAST_PATH=0)")


T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def _seed(db: TenantDb) -> None:
    batch = [
        EventIn(
            scope=(Scope.ENTITY, Scope.TEAM)[i % 2],
            scope_ref=f"ref-{i % 3}",
            kind=("call_summary", "decision", "note")[i % 3],
            body=f"event {i}: ünïcode, 'quotes', 20% budget",
            source=None if i % 4 else "crm",
            source_ref=None if i % 5 else f"crm-{i}",
            # Ties on occurred_at (every third pair) exercise the id tie-break of cursors.
            occurred_at=T0 + timedelta(minutes=i // 2, microseconds=7 * (i % 3)),
            idempotency_key=None if i % 6 else f"key-{i}",
        )
        for i in range(60)
    ]
    await events.append_events(db, batch)


async def _all_pages(db: TenantDb, flt: EventFilter, first: int) -> list[list[Event]]:
    pages, after = [], None
    while True:
        page = await events.list_events(db, flt, first=first, after=after)
        pages.append([e.node for e in page.edges])
        if not page.has_next_page:
            return pages
        after = page.end_cursor


def _filters() -> list[EventFilter]:
    out = []
    for scope, ref, after, before, compressed in itertools.product(
        (None, Scope.ENTITY),
        (None, "ref-1"),
        (None, T0 + timedelta(minutes=3)),
        (None, T0 + timedelta(minutes=25)),
        (None, False, True),
    ):
        out.append(
            EventFilter(
                scope=scope,
                scope_ref=ref,
                occurred_after=after,
                occurred_before=before,
                compressed=compressed,
            )
        )
    return out


async def test_pages_equal_the_engines_for_every_filter_shape(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _seed(db)
    reader = db.inline_reader()
    assert isinstance(reader, InlineReader)
    answered = 0
    original = InlineReader.rows

    def counting(self: InlineReader, *args: Any) -> Any:
        nonlocal answered
        rows = original(self, *args)
        answered += rows is not None
        return rows

    monkeypatch.setattr(InlineReader, "rows", counting)
    for flt in _filters():
        for first in (1, 7, 100):
            via_reader = await _all_pages(db, flt, first)
            with monkeypatch.context() as m:
                m.setattr(TenantDb, "inline_reader", lambda self: None)
                via_engine = await _all_pages(db, flt, first)
            assert via_reader == via_engine, flt
    assert answered > 100  # the reader really answered the pages compared above
    page = await events.list_events(db, EventFilter(), first=100, after=None)
    assert len(page.edges) == 60
    e = page.edges[0].node
    assert e.occurred_at.tzinfo is UTC and e.recorded_at.tzinfo is UTC


async def test_what_the_reader_will_not_answer_goes_to_the_engine(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _seed(db)
    reader = db.inline_reader()
    assert reader is not None
    fallbacks = 0
    original = reads.read_rows

    async def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal fallbacks
        fallbacks += 1
        return await original(*args, **kwargs)

    monkeypatch.setattr(reads, "read_rows", counting)
    # A busy machine's pace never runs out of this budget (only the case below should).
    monkeypatch.setattr(engine_module, "INLINE_BUDGET_S", 60.0)
    # A statement with an expanding IN list is not compiled for the reader.
    expanding = select(*events.COLUMNS).where(events_table.c.kind.in_(["decision"]))
    rows = await reads.index_rows(db, expanding, {})
    assert {r[3] for r in rows} == {"decision"} and len(rows) == 20
    assert fallbacks == 1
    # A list bound as one parameter (app/storage/lists.py) is: the reader answers it.
    kinds = EventFilter(kinds=["decision"])
    page = await events.list_events(db, kinds, first=100, after=None)
    assert {e.node.kind for e in page.edges} == {"decision"} and len(page.edges) == 20
    assert fallbacks == 1
    # Over the budget at the first progress-handler tick: interrupted, then the engine.
    monkeypatch.setattr(engine_module, "INLINE_BUDGET_S", 0.0)
    page = await events.list_events(db, EventFilter(), first=100, after=None)
    assert len(page.edges) == 60
    assert fallbacks == 2
    monkeypatch.setattr(engine_module, "INLINE_BUDGET_S", 60.0)
    await events.list_events(db, EventFilter(), first=5, after=None)
    assert fallbacks == 2  # answered inline again


async def test_a_reader_that_cannot_open_answers_none_and_creates_nothing(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.db"
    stmt = events._list_statement(("limit",), None)
    assert InlineReader(missing).rows(stmt, {"limit": 5}) is None
    assert not missing.exists()


async def test_the_reader_is_read_only_and_closes_with_its_database(db: TenantDb) -> None:
    await _seed(db)
    reader = db.inline_reader()
    assert reader is not None and db.inline_reader() is reader  # one per database
    stmt = events._list_statement(("limit",), None)
    assert reader.rows(stmt, {"limit": 3}) is not None
    conn = reader._conn
    assert conn is not None
    with pytest.raises(Exception, match="readonly|read-only|attempt to write"):
        conn.execute("INSERT INTO memory_events (id) VALUES ('x')")
    await db.close()
    assert reader._conn is None
