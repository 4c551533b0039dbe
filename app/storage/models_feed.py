"""Table models of the change feed in a tenant's database: the outbox of changes, the
webhook endpoints and their deliveries (app/storage/models.py holds the memory itself)."""

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    String,
)
from sqlmodel import Field

from app.storage.model_base import TenantModel
from app.storage.types import UTCDateTime


class MemoryChange(TenantModel, table=True):
    """The outbox: one row per change (event.appended, entry.created/updated/deleted,
    compaction.finished), written in the changing transaction; never the memory text.
    Ids only grow and are committed in order (PostgreSQL: a lock, migration 0008)."""

    __tablename__ = "memory_changes"
    __table_args__ = (
        Index("ix_memory_changes_at", "at"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), Identity(always=False), primary_key=True
        ),
    )
    type: str = Field(max_length=32)
    at: datetime = Field(sa_type=UTCDateTime)
    scope: str | None = Field(default=None, max_length=16)
    scope_ref: str | None = Field(default=None, max_length=200)
    object_id: str = Field(max_length=40)
    version: int = 1


class WebhookEndpoint(TenantModel, table=True):
    """Where a tenant's changes are POSTed. `secret` is kept because every delivery is
    signed with it, and is never returned after creation. `cursor` is the last change
    fanned out into deliveries; the lease says which worker delivers it now."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        CheckConstraint("status IN ('enabled', 'disabled')", name="ck_webhook_endpoints_status"),
    )

    seq: int | None = Field(default=None, primary_key=True)
    id: str = Field(sa_column=Column(String(40), nullable=False, unique=True))
    url: str = Field(max_length=2048)
    types: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    scope: str | None = Field(default=None, max_length=16)
    scope_ref: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=200)
    secret: str = Field(max_length=100)
    status: str = Field(max_length=16)
    disabled_reason: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    cursor: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    lease_owner: str | None = Field(default=None, max_length=100)
    lease_until: datetime | None = Field(default=None, sa_type=UTCDateTime)


class WebhookDelivery(TenantModel, table=True):
    """One change to one endpoint: pending until a 2xx, retried with backoff, the
    delivery log. `scope_key` orders deliveries: one scope's go out one at a time."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'delivered')", name="ck_webhook_deliveries_status"),
        Index("ux_webhook_deliveries_change", "endpoint_id", "change_id", unique=True),
        Index("ix_webhook_deliveries_pending", "endpoint_id", "status", "scope_key", "change_id"),
    )

    seq: int | None = Field(default=None, primary_key=True)
    id: str = Field(sa_column=Column(String(40), nullable=False, unique=True))
    endpoint_id: str = Field(
        sa_column=Column(
            String(40), ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False
        )
    )
    change_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    scope_key: str = Field(max_length=220)
    type: str = Field(max_length=32)
    payload: str  # the change as sent (JSON): never memory text
    status: str = Field(max_length=16)
    attempts: int = 0
    next_attempt_at: datetime = Field(sa_type=UTCDateTime)
    first_attempt_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_attempt_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_status: int | None = None
    last_error: str | None = Field(default=None, max_length=500)
    latency_ms: int | None = None
    created_at: datetime = Field(sa_type=UTCDateTime)
    delivered_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


changes_table = MemoryChange.__table__  # type: ignore[attr-defined]
webhook_endpoints_table = WebhookEndpoint.__table__  # type: ignore[attr-defined]
webhook_deliveries_table = WebhookDelivery.__table__  # type: ignore[attr-defined]
