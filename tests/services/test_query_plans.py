"""The entry queries whose speed rests on one index, checked with EXPLAIN QUERY PLAN on a
migrated tenant database: the plan SQLite picks is the same at 10 rows as at 100,000."""

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import event

from app.services import entries
from app.services.context.loader import load_context
from app.services.records import EntryFilter, EntryIn, Scope
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction

pytestmark = pytest.mark.sqlite_only  # SQLite's EXPLAIN QUERY PLAN

ACME = "acme-outdoor"


async def plans_of(db: TenantDb, call: Callable[[], Awaitable[Any]]) -> list[list[str]]:
    """The plan of every ordered query on memory_entries (not its FTS table) `call` runs."""
    sent: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, params: Any, *_: Any) -> None:
        sql = " ".join(statement.split())
        if "FROM memory_entries WHERE" in sql and "ORDER BY" in sql:
            sent.append((statement, params))

    engine = db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", capture)
    try:
        await call()
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert sent, "no query on memory_entries was run"
    async with read_transaction(db.engine) as conn:
        return [
            [row.detail for row in await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {s}", p)]
            for s, p in sent
        ]


async def test_context_without_a_query_reads_the_rank_index_in_order(db: TenantDb) -> None:
    for importance in (2, 5):
        await entries.create_entry(
            db,
            EntryIn(
                scope=Scope.ENTITY, scope_ref=ACME, title="t", summary="s", importance=importance
            ),
        )

    plans = await plans_of(
        db,
        lambda: load_context(
            db,
            scope=Scope.ENTITY,
            scope_ref=ACME,
            query=None,
            max_tokens=2000,
            include_institutional=True,
        ),
    )

    # One per scope (the entity's, then the institutional one): an index-only read that
    # stops at the limit, never a sort of the whole scope.
    assert len(plans) == 2
    for plan in plans:
        assert plan == [
            "SEARCH memory_entries USING COVERING INDEX ix_memory_entries_scope_rank"
            " (scope=? AND scope_ref=?)"
        ]


async def test_entries_by_min_importance_keep_the_recency_index(db: TenantDb) -> None:
    # The rank index would serve `importance >= ?` but then sort the scope by recency.
    flt = EntryFilter(scope=Scope.ENTITY, scope_ref=ACME, min_importance=4)

    plans = await plans_of(db, lambda: entries.list_entries(db, flt, first=20, after=None))

    assert plans == [
        [
            "SEARCH memory_entries USING INDEX ix_memory_entries_scope_updated"
            " (scope=? AND scope_ref=?)"
        ]
    ]
