"""`in_list` (a list bound as one parameter): the right rows, and an index still answers it.

Typed Boolean, it was written `(x IN (...)) = 1` on SQLite, which no index can answer, so
every statement using it scanned its whole table (an erasure's release of folded events
read all of a tenant's events).
"""

import json
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    delete,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql

from app.services import entries
from app.storage import event_log
from app.storage.lists import in_list
from app.storage.tenants import TenantDb

metadata = MetaData()
things = Table(
    "things",
    metadata,
    Column("seq", Integer, primary_key=True),
    Column("ref", String),
    Column("other", String),
    Index("ix_things_ref", "ref"),
)


@pytest.fixture
def conn() -> Any:
    engine = create_engine("sqlite://")
    metadata.create_all(engine)
    with engine.begin() as c:
        c.execute(
            things.insert(),
            [{"seq": i, "ref": f"r{i % 50}", "other": f"o{i}"} for i in range(1, 2001)],
        )
        yield c
    engine.dispose()


def _plan(conn: Any, stmt: Any) -> str:
    compiled = stmt.compile(dialect=conn.dialect)
    # The list as its type binds it on SQLite: a JSON array text.
    values = [compiled.params[k] for k in compiled.positiontup or ()]
    values = [json.dumps(v) if isinstance(v, list) else v for v in values]
    rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", tuple(values))
    return " | ".join(r[-1] for r in rows)


@pytest.mark.parametrize(
    "stmt",
    [
        select(things.c.seq).where(in_list(things.c.ref, ["r1", "r2"])),
        select(things.c.seq).where(in_list(things.c.ref, ["r1"]), things.c.seq > 3),
        update(things).where(in_list(things.c.ref, ["r1"])).values(other="x"),
        delete(things).where(in_list(things.c.ref, ["r1"])),
    ],
    ids=["select", "select-and", "update", "delete"],
)
def test_an_index_answers_the_list(conn: Any, stmt: Any) -> None:
    plan = _plan(conn, stmt)
    assert "ix_things_ref" in plan, plan
    assert "SCAN things" not in plan, plan
    assert "= 1" not in str(stmt.compile(dialect=conn.dialect))


def test_the_rows_of_the_list_and_of_its_negation(conn: Any) -> None:
    def seqs(*where: Any) -> set[int]:
        return {r.seq for r in conn.execute(select(things.c.seq).where(*where))}

    listed = seqs(in_list(things.c.ref, ["r1", "r7", "missing"]))
    assert listed == {i for i in range(1, 2001) if i % 50 in (1, 7)}
    assert seqs(~in_list(things.c.ref, ["r1", "r7"])) == set(range(1, 2001)) - listed
    assert seqs(or_(things.c.seq == 2, in_list(things.c.ref, ["r1"]))) == (
        {2} | {i for i in range(1, 2001) if i % 50 == 1}
    )
    assert seqs(in_list(things.c.ref, [])) == set()
    changed = conn.execute(update(things).where(in_list(things.c.ref, ["r3"])).values(other="x"))
    assert changed.rowcount == 40


def test_postgresql_writes_any_of_an_array() -> None:
    sql = str(
        select(things.c.seq)
        .where(~in_list(things.c.ref, ["a"]))
        .compile(dialect=postgresql.dialect())
    )
    assert "WHERE NOT (things.ref = ANY(" in sql, sql


@pytest.mark.parametrize(
    ("stmt", "table"),
    [(event_log.BY_KEYS, "memory_events"), (entries._BY_IDS, "memory_entries")],
    ids=["events-by-idempotency-keys", "entries-by-ids"],
)
async def test_a_tenants_lookups_by_a_list_read_an_index(
    db: TenantDb, stmt: Any, table: str
) -> None:
    """Every append with idempotency keys looks them up: a scan there read the whole log."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's query plans")
    compiled = stmt.compile(dialect=db.engine.dialect)
    values = tuple(json.dumps(["x"]) for _ in compiled.positiontup or ())
    async with db.engine.connect() as conn:
        rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", values)
        plan = " | ".join(r[-1] for r in rows)
    assert f"SCAN {table}" not in plan, plan
    assert f"SEARCH {table}" in plan, plan
