"""The control database: tenants, API key hashes (never keys) and tenant policies, their
table models and statements. No memory is ever stored here. The one secret it holds is a
tenant's gateway key (tenant_policies.gateway_key): the compactor must send it, so it cannot
be hashed, and the file is created readable by its owner alone (0600). On PostgreSQL these
tables live in schema `jet_control`."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    MetaData,
    String,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import Field, SQLModel

from app.config import Settings
from app.storage import citus, migrate, postgres
from app.storage.sqlite.engines import sqlite_engine
from app.storage.transactions import read_statement, write_transaction
from app.storage.types import UTCDateTime, utcnow


class ControlModel(SQLModel):
    """Base of every table in the control database (its own metadata, apart from tenants)."""

    metadata = MetaData()


class Tenant(ControlModel, table=True):
    __tablename__ = "tenants"
    __table_args__ = (
        CheckConstraint("status IN ('active', 'disabled')", name="ck_tenants_status"),
    )

    id: str = Field(sa_column=Column(String(40), primary_key=True))
    name: str = Field(sa_column=Column(String(100), nullable=False, unique=True))
    status: str = Field(default="active", max_length=16)
    created_at: datetime = Field(sa_type=UTCDateTime)
    # When its first webhook endpoint was registered (None: never): the worker's delivery
    # loop visits these tenants only (app/worker.py).
    webhooks_since: datetime | None = Field(default=None, sa_type=UTCDateTime)


class ApiKey(ControlModel, table=True):
    """An API key, kept only as its SHA-256; `prefix` lets an operator recognise it."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_tenant", "tenant_id"),)

    id: str = Field(sa_column=Column(String(40), primary_key=True))
    tenant_id: str = Field(sa_column=Column(String(40), ForeignKey("tenants.id"), nullable=False))
    key_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    prefix: str = Field(max_length=16)
    created_at: datetime = Field(sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class TenantPolicy(ControlModel, table=True):
    """How a tenant's inference runs: gateway and model routing, DLP, token budgets.

    No row means the defaults: the built-in summariser, DLP redact, no budget.
    """

    __tablename__ = "tenant_policies"
    __table_args__ = (
        CheckConstraint("dlp_mode IN ('redact', 'block', 'off')", name="ck_tenant_policies_dlp"),
        CheckConstraint(
            "coalesce(budget_daily_tokens, 0) >= 0 AND coalesce(budget_monthly_tokens, 0) >= 0",
            name="ck_tenant_policies_budgets",
        ),
        CheckConstraint(
            "embedder IN ('local', 'gateway', 'none')", name="ck_tenant_policies_embedder"
        ),
    )

    tenant_id: str = Field(sa_column=Column(String(40), ForeignKey("tenants.id"), primary_key=True))
    gateway_url: str | None = Field(default=None, max_length=2000)
    # A secret: stored because it must be sent, never logged, printed or returned.
    gateway_key: str | None = Field(default=None, max_length=500)
    # The routing list: the first model, then its fallbacks in order.
    models: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    gateway_timeout_s: float = 60.0
    dlp_mode: str = Field(default="redact", max_length=8)
    dlp_patterns: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # NULL: unlimited.
    budget_daily_tokens: int | None = None
    budget_monthly_tokens: int | None = None
    updated_at: datetime = Field(sa_type=UTCDateTime)
    # What embeds the tenant's entries for search by meaning (docs/search.md): the local
    # model, its gateway's `embeddings_model`, or nothing (search by words only).
    embedder: str = Field(
        default="local", sa_column=Column(String(8), nullable=False, server_default="local")
    )
    embeddings_model: str | None = Field(default=None, max_length=200)


class TenantRemoval(ControlModel, table=True):
    """The receipt of a removed tenant: its database and keys are gone, its name is free."""

    __tablename__ = "tenant_removals"
    __table_args__ = (Index("ix_tenant_removals_time", "removed_at"),)

    id: str = Field(sa_column=Column(String(40), primary_key=True))
    tenant_id: str = Field(max_length=40)
    name: str = Field(max_length=100)
    removed_at: datetime = Field(sa_type=UTCDateTime)
    keys: int  # API keys removed, active or revoked
    storage: str = Field(max_length=300)  # the file or schema dropped


tenants_table = Tenant.__table__  # type: ignore[attr-defined]
api_keys_table = ApiKey.__table__  # type: ignore[attr-defined]
tenant_policies_table = TenantPolicy.__table__  # type: ignore[attr-defined]
tenant_removals_table = TenantRemoval.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class TenantRow:
    id: str
    name: str
    status: str
    created_at: datetime
    webhooks_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class KeyRow:
    id: str
    tenant_id: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


class DuplicateName(Exception):
    pass


class ControlDb:
    def __init__(
        self, settings: Settings, *, new_databases: migrate.NewDatabases | None = None
    ) -> None:
        """`new_databases`: how a new SQLite control database is made before it is migrated
        (migrate.NewDatabases)."""
        self._raw: AsyncEngine
        self._schema: str | None = None
        if settings.database_url is not None:
            # PostgreSQL: the control tables in schema jet_control, on a small pool of
            # their own (auth lookups never wait behind tenant traffic).
            self._schema = postgres.CONTROL_SCHEMA
            self._raw = postgres.engine(
                settings.database_url.get_secret_value(),
                pool_size=4,
                application_name="jet-memory control",
            )
            self.engine: AsyncEngine = postgres.for_schema(self._raw, self._schema)
        else:
            settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            if new_databases is not None:
                new_databases.sqlite_file("control", settings.control_db_path)
            self._raw = self.engine = sqlite_engine(
                settings.control_db_path,
                synchronous="FULL",
                busy_timeout_ms=settings.sqlite_busy_timeout_ms,
                pool_size=4,
                fast_path=settings.sqlite_fast_path,
            )

    async def migrate(self) -> bool:
        """Bring the control tables to head; on PostgreSQL, first check a Citus cluster's
        settings (raises citus.CitusNotReady naming what is missing)."""
        async with write_transaction(self._raw) as conn:
            if self._schema is not None and await citus.check(conn) is not None:
                await citus.keep_on_coordinator(conn)
            return await migrate.upgrade(conn, "control", self._schema)

    async def aclose(self) -> None:
        await self._raw.dispose()

    async def insert_tenant(self, *, tenant_id: str, name: str) -> TenantRow:
        row = TenantRow(id=tenant_id, name=name, status="active", created_at=utcnow())
        try:
            async with write_transaction(self.engine) as conn:
                await conn.execute(
                    insert(tenants_table).values(
                        id=row.id, name=row.name, status=row.status, created_at=row.created_at
                    )
                )
        except IntegrityError as exc:
            raise DuplicateName(name) from exc
        return row

    async def tenants(self) -> list[TenantRow]:
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(select(tenants_table).order_by(tenants_table.c.created_at))
            return [TenantRow(**r._mapping) for r in rows]

    async def find_tenant(self, id_or_name: str) -> TenantRow | None:
        async with read_statement(self.engine) as conn:
            r = (
                await conn.execute(
                    select(tenants_table).where(
                        (tenants_table.c.id == id_or_name) | (tenants_table.c.name == id_or_name)
                    )
                )
            ).first()
            return None if r is None else TenantRow(**r._mapping)

    async def insert_key(
        self, *, key_id: str, tenant_id: str, key_hash: str, prefix: str
    ) -> KeyRow:
        row = KeyRow(
            id=key_id, tenant_id=tenant_id, prefix=prefix, created_at=utcnow(), revoked_at=None
        )
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                insert(api_keys_table).values(
                    id=key_id,
                    tenant_id=tenant_id,
                    key_hash=key_hash,
                    prefix=prefix,
                    created_at=row.created_at,
                )
            )
        return row

    async def mark_webhooks(self, tenant_id: str) -> None:
        """Note that the tenant has (or is about to have) a webhook endpoint. Never cleared
        while the tenant lives: a mark without an endpoint costs the worker one look a
        pass, while an endpoint without a mark waits for the worker's hourly upkeep."""
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                update(tenants_table)
                .where(tenants_table.c.id == tenant_id, tenants_table.c.webhooks_since.is_(None))
                .values(webhooks_since=utcnow())
            )

    async def webhook_tenant_ids(self) -> list[str]:
        """Ids of the active tenants marked by `mark_webhooks`, oldest first."""
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(
                select(tenants_table.c.id)
                .where(
                    tenants_table.c.status == "active", tenants_table.c.webhooks_since.is_not(None)
                )
                .order_by(tenants_table.c.created_at)
            )
            return [r[0] for r in rows]

    async def disable_tenant(self, tenant_id: str) -> None:
        """Its keys stop authenticating (key_by_hash answers active tenants only)."""
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                update(tenants_table)
                .where(tenants_table.c.id == tenant_id)
                .values(status="disabled")
            )

    async def delete_tenant(self, tenant: TenantRow, *, removal_id: str, storage: str) -> int:
        """Delete a tenant's policy, keys and row, and write the removal's receipt, in one
        transaction; the number of keys removed."""
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                delete(tenant_policies_table).where(tenant_policies_table.c.tenant_id == tenant.id)
            )
            keys = (
                await conn.execute(
                    delete(api_keys_table).where(api_keys_table.c.tenant_id == tenant.id)
                )
            ).rowcount
            await conn.execute(delete(tenants_table).where(tenants_table.c.id == tenant.id))
            await conn.execute(
                insert(tenant_removals_table).values(
                    id=removal_id,
                    tenant_id=tenant.id,
                    name=tenant.name,
                    removed_at=utcnow(),
                    keys=keys,
                    storage=storage,
                )
            )
        return int(keys)

    async def removals(self) -> list[dict[str, Any]]:
        """Receipts of removed tenants, oldest first."""
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(
                select(tenant_removals_table).order_by(tenant_removals_table.c.removed_at)
            )
            return [dict(r._mapping) for r in rows]

    async def revoke_key(self, key_id: str) -> KeyRow | None:
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                update(api_keys_table)
                .where(api_keys_table.c.id == key_id, api_keys_table.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            r = (
                await conn.execute(select(*_key_cols()).where(api_keys_table.c.id == key_id))
            ).first()
            return None if r is None else KeyRow(**r._mapping)

    async def keys(self, tenant_id: str) -> list[KeyRow]:
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(
                select(*_key_cols())
                .where(api_keys_table.c.tenant_id == tenant_id)
                .order_by(api_keys_table.c.created_at)
            )
            return [KeyRow(**r._mapping) for r in rows]

    async def key_by_hash(self, key_hash: str) -> tuple[str, str, str] | None:
        """(key_id, stored hash, tenant_id) of an active key of an active tenant."""
        async with read_statement(self.engine) as conn:
            r = (
                await conn.execute(
                    select(
                        api_keys_table.c.id, api_keys_table.c.key_hash, api_keys_table.c.tenant_id
                    )
                    .join(tenants_table, tenants_table.c.id == api_keys_table.c.tenant_id)
                    .where(
                        api_keys_table.c.key_hash == key_hash,
                        api_keys_table.c.revoked_at.is_(None),
                        tenants_table.c.status == "active",
                    )
                )
            ).first()
            return None if r is None else (r[0], r[1], r[2])

    async def policy(self, tenant_id: str) -> dict[str, Any] | None:
        """The tenant's policy row (gateway key included: callers must never show it)."""
        async with read_statement(self.engine) as conn:
            r = (
                await conn.execute(
                    select(tenant_policies_table).where(
                        tenant_policies_table.c.tenant_id == tenant_id
                    )
                )
            ).first()
            return None if r is None else dict(r._mapping)

    async def save_policy(self, tenant_id: str, policy: Mapping[str, Any]) -> None:
        """Store the tenant's whole policy (every column but tenant_id and updated_at)."""
        values = {**policy, "updated_at": utcnow()}
        async with write_transaction(self.engine) as conn:
            # Update, else insert: on PostgreSQL two saves at once must not both insert.
            await postgres.advisory_lock(conn, f"policy/{tenant_id}")
            done = await conn.execute(
                update(tenant_policies_table)
                .where(tenant_policies_table.c.tenant_id == tenant_id)
                .values(values)
            )
            if done.rowcount == 0:
                await conn.execute(
                    insert(tenant_policies_table).values(tenant_id=tenant_id, **values)
                )


def _key_cols() -> list[Column[Any]]:
    c = api_keys_table.c
    return [c.id, c.tenant_id, c.prefix, c.created_at, c.revoked_at]
