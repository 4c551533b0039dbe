"""The control database: tenants, API key hashes and tenant policies. No memory is ever
stored here. The file is created readable by its owner alone (0600): a policy row holds
the tenant's gateway key, which the compactor must be able to send. On PostgreSQL these
tables live in schema `jet_control`."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Column, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.config import Settings
from app.storage import citus, migrate, postgres
from app.storage.control_models import api_keys_table as keys_t
from app.storage.control_models import tenant_policies_table as policies_t
from app.storage.control_models import tenant_removals_table as removals_t
from app.storage.control_models import tenants_table as tenants_t
from app.storage.engines import sqlite_engine
from app.storage.templates import copy_sqlite
from app.storage.transactions import read_statement, write_transaction
from app.storage.types import utcnow


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
    def __init__(self, settings: Settings, *, template: Path | None = None) -> None:
        """`template`: a control database file at head that a new SQLite control database
        is copied from (the tests' fixtures; app/storage/templates.py)."""
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
            if template is not None:
                copy_sqlite(template, settings.control_db_path, "control")
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
                    insert(tenants_t).values(
                        id=row.id, name=row.name, status=row.status, created_at=row.created_at
                    )
                )
        except IntegrityError as exc:
            raise DuplicateName(name) from exc
        return row

    async def tenants(self) -> list[TenantRow]:
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(select(tenants_t).order_by(tenants_t.c.created_at))
            return [TenantRow(**r._mapping) for r in rows]

    async def find_tenant(self, id_or_name: str) -> TenantRow | None:
        async with read_statement(self.engine) as conn:
            r = (
                await conn.execute(
                    select(tenants_t).where(
                        (tenants_t.c.id == id_or_name) | (tenants_t.c.name == id_or_name)
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
                insert(keys_t).values(
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
                update(tenants_t)
                .where(tenants_t.c.id == tenant_id, tenants_t.c.webhooks_since.is_(None))
                .values(webhooks_since=utcnow())
            )

    async def webhook_tenant_ids(self) -> list[str]:
        """Ids of the active tenants marked by `mark_webhooks`, oldest first."""
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(
                select(tenants_t.c.id)
                .where(tenants_t.c.status == "active", tenants_t.c.webhooks_since.is_not(None))
                .order_by(tenants_t.c.created_at)
            )
            return [r[0] for r in rows]

    async def disable_tenant(self, tenant_id: str) -> None:
        """Its keys stop authenticating (key_by_hash answers active tenants only)."""
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                update(tenants_t).where(tenants_t.c.id == tenant_id).values(status="disabled")
            )

    async def delete_tenant(self, tenant: TenantRow, *, removal_id: str, storage: str) -> int:
        """Delete a tenant's policy, keys and row, and write the removal's receipt, in one
        transaction; the number of keys removed."""
        async with write_transaction(self.engine) as conn:
            await conn.execute(delete(policies_t).where(policies_t.c.tenant_id == tenant.id))
            keys = (
                await conn.execute(delete(keys_t).where(keys_t.c.tenant_id == tenant.id))
            ).rowcount
            await conn.execute(delete(tenants_t).where(tenants_t.c.id == tenant.id))
            await conn.execute(
                insert(removals_t).values(
                    id=removal_id,
                    tenant_id=tenant.id,
                    name=tenant.name,
                    removed_at=utcnow(),
                    keys=keys,
                    storage=storage,
                )  # fmt: skip
            )
        return int(keys)

    async def removals(self) -> list[dict[str, Any]]:
        """Receipts of removed tenants, oldest first."""
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(select(removals_t).order_by(removals_t.c.removed_at))
            return [dict(r._mapping) for r in rows]

    async def revoke_key(self, key_id: str) -> KeyRow | None:
        async with write_transaction(self.engine) as conn:
            await conn.execute(
                update(keys_t)
                .where(keys_t.c.id == key_id, keys_t.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            r = (await conn.execute(select(*_key_cols()).where(keys_t.c.id == key_id))).first()
            return None if r is None else KeyRow(**r._mapping)

    async def keys(self, tenant_id: str) -> list[KeyRow]:
        async with read_statement(self.engine) as conn:
            rows = await conn.execute(
                select(*_key_cols())
                .where(keys_t.c.tenant_id == tenant_id)
                .order_by(keys_t.c.created_at)
            )
            return [KeyRow(**r._mapping) for r in rows]

    async def key_by_hash(self, key_hash: str) -> tuple[str, str, str] | None:
        """(key_id, stored hash, tenant_id) of an active key of an active tenant."""
        async with read_statement(self.engine) as conn:
            r = (
                await conn.execute(
                    select(keys_t.c.id, keys_t.c.key_hash, keys_t.c.tenant_id)
                    .join(tenants_t, tenants_t.c.id == keys_t.c.tenant_id)
                    .where(
                        keys_t.c.key_hash == key_hash,
                        keys_t.c.revoked_at.is_(None),
                        tenants_t.c.status == "active",
                    )
                )
            ).first()
            return None if r is None else (r[0], r[1], r[2])

    async def policy(self, tenant_id: str) -> dict[str, Any] | None:
        """The tenant's policy row (gateway key included: callers must never show it)."""
        async with read_statement(self.engine) as conn:
            r = (
                await conn.execute(select(policies_t).where(policies_t.c.tenant_id == tenant_id))
            ).first()
            return None if r is None else dict(r._mapping)

    async def save_policy(self, tenant_id: str, policy: Mapping[str, Any]) -> None:
        """Store the tenant's whole policy (every column but tenant_id and updated_at)."""
        values = {**policy, "updated_at": utcnow()}
        async with write_transaction(self.engine) as conn:
            # Update, else insert: on PostgreSQL two saves at once must not both insert.
            await postgres.advisory_lock(conn, f"policy/{tenant_id}")
            done = await conn.execute(
                update(policies_t).where(policies_t.c.tenant_id == tenant_id).values(values)
            )
            if done.rowcount == 0:
                await conn.execute(insert(policies_t).values(tenant_id=tenant_id, **values))


def _key_cols() -> list[Column[Any]]:
    c = keys_t.c
    return [c.id, c.tenant_id, c.prefix, c.created_at, c.revoked_at]
