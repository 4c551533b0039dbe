"""PostgreSQL, the scale-out backend: one schema per tenant on a shared connection pool.

Chosen with JET_DATABASE_URL=postgresql+asyncpg://…; SQLite stays the embedded default.
The layout mirrors the SQLite one: every tenant's tables live in a schema of its own
(`t_<tenant id>`), created and migrated by the same alembic migrations, and the control
tables live in schema `jet_control`. The models carry no schema: a tenant's engine is the
shared one with `schema_translate_map={None: <its schema>}`, so every statement names that
schema and nothing else (no search_path that a pooled connection could carry over).

Where SQLite serialises writers with BEGIN IMMEDIATE, PostgreSQL writers run concurrently,
across processes too; the few places that must not interleave (idempotency keys, budget
reservations, migrations) take transaction-scoped advisory locks (`advisory_lock`).
"""

import hashlib
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # no type information shipped
from sqlalchemy import event, text
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from app.storage import citus
from app.storage.unavailable import TenantUnavailable, classify_postgres

CONTROL_SCHEMA = "jet_control"
TENANT_SCHEMA_PREFIX = "t_"


CONNECT_TIMEOUT_S = 10.0


def engine(url: str, *, pool_size: int, application_name: str = "jet-memory") -> AsyncEngine:
    """The process's pool of PostgreSQL connections (all tenants share it)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def connect() -> Any:
        # Our own connect, so a server that is down, starting or out of connections is
        # TenantUnavailable wherever a connection is made (a lease, a pre-ping reconnect),
        # not a bare OSError: SQLAlchemy's handle_error hook sees only errors of the driver.
        try:
            return await asyncpg.connect(
                dsn,
                timeout=CONNECT_TIMEOUT_S,
                server_settings={"application_name": application_name, **citus.CONNECTION_SETTINGS},
            )
        except (OSError, TimeoutError, asyncpg.PostgresConnectionError):
            raise TenantUnavailable("unreachable") from None
        except asyncpg.PostgresError as exc:
            unavailable = classify_postgres(exc)
            if unavailable is None:
                raise
            raise unavailable from None

    eng = create_async_engine(
        url,
        async_creator=connect,
        # Bound values (event bodies, key hashes, gateway keys) never reach exception
        # messages, so no traceback or log line can carry them.
        hide_parameters=True,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=30,
        # A server restart or failover leaves dead connections in the pool: test each on
        # checkout (one round trip) rather than fail the first request after it.
        pool_pre_ping=True,
    )

    @event.listens_for(eng.sync_engine, "handle_error")
    def _on_error(ctx: ExceptionContext) -> TenantUnavailable | None:
        return classify_postgres(ctx.original_exception)

    return eng


def tenant_schema(tenant_id: str) -> str:
    """The schema of a tenant; ids are generated (ten_ + ULID), never user text."""
    if not tenant_id.isascii() or not tenant_id.replace("_", "").isalnum():
        raise ValueError("not a tenant id")
    return TENANT_SCHEMA_PREFIX + tenant_id.lower()


def for_schema(shared: AsyncEngine, schema: str) -> AsyncEngine:
    """`shared` (same pool) with every unqualified table rendered in `schema`."""
    return shared.execution_options(schema_translate_map={None: schema})


def schema_of(conn: AsyncConnection) -> str | None:
    options = conn.sync_connection.get_execution_options() if conn.sync_connection else {}
    translate: dict[Any, str] = options.get("schema_translate_map") or {}
    return translate.get(None)


def _lock_id(name: str) -> int:
    # A stable signed 64-bit id for pg_advisory_xact_lock. Python's hash() is salted per
    # process, and two processes must agree on the id.
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def advisory_lock(conn: AsyncConnection, *names: str) -> None:
    """Hold each named lock until the transaction ends (PostgreSQL only; a no-op on SQLite,
    whose BEGIN IMMEDIATE already serialises writers). Names are scoped to the connection's
    schema (the tenant) and taken in sorted order, so two transactions never deadlock on
    them."""
    if conn.dialect.name != "postgresql" or not names:
        return
    scope = schema_of(conn) or CONTROL_SCHEMA
    ids = sorted({_lock_id(f"{scope}/{n}") for n in names})
    # One round trip for any number of locks; a function scan of unnest yields the
    # sorted array in order.
    await conn.execute(_LOCK_MANY, {"ids": ids})


_LOCK_MANY = text(
    "SELECT count(pg_advisory_xact_lock(id)) FROM unnest(CAST(:ids AS bigint[])) AS u(id)"
)
