"""Table models of a tenant's own database: the event log, curated entries, provenance,
compaction runs and the LLM calls they made (the token budget is summed from those), entry
history and erasure receipts, the change feed (the outbox, webhook endpoints and their
deliveries) and search by meaning (the entries' vectors, the indexer's lease, the
keyword-only switch).

Who uses them: the services (through Core statements on `Model.__table__`) and alembic
(autogenerate compares migrations to this metadata). FTS5 tables and triggers live only in
the migrations (alembic cannot model them).
"""

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    text,
)
from sqlmodel import Field, SQLModel

from app.storage.types import UTCDateTime

SCOPE_CHECK = "scope IN ('institutional', 'entity', 'project', 'team')"
SCOPE_REF_CHECK = "(scope = 'institutional') = (scope_ref IS NULL)"


class TenantModel(SQLModel):
    """Base of every table in a tenant database (its own metadata, apart from control)."""

    metadata = MetaData()


class MemoryEvent(TenantModel, table=True):
    """An immutable raw event. A trigger refuses DELETE and any UPDATE but the compactor's."""

    __tablename__ = "memory_events"
    __table_args__ = (
        CheckConstraint(SCOPE_CHECK, name="ck_memory_events_scope"),
        CheckConstraint(SCOPE_REF_CHECK, name="ck_memory_events_scope_ref"),
        Index("ix_memory_events_time", "occurred_at", "id"),
        Index("ix_memory_events_scope_time", "scope", "scope_ref", "occurred_at", "id"),
        Index(
            "ix_memory_events_uncompressed",
            "scope",
            "scope_ref",
            "occurred_at",
            sqlite_where=text("compressed_at IS NULL"),
            postgresql_where=text("compressed_at IS NULL"),
        ),
        Index("ix_memory_events_compressed_into", "compressed_into"),
    )

    # An integer key that VACUUM never renumbers: the FTS index is keyed by it.
    seq: int | None = Field(default=None, primary_key=True)
    id: str = Field(sa_column=Column(String(40), nullable=False, unique=True))
    scope: str = Field(max_length=16)
    scope_ref: str | None = Field(default=None, max_length=200)
    kind: str = Field(max_length=64)
    body: str
    source: str | None = Field(default=None, max_length=200)
    source_ref: str | None = Field(default=None, max_length=200)
    occurred_at: datetime = Field(sa_type=UTCDateTime)
    recorded_at: datetime = Field(sa_type=UTCDateTime)
    compressed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    compressed_into: str | None = Field(
        default=None,
        sa_column=Column(String(40), ForeignKey("memory_entries.id"), nullable=True),
    )
    idempotency_key: str | None = Field(
        default=None, sa_column=Column(String(200), nullable=True, unique=True)
    )


class MemoryEntry(TenantModel, table=True):
    """A curated, searchable, scored memory item; `version` counts updates."""

    __tablename__ = "memory_entries"
    __table_args__ = (
        CheckConstraint(SCOPE_CHECK, name="ck_memory_entries_scope"),
        CheckConstraint(SCOPE_REF_CHECK, name="ck_memory_entries_scope_ref"),
        CheckConstraint("importance BETWEEN 1 AND 5", name="ck_memory_entries_importance"),
        CheckConstraint(
            "source IN ('chat', 'call', 'email', 'manual', 'compactor')",
            name="ck_memory_entries_source",
        ),
        Index("ix_memory_entries_updated", "updated_at", "id"),
        Index("ix_memory_entries_scope_updated", "scope", "scope_ref", "updated_at", "id"),
        # The context loader without a query: importance, then recency, within a scope.
        # Read backwards (every ORDER BY term DESC; seq is the rowid every index ends in),
        # so SQLite stops at the limit instead of sorting the whole scope.
        Index("ix_memory_entries_scope_rank", "scope", "scope_ref", "importance", "updated_at"),
    )

    seq: int | None = Field(default=None, primary_key=True)
    id: str = Field(sa_column=Column(String(40), nullable=False, unique=True))
    scope: str = Field(max_length=16)
    scope_ref: str | None = Field(default=None, max_length=200)
    title: str = Field(max_length=200)
    summary: str
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    importance: int = 3
    source: str = Field(max_length=16)
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    version: int = 1


