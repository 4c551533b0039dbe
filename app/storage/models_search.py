"""Table models of search by meaning in a tenant's database: the entries' vectors, the
indexer's lease and the tenant's keyword-only switch."""

from datetime import datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
)
from sqlmodel import Field

from app.storage.model_base import TenantModel
from app.storage.types import UTCDateTime


class MemoryEntryVector(TenantModel, table=True):
    """An entry's embedding by one model, of the entry's `version` (an older version's is
    stale: the indexer embeds it again); gone with its entry (the foreign key)."""

    __tablename__ = "memory_entry_vectors"
    __table_args__ = (Index("ix_memory_entry_vectors_entry_seq", "entry_seq"),)

    model: str = Field(sa_column=Column(String(200), primary_key=True))
    entry_seq: int = Field(
        sa_column=Column(
            Integer, ForeignKey("memory_entries.seq", ondelete="CASCADE"), primary_key=True
        )
    )
    version: int = Field(sa_column=Column(Integer, nullable=False))
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class EmbeddingLease(TenantModel, table=True):
    """Which process embeds this tenant's entries for `model` until `until`, so several
    API processes do not embed the same entries at once."""

    __tablename__ = "memory_embedding_leases"

    model: str = Field(sa_column=Column(String(200), primary_key=True))
    owner: str = Field(max_length=100)
    until: datetime = Field(sa_type=UTCDateTime)


class SearchSetting(TenantModel, table=True):
    """The tenant's search: `keyword_only` turns search by meaning off for every request."""

    __tablename__ = "memory_search_settings"
    __table_args__ = (CheckConstraint("id = 1", name="ck_memory_search_settings_one_row"),)

    id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    keyword_only: bool = Field(sa_column=Column(Boolean, nullable=False))


entry_vectors_table = MemoryEntryVector.__table__  # type: ignore[attr-defined]
embedding_leases_table = EmbeddingLease.__table__  # type: ignore[attr-defined]
search_settings_table = SearchSetting.__table__  # type: ignore[attr-defined]
