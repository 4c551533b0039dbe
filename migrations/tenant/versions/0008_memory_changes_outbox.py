"""memory_changes: the outbox of change events, written in the changing transaction; the
webhook endpoints and their deliveries (the delivery log)

Entries and compaction runs: triggers write the row, whoever writes (an API process, the
compactor's worker, the CLI). Events: their writer (app/storage/event_log.py and the SQLite
fast path) inserts the rows with one INSERT ... SELECT per transaction, as it indexes them,
because a row trigger per event costs the append path what migration 0004 took off it.

PostgreSQL: ids come from an identity column, and a statement trigger takes a per-schema
transaction lock before any row is numbered, so ids are committed in order and a reader
that has seen id n never sees a smaller one appear later. SQLite serialises writers anyway;
AUTOINCREMENT keeps ids growing even after every row was pruned.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 21:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CHANGE_COLUMNS = "type, at, scope, scope_ref, object_id, version"
# (trigger suffix, event, values, WHEN condition) of the SQLite triggers.
_SQLITE_TRIGGERS = (
    (
        "entry_insert",
        "INSERT ON memory_entries",
        "'entry.created', new.created_at, new.scope, new.scope_ref, new.id, new.version",
        "",
    ),
    (
        "entry_update",
        "UPDATE ON memory_entries",
        "'entry.updated', new.updated_at, new.scope, new.scope_ref, new.id, new.version",
        "",
    ),
    (
        "entry_delete",
        "DELETE ON memory_entries",
        "'entry.deleted', strftime('%Y-%m-%d %H:%M:%f', 'now'), old.scope, old.scope_ref, "
        "old.id, old.version",
        "",
    ),
    (
        "compaction_finished",
        "UPDATE OF status ON compaction_runs",
        "'compaction.finished', coalesce(new.finished_at, strftime('%Y-%m-%d %H:%M:%f', 'now')), "
        "NULL, NULL, new.id, 1",
        "WHEN old.status = 'running' AND new.status <> 'running' AND NOT new.dry_run",
    ),
)


def upgrade() -> None:
    op.create_table(
        "memory_changes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.Identity(always=False),
            nullable=False,
        ),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("at", app.storage.types.UTCDateTime(), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column("scope_ref", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("object_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_memory_changes_at", "memory_changes", ["at"], unique=False)
    _webhook_tables()
    if op.get_bind().dialect.name == "postgresql":
        _postgres_triggers()
        return
    for name, on, values, when in _SQLITE_TRIGGERS:
        op.execute(f"""
            CREATE TRIGGER memory_changes_{name} AFTER {on} {when} BEGIN
                INSERT INTO memory_changes ({_CHANGE_COLUMNS}) VALUES ({values});
            END""")


def _webhook_tables() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("url", sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=False),
        sa.Column("types", sa.JSON(), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column("scope_ref", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("secret", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("disabled_reason", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("created_at", app.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", app.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("cursor", sa.BigInteger(), nullable=False),
        sa.Column("lease_owner", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column("lease_until", app.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('enabled', 'disabled')", name="ck_webhook_endpoints_status"),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("endpoint_id", sa.String(length=40), nullable=False),
        sa.Column("change_id", sa.BigInteger(), nullable=False),
        sa.Column("scope_key", sqlmodel.sql.sqltypes.AutoString(length=220), nullable=False),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("payload", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", app.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("first_attempt_at", app.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_attempt_at", app.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", app.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", app.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'delivered')", name="ck_webhook_deliveries_status"
        ),
        sa.ForeignKeyConstraint(["endpoint_id"], ["webhook_endpoints.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_pending",
            ["endpoint_id", "status", "scope_key", "change_id"],
            unique=False,
        )
        batch_op.create_index(
            "ux_webhook_deliveries_change", ["endpoint_id", "change_id"], unique=True
        )


def _postgres_triggers() -> None:
    # Rows are numbered (the identity default) after this statement trigger has run.
    op.execute("""
        CREATE FUNCTION memory_changes_lock() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(hashtext(TG_TABLE_SCHEMA || '.memory_changes'));
            RETURN NULL;
        END $$""")
    op.execute("""
        CREATE TRIGGER memory_changes_lock BEFORE INSERT ON memory_changes
        FOR EACH STATEMENT EXECUTE FUNCTION memory_changes_lock()""")
    op.execute("""
        CREATE FUNCTION memory_changes_entry() RETURNS trigger
        LANGUAGE plpgsql AS $$
        DECLARE
            r record;
            kind text;
            at timestamptz;
        BEGIN
            IF TG_OP = 'DELETE' THEN
                r := OLD; kind := 'entry.deleted'; at := clock_timestamp();
            ELSIF TG_OP = 'INSERT' THEN
                r := NEW; kind := 'entry.created'; at := NEW.created_at;
            ELSE
                r := NEW; kind := 'entry.updated'; at := NEW.updated_at;
            END IF;
            EXECUTE format('INSERT INTO %I.memory_changes (type, at, scope, scope_ref, '
                           'object_id, version) VALUES ($1, $2, $3, $4, $5, $6)',
                           TG_TABLE_SCHEMA)
                USING kind, at, r.scope, r.scope_ref, r.id, r.version;
            RETURN NULL;
        END $$""")
    op.execute("""
        CREATE TRIGGER memory_changes_entry AFTER INSERT OR UPDATE OR DELETE ON memory_entries
        FOR EACH ROW EXECUTE FUNCTION memory_changes_entry()""")
    op.execute("""
        CREATE FUNCTION memory_changes_compaction() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            EXECUTE format('INSERT INTO %I.memory_changes (type, at, scope, scope_ref, '
                           'object_id, version) VALUES ($1, $2, NULL, NULL, $3, 1)',
                           TG_TABLE_SCHEMA)
                USING 'compaction.finished', coalesce(NEW.finished_at, clock_timestamp()), NEW.id;
            RETURN NULL;
        END $$""")
    op.execute("""
        CREATE TRIGGER memory_changes_compaction AFTER UPDATE OF status ON compaction_runs
        FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running'
                           AND NOT NEW.dry_run)
        EXECUTE FUNCTION memory_changes_compaction()""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER memory_changes_compaction ON compaction_runs")
        op.execute("DROP FUNCTION memory_changes_compaction()")
        op.execute("DROP TRIGGER memory_changes_entry ON memory_entries")
        op.execute("DROP FUNCTION memory_changes_entry()")
        op.execute("DROP TRIGGER memory_changes_lock ON memory_changes")
        op.execute("DROP FUNCTION memory_changes_lock()")
    else:
        for name, *_ in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER memory_changes_{name}")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_endpoints")
    op.drop_index("ix_memory_changes_at", table_name="memory_changes")
    op.drop_table("memory_changes")