class MemoryEntriesRevision(TenantModel, table=True):
    """One row whose `n` changes in the same transaction as any change to memory_entries,
    by any writer: triggers bump it (migration 0005). The entry search cache
    (app/services/search/page_cache.py) serves a page only while `n` is what it was read as
    before that page was searched. Only equality means anything: `n` starts at a random
    62-bit number, so a table dropped and created again does not (but by a chance in
    ~2**62) repeat a value it had."""

    __tablename__ = "memory_entries_revision"
    __table_args__ = (CheckConstraint("id = 1", name="ck_memory_entries_revision_one_row"),)

    id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    n: int = Field(sa_column=Column(BigInteger, nullable=False))


class MemoryEntrySource(TenantModel, table=True):
    """Provenance: the events a compactor entry folded, in the order they were folded."""

    __tablename__ = "memory_entry_sources"
    __table_args__ = (Index("ix_memory_entry_sources_event", "event_id"),)

    entry_id: str = Field(
        sa_column=Column(
            String(40),
            ForeignKey("memory_entries.id", ondelete="CASCADE"),
            primary_key=True,
        )
    )
    event_id: str = Field(
        sa_column=Column(String(40), ForeignKey("memory_events.id"), primary_key=True)
    )
    position: int


class CompactionRun(TenantModel, table=True):
    """One compaction pass over this tenant; written RUNNING first, finished at the end."""

    __tablename__ = "compaction_runs"
    __table_args__ = (
        CheckConstraint(
            "status IN ('running', 'succeeded', 'partial', 'failed')",
            name="ck_compaction_runs_status",
        ),
        CheckConstraint("trigger IN ('cron', 'cli', 'api')", name="ck_compaction_runs_trigger"),
        Index("ix_compaction_runs_started", "started_at", "id"),
    )

    id: str = Field(sa_column=Column(String(40), primary_key=True))
    status: str = Field(max_length=16)
    trigger: str = Field(max_length=8)
    dry_run: bool = False
    started_at: datetime = Field(sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    cutoff: datetime = Field(sa_type=UTCDateTime)
    buckets_considered: int = 0
    buckets_compacted: int = 0
    buckets_skipped: int = 0
    periods: int = 0  # entries written (a dry run: that would be)
    events_compressed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    budget_exceeded: bool = False
    # One line per skipped or failed bucket: "scope scopeRef: why" (never event text).
    problems: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    entries_created: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    summariser: str = Field(max_length=2200)  # the model(s) that answered, or builtin-extractive-v2
    # Who runs it, refreshed while it runs: lets the next run tell a dead run from a slow one.
    owner_host: str | None = Field(default=None, max_length=255)
    owner_pid: int | None = None
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class LlmCall(TenantModel, table=True):
    """One gateway call: reserved before it is made, settled with its actual usage.

    The token budget sums these per UTC day and month: a reserved row counts its
    estimate, a settled one what the gateway reported.
    """

    __tablename__ = "llm_calls"
    __table_args__ = (
        CheckConstraint("status IN ('reserved', 'done', 'failed')", name="ck_llm_calls_status"),
        Index("ix_llm_calls_created", "created_at"),
        Index("ix_llm_calls_run", "run_id"),
    )

    id: str = Field(sa_column=Column(String(40), primary_key=True))
    run_id: str | None = Field(
        default=None,
        sa_column=Column(String(40), ForeignKey("compaction_runs.id"), nullable=True),
    )
    created_at: datetime = Field(sa_type=UTCDateTime)
    model: str = Field(max_length=200)
    status: str = Field(max_length=16)
    estimated_tokens: int
    prompt_tokens: int = 0
    completion_tokens: int = 0


class MemoryScopeSummary(TenantModel, table=True):
    """Per (scope, scope_ref): how many events and entries it holds and when it last moved,
    kept in the writing transaction (event writers, triggers: migration 0010) so listing the
    scopes never counts the log. `scope_key` is scope_ref, '' for the institutional scope."""

    __tablename__ = "memory_scopes"
    __table_args__ = (CheckConstraint(SCOPE_CHECK, name="ck_memory_scopes_scope"),)

    scope: str = Field(max_length=16, primary_key=True)
    scope_key: str = Field(max_length=200, primary_key=True)
    event_count: int = Field(sa_column=Column(BigInteger, nullable=False))
    entry_count: int
    last_activity_at: datetime = Field(sa_type=UTCDateTime)


events_table = MemoryEvent.__table__  # type: ignore[attr-defined]
entries_table = MemoryEntry.__table__  # type: ignore[attr-defined]
entries_revision_table = MemoryEntriesRevision.__table__  # type: ignore[attr-defined]
entry_sources_table = MemoryEntrySource.__table__  # type: ignore[attr-defined]
compaction_runs_table = CompactionRun.__table__  # type: ignore[attr-defined]
llm_calls_table = LlmCall.__table__  # type: ignore[attr-defined]
scopes_table = MemoryScopeSummary.__table__  # type: ignore[attr-defined]


class MemoryEntryVersion(TenantModel, table=True):
    """An earlier version of an entry, kept when an update, restore or delete replaced it,
    in the same transaction; outlives a deleted entry until its subject is erased."""

    __tablename__ = "memory_entry_versions"
    __table_args__ = (
        CheckConstraint(
            "change IN ('update', 'restore', 'delete')", name="ck_memory_entry_versions_change"
        ),
        Index("ix_memory_entry_versions_entry", "entry_id", "version", unique=True),
        Index("ix_memory_entry_versions_scope", "scope", "scope_ref"),
    )

    # bigint on PostgreSQL (migration 0014): the copy of an update runs on a Citus worker,
    # which draws only a bigint sequence; SQLite's rowid is 64-bit already.
    seq: int | None = Field(
        default=None,
        sa_column=Column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    )
    entry_id: str = Field(sa_column=Column(String(40), nullable=False))
    version: int
    scope: str = Field(max_length=16)
    scope_ref: str | None = Field(default=None, max_length=200)
    title: str = Field(max_length=200)
    summary: str
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    importance: int
    source: str = Field(max_length=16)
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    change: str = Field(max_length=8)  # what replaced this version
    changed_at: datetime = Field(sa_type=UTCDateTime)
    changed_by: str = Field(max_length=64)  # the API key id, or "compactor" / "operator"


class Erasure(TenantModel, table=True):
    """A receipt of an erasure: what was asked and how much went, never any content."""

    __tablename__ = "memory_erasures"
    __table_args__ = (
        CheckConstraint("target IN ('subject', 'event')", name="ck_memory_erasures_target"),
        Index("ix_memory_erasures_time", "erased_at", "id"),
    )

    id: str = Field(sa_column=Column(String(40), primary_key=True))
    erased_at: datetime = Field(sa_type=UTCDateTime)
    target: str = Field(max_length=8)
    scope: str = Field(max_length=16)
    scope_ref: str | None = Field(default=None, max_length=200)
    event_id: str | None = Field(default=None, max_length=40)
    events: int = 0
    entries: int = 0
    versions: int = 0
    released: int = 0  # events of other subjects a folded summary no longer stands for
    requested_by: str = Field(max_length=64)


class ErasurePass(TenantModel, table=True):
    """Holds a row only inside an erasing transaction: the event log's delete guard lets a
    delete through while it does (storage/data_rights/erasure.py inserts and removes it)."""

    __tablename__ = "memory_erasure_pass"

    id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))


entry_versions_table = MemoryEntryVersion.__table__  # type: ignore[attr-defined]
erasures_table = Erasure.__table__  # type: ignore[attr-defined]
erasure_pass_table = ErasurePass.__table__  # type: ignore[attr-defined]


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
