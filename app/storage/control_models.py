"""Table models of the control database: tenants and API key hashes (never keys)."""

from datetime import datetime

from sqlalchemy import CheckConstraint, Column, ForeignKey, Index, MetaData, String
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


tenants_table = Tenant.__table__  # type: ignore[attr-defined]
api_keys_table = ApiKey.__table__  # type: ignore[attr-defined]
