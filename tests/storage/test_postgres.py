"""What the PostgreSQL backend must hold by itself, where SQLite's one-file-one-writer gave it
for free: a schema per tenant, migrations once under concurrency, idempotency keys and the
token budget across processes (two pools stand for two API or worker processes), a server
that is down named as such, and a URL that never leaks its password.

Run with `--backend postgresql` (`make test` does); the shared service and API tests run on
both backends.
"""

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from pydantic import ValidationError
from sqlalchemy import MetaData, func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from app.config import Settings
from app.deps import Container
from app.errors import BudgetExceeded
from app.services import budget, events, policies
from app.services.records import EventIn, Scope
from app.storage import migrate, postgres
from app.storage.control import ControlModel
from app.storage.models import TenantModel
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDatabases
from app.storage.transactions import read_transaction, write_transaction
from tests.conftest import make_tenant
from tests.support.servers import free_port

pytestmark = pytest.mark.postgres_only


def event(body: str, key: str | None = None) -> EventIn:
    return EventIn(
        scope=Scope.ENTITY, scope_ref="ent_1", kind="call_summary", body=body, idempotency_key=key
    )


async def test_each_tenant_is_a_schema_of_its_own(container: Container) -> None:
    a = await make_tenant(container, "a")
    b = await make_tenant(container, "b")
    async with container.tenants.lease(a.id) as db:
        await events.append_event(db, event("only in A"))
    async with write_transaction(container.control.engine) as conn:
        schemas = {
            r[0]
            for r in await conn.execute(text("SELECT schema_name FROM information_schema.schemata"))
        }
    assert {postgres.tenant_schema(a.id), postgres.tenant_schema(b.id), "jet_control"} <= schemas
    async with container.tenants.lease(b.id) as db, read_transaction(db.engine) as conn:
        assert (await conn.execute(select(func.count()).select_from(ev))).scalar() == 0
    with pytest.raises(ValueError, match="tenant id"):
        postgres.tenant_schema('x"; DROP SCHEMA jet_control; --')


async def test_a_read_transaction_is_one_snapshot(container: Container) -> None:
    """As on SQLite: an event appended (and committed) between two reads of one read
    transaction is not seen by the second; and nothing writes inside one."""
    tenant = await make_tenant(container, "snap")
    async with container.tenants.lease(tenant.id) as db:
        await events.append_event(db, event("before"))
        count = select(func.count()).select_from(ev)
        async with read_transaction(db.engine) as conn:
            level = (await conn.exec_driver_sql("SHOW transaction_isolation")).scalar()
            assert level == "repeatable read"
            assert (await conn.execute(count)).scalar() == 1
            await events.append_event(db, event("meanwhile"))  # another connection
            assert (await conn.execute(count)).scalar() == 1
        async with read_transaction(db.engine) as conn:
            assert (await conn.execute(count)).scalar() == 2
            with pytest.raises(Exception, match="read-only transaction"):
                await conn.execute(text("CREATE TEMP TABLE t (x int)"))


async def test_two_processes_opening_a_new_tenant_migrate_it_once(settings: Settings) -> None:
    first, second = TenantDatabases(settings), TenantDatabases(settings)
    try:
        tenant_id = "ten_01JCONCURRENTOPEN0000000000"
        migrated = await asyncio.gather(first.migrate(tenant_id), second.migrate(tenant_id))
        assert sorted(migrated) == [False, True]  # one migrated, the other found it done
        async with first.lease(tenant_id) as db:
            assert (await events.append_event(db, event("fine"))).replayed is False
    finally:
        await first.aclose()
        await second.aclose()


async def test_one_idempotency_key_through_two_processes_stores_one_event(
    settings: Settings,
) -> None:
    first, second = TenantDatabases(settings), TenantDatabases(settings)
    tenant_id = "ten_01JCONCURRENTKEYS0000000000"
    try:
        async with first.lease(tenant_id) as a, second.lease(tenant_id) as b:
            sends = [
                events.append_event(db, event("the same call", key=f"call-{i % 10}"))
                for i in range(40)
                for db in (a, b)
            ]
            results = await asyncio.gather(*sends)
            assert sum(not r.replayed for r in results) == 10
            by_key: dict[str | None, set[str]] = {}
            for r in results:
                by_key.setdefault(r.event.idempotency_key, set()).add(r.event.id)
            assert all(len(ids) == 1 for ids in by_key.values())
            async with read_transaction(a.engine) as conn:
                assert (await conn.execute(select(func.count()).select_from(ev))).scalar() == 10
    finally:
        await first.aclose()
        await second.aclose()


