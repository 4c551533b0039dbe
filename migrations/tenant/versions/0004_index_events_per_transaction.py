"""index events per transaction: drop the per-row FTS5 trigger of memory_events (SQLite)

The event writer (app/storage/event_log.py) now indexes the events it inserts with one
INSERT ... SELECT per transaction (app.storage.search.fulltext.INDEX_EVENTS_SQL), in the same
transaction; the per-row trigger would index them twice. The index of an existing database
already holds every event (the trigger put it there), so there is nothing to backfill.

PostgreSQL searches a generated tsvector column (migration 0001): nothing to do there.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 03:10:00.000000
"""

from collections.abc import Sequence

from alembic import op

from app.storage.search.fulltext import event_filters_sql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        return
    op.execute("DROP TRIGGER memory_events_fts_insert")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        return
    # Migration 0001's trigger, with the same filters expression as the writer's statement.
    op.execute(f"""
        CREATE TRIGGER memory_events_fts_insert AFTER INSERT ON memory_events BEGIN
            INSERT INTO memory_events_fts (rowid, body, kind, filters)
            VALUES (new.seq, new.body, new.kind, {event_filters_sql("new.")});
        END""")
    # The code at 0003 relies on the trigger alone: index any event that is not (one
    # written without the writer's statement, such as by a raw client), so every event is
    # searchable again after the downgrade.
    op.execute(f"""
        INSERT INTO memory_events_fts (rowid, body, kind, filters)
        SELECT seq, body, kind, {event_filters_sql()} FROM memory_events
        WHERE seq NOT IN (SELECT rowid FROM memory_events_fts)""")
