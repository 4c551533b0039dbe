"""entry versions, erasure receipts, and the one path through the event log's delete guard

memory_entry_versions keeps the version an update, restore or delete replaced.
memory_erasures holds a receipt per erasure (counts, never content). memory_erasure_pass
holds a row only inside an erasing transaction (app/storage/data_rights/erasure.py): the
delete guard of memory_events lets a delete through then, and refuses it otherwise, as before.
SQLite: an erased event leaves its full-text index row through a trigger.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_REFUSE = "SELECT RAISE(ABORT, 'memory_events is append-only: events are never deleted');"


def upgrade() -> None:
    op.create_table(
        "memory_entry_versions",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("entry_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("scope_ref", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("title", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("summary", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("importance", sa.Integer(), nullable=False),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("created_at", app.storage.types.UTCDateTime(), nullable=False),
        sa.Column("updated_at", app.storage.types.UTCDateTime(), nullable=False),
        sa.Column("change", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("changed_at", app.storage.types.UTCDateTime(), nullable=False),
        sa.Column("changed_by", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.CheckConstraint(
            "change IN ('update', 'restore', 'delete')", name="ck_memory_entry_versions_change"
        ),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("memory_entry_versions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_memory_entry_versions_entry", ["entry_id", "version"], unique=True
        )
        batch_op.create_index("ix_memory_entry_versions_scope", ["scope", "scope_ref"])

    op.create_table(
        "memory_erasures",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("erased_at", app.storage.types.UTCDateTime(), nullable=False),
        sa.Column("target", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("scope_ref", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("event_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.Column("versions", sa.Integer(), nullable=False),
        sa.Column("released", sa.Integer(), nullable=False),
        sa.Column("requested_by", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.CheckConstraint("target IN ('subject', 'event')", name="ck_memory_erasures_target"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("memory_erasures", schema=None) as batch_op:
        batch_op.create_index("ix_memory_erasures_time", ["erased_at", "id"])

    op.create_table(
        "memory_erasure_pass",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )

    if op.get_bind().dialect.name == "postgresql":
        op.execute(_postgres_guard(with_pass=True))
        return
    op.execute("DROP TRIGGER memory_events_no_delete")
    op.execute(f"""
        CREATE TRIGGER memory_events_no_delete BEFORE DELETE ON memory_events
        WHEN NOT EXISTS (SELECT 1 FROM memory_erasure_pass) BEGIN {_REFUSE} END""")
    op.execute("""
        CREATE TRIGGER memory_events_fts_delete AFTER DELETE ON memory_events BEGIN
            DELETE FROM memory_events_fts WHERE rowid = old.seq;
        END""")


def _postgres_guard(*, with_pass: bool) -> str:
    # The guard of migration 0001, but a DELETE is let through while the transaction holds
    # a row in its schema's memory_erasure_pass (found through TG_TABLE_SCHEMA, so no
    # search_path is needed). TRUNCATE stays refused.
    allow = (
        """IF TG_OP = 'DELETE' THEN
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.memory_erasure_pass)',
                               TG_TABLE_SCHEMA) INTO erasing;
                IF erasing THEN RETURN OLD; END IF;
            END IF;"""
        if with_pass
        else ""
    )
    return f"""
        CREATE OR REPLACE FUNCTION memory_events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE erasing boolean;
        BEGIN
            {allow}
            IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
                RAISE EXCEPTION 'memory_events is append-only: events are never deleted'
                    USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            IF (NEW.seq, NEW.id, NEW.scope, NEW.scope_ref, NEW.kind, NEW.body, NEW.source,
                NEW.source_ref, NEW.occurred_at, NEW.recorded_at, NEW.idempotency_key)
               IS DISTINCT FROM
               (OLD.seq, OLD.id, OLD.scope, OLD.scope_ref, OLD.kind, OLD.body, OLD.source,
                OLD.source_ref, OLD.occurred_at, OLD.recorded_at, OLD.idempotency_key) THEN
                RAISE EXCEPTION
                    'memory_events are immutable: only compressed_at/compressed_into may change'
                    USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            RETURN NEW;
        END $$"""


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_postgres_guard(with_pass=False))
    else:
        op.execute("DROP TRIGGER memory_events_fts_delete")
        op.execute("DROP TRIGGER memory_events_no_delete")
        op.execute(f"""
            CREATE TRIGGER memory_events_no_delete BEFORE DELETE ON memory_events BEGIN
                {_REFUSE}
            END""")
    op.drop_table("memory_erasure_pass")
    with op.batch_alter_table("memory_erasures", schema=None) as batch_op:
        batch_op.drop_index("ix_memory_erasures_time")
    op.drop_table("memory_erasures")
    with op.batch_alter_table("memory_entry_versions", schema=None) as batch_op:
        batch_op.drop_index("ix_memory_entry_versions_scope")
        batch_op.drop_index("ix_memory_entry_versions_entry")
    op.drop_table("memory_entry_versions")
