"""memory_scopes: per (scope, scope_ref), the counts of events and entries and the last
activity, so listing the scopes (memoryScopes) reads one row per scope, never the log.

Events: their writers add one upsert per transaction (app/storage/scopes.py), as they index
and announce them, since a row trigger per event costs the append path (migration 0004).
Entries (created, updated, deleted by anyone: the API, the compactor, a restore, an erasure)
and erased events: row triggers, in the changing transaction. A scope whose counts both
reach zero loses its row. Existing memory is counted once, here.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 01:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BACKFILL = """
    INSERT INTO memory_scopes (scope, scope_key, event_count, entry_count, last_activity_at)
    SELECT scope, scope_key, sum(events), sum(entries), max(at) FROM (
        SELECT scope, coalesce(scope_ref, '') AS scope_key, count(*) AS events, 0 AS entries,
               max(recorded_at) AS at
        FROM memory_events GROUP BY scope, coalesce(scope_ref, '')
        UNION ALL
        SELECT scope, coalesce(scope_ref, ''), 0, count(*), max(updated_at)
        FROM memory_entries GROUP BY scope, coalesce(scope_ref, '')
    ) AS counted GROUP BY scope, scope_key"""

_KEY = "scope = {r}.scope AND scope_key = coalesce({r}.scope_ref, '')"
_DROP_EMPTY = "DELETE FROM memory_scopes WHERE {key} AND event_count = 0 AND entry_count = 0;"
_SQLITE_TRIGGERS = {
    "memory_scopes_event_delete": f"""AFTER DELETE ON memory_events BEGIN
        UPDATE memory_scopes SET event_count = event_count - 1 WHERE {_KEY.format(r="old")};
        {_DROP_EMPTY.format(key=_KEY.format(r="old"))}
    END""",
    "memory_scopes_entry_insert": """AFTER INSERT ON memory_entries BEGIN
        INSERT INTO memory_scopes (scope, scope_key, event_count, entry_count, last_activity_at)
        VALUES (new.scope, coalesce(new.scope_ref, ''), 0, 1, new.updated_at)
        ON CONFLICT (scope, scope_key) DO UPDATE SET entry_count = entry_count + 1,
            last_activity_at = max(last_activity_at, excluded.last_activity_at);
    END""",
    "memory_scopes_entry_update": f"""AFTER UPDATE ON memory_entries BEGIN
        UPDATE memory_scopes SET last_activity_at = max(last_activity_at, new.updated_at)
        WHERE {_KEY.format(r="new")};
    END""",
    "memory_scopes_entry_delete": f"""AFTER DELETE ON memory_entries BEGIN
        UPDATE memory_scopes SET entry_count = entry_count - 1 WHERE {_KEY.format(r="old")};
        {_DROP_EMPTY.format(key=_KEY.format(r="old"))}
    END""",
}

# One function for both tables; the schema is the changed table's (TG_TABLE_SCHEMA), so no
# search_path is needed.
_POSTGRES_FUNCTION = """
    CREATE FUNCTION memory_scopes_count() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        r record;
        counter text;
    BEGIN
        IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
        IF TG_TABLE_NAME = 'memory_events' THEN counter := 'event_count';
        ELSE counter := 'entry_count'; END IF;
        IF TG_OP = 'INSERT' THEN
            EXECUTE format('INSERT INTO %I.memory_scopes AS s (scope, scope_key, event_count, '
                           'entry_count, last_activity_at) VALUES ($1, $2, 0, 1, $3) '
                           'ON CONFLICT (scope, scope_key) DO UPDATE SET '
                           'entry_count = s.entry_count + 1, last_activity_at = '
                           'GREATEST(s.last_activity_at, EXCLUDED.last_activity_at)',
                           TG_TABLE_SCHEMA)
                USING r.scope, coalesce(r.scope_ref, ''), r.updated_at;
        ELSIF TG_OP = 'UPDATE' THEN
            EXECUTE format('UPDATE %I.memory_scopes SET last_activity_at = '
                           'GREATEST(last_activity_at, $3) WHERE scope = $1 AND scope_key = $2',
                           TG_TABLE_SCHEMA)
                USING r.scope, coalesce(r.scope_ref, ''), r.updated_at;
        ELSE
            EXECUTE format('UPDATE %I.memory_scopes SET %I = %I - 1 '
                           'WHERE scope = $1 AND scope_key = $2', TG_TABLE_SCHEMA, counter, counter)
                USING r.scope, coalesce(r.scope_ref, '');
            EXECUTE format('DELETE FROM %I.memory_scopes WHERE scope = $1 AND scope_key = $2 '
                           'AND event_count = 0 AND entry_count = 0', TG_TABLE_SCHEMA)
                USING r.scope, coalesce(r.scope_ref, '');
        END IF;
        RETURN NULL;
    END $$"""


def upgrade() -> None:
    op.create_table(
        "memory_scopes",
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("scope_key", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("event_count", sa.BigInteger(), nullable=False),
        sa.Column("entry_count", sa.Integer(), nullable=False),
        sa.Column("last_activity_at", app.storage.types.UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "scope IN ('institutional', 'entity', 'project', 'team')",
            name="ck_memory_scopes_scope",
        ),
        sa.PrimaryKeyConstraint("scope", "scope_key"),
    )
    op.execute(_BACKFILL)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_POSTGRES_FUNCTION)
        op.execute("""
            CREATE TRIGGER memory_scopes_event_delete AFTER DELETE ON memory_events
            FOR EACH ROW EXECUTE FUNCTION memory_scopes_count()""")
        op.execute("""
            CREATE TRIGGER memory_scopes_entry AFTER INSERT OR UPDATE OR DELETE ON memory_entries
            FOR EACH ROW EXECUTE FUNCTION memory_scopes_count()""")
        return
    for name, body in _SQLITE_TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER memory_scopes_entry ON memory_entries")
        op.execute("DROP TRIGGER memory_scopes_event_delete ON memory_events")
        op.execute("DROP FUNCTION memory_scopes_count()")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER {name}")
    op.drop_table("memory_scopes")
