"""Table models of the control database: tenants, API key hashes (never keys), policies.

The one secret stored here is a tenant's gateway key (tenant_policies.gateway_key): the
compactor must send it, so it cannot be hashed. The file is created 0600 (ControlDb).
"""

from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, Column, ForeignKey, Index, MetaData, String
from sqlmodel import Field, SQLModel

from app.storage.types import UTCDateTime


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