async def test_concurrent_reservations_never_overspend_the_budget(
    container: Container, settings: Settings
) -> None:
    t = await make_tenant(container, "budgeted")
    policy = replace(await policies.get_policy(container.control, t.id), budget_daily_tokens=1000)
    other = TenantDatabases(settings)
    at = datetime.now(UTC)

    async def reserve(dbs: TenantDatabases) -> bool:
        async with dbs.lease(t.id) as db, write_transaction(db.engine) as conn:
            try:
                await budget.reserve(conn, policy, estimates=[300], model="m", run_id=None, at=at)
            except BudgetExceeded:
                return False
            await asyncio.sleep(0.01)  # hold the transaction: the other must wait, not pass
            return True

    try:
        granted = await asyncio.gather(*(reserve(d) for d in [container.tenants, other] * 4))
    finally:
        await other.aclose()
    assert sum(granted) == 3  # 3 x 300 fit in 1,000; a fourth would not, whoever asked


async def test_a_database_server_that_is_down_is_named_not_masked(
    container: Container, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    t = await make_tenant(container, "down")
    down = f"postgresql+asyncpg://jet:s3cret-pw@127.0.0.1:{free_port()}/nowhere"
    await container.tenants.aclose()
    container.tenants = TenantDatabases(
        Settings(_env_file=None, data_dir=container.settings.data_dir, database_url=down)  # type: ignore[call-arg]
    )
    with caplog.at_level(logging.DEBUG):
        r = await client.post(
            "/graphql",
            json={"query": "{ memoryEvents { edges { node { id } } } }"},
            headers=t.headers,
        )
        rest = await client.get("/memory/events", headers=t.headers)
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["errors"][0]["extensions"]["code"] == "TENANT_DATABASE_UNREACHABLE"
    assert rest.status_code == 503
    assert rest.json()["errors"][0]["code"] == "TENANT_DATABASE_UNREACHABLE"
    assert "s3cret-pw" not in caplog.text and "s3cret-pw" not in r.text + rest.text


def test_the_url_must_be_postgresql_and_its_password_never_shows() -> None:
    with pytest.raises(ValidationError) as info:
        Settings(_env_file=None, database_url="mysql://root:hunter2@db/x")  # type: ignore[call-arg]
    assert "JET_DATABASE_URL must be a postgresql+asyncpg:// URL" in str(info.value)
    assert "hunter2" not in str(info.value)
    s = Settings(_env_file=None, database_url="postgresql://jet:hunter2@db/x")  # type: ignore[call-arg]
    assert s.database_url is not None
    assert s.database_url.get_secret_value() == "postgresql+asyncpg://jet:hunter2@db/x"
    assert "hunter2" not in repr(s) and "hunter2" not in str(s.model_dump())


def _diff(conn: Any, metadata: MetaData) -> list[object]:
    ctx = MigrationContext.configure(
        conn,
        opts={
            # The search columns and indexes exist only in the migration (like FTS5's tables).
            "include_object": lambda o, n, t, r, c: not migrate.is_fts_object(n),
            "compare_type": True,
        },
    )
    return list(compare_metadata(ctx, metadata))


async def test_migrations_match_the_models_in_the_schemas(
    container: Container, settings: Settings
) -> None:
    t = await make_tenant(container, "drift")
    assert settings.database_url is not None
    engine = create_async_engine(settings.database_url.get_secret_value())
    try:
        for schema, metadata in (
            (postgres.tenant_schema(t.id), TenantModel.metadata),
            (postgres.CONTROL_SCHEMA, ControlModel.metadata),
        ):
            async with engine.connect() as conn:
                await conn.execute(text(f'SET search_path TO "{schema}"'))
                assert await conn.run_sync(_diff, metadata) == []
    finally:
        await engine.dispose()
