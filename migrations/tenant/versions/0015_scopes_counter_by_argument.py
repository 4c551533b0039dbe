"""PostgreSQL: the per-scope counting trigger is told which counter it moves.

The function of 0010 chose the counter by TG_TABLE_NAME ('memory_events' or not). On a
Citus worker a trigger fires on the table's shard, named memory_events_<shard id>, so an
erased event took one off the scope's entry count instead of its event count. Each trigger
now passes its counter as an argument; the function is a new one (the old is dropped), so
Citus creates it on the worker with the triggers that use it. SQLite is unchanged.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 08:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 0010's function with the counter from TG_ARGV[0]; the schema is the changed table's.
_FUNCTION = """
    CREATE FUNCTION memory_scopes_count_by() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        r record;
        counter text := TG_ARGV[0];
    BEGIN
        IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
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
_EVENTS = "AFTER DELETE ON memory_events FOR EACH ROW EXECUTE FUNCTION"
_ENTRIES = "AFTER INSERT OR UPDATE OR DELETE ON memory_entries FOR EACH ROW EXECUTE FUNCTION"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_FUNCTION)
    op.execute("DROP TRIGGER memory_scopes_event_delete ON memory_events")
    op.execute(
        f"CREATE TRIGGER memory_scopes_event_delete {_EVENTS} memory_scopes_count_by('event_count')"
    )
    op.execute("DROP TRIGGER memory_scopes_entry ON memory_entries")
    op.execute(
        f"CREATE TRIGGER memory_scopes_entry {_ENTRIES} memory_scopes_count_by('entry_count')"
    )
    op.execute("DROP FUNCTION memory_scopes_count()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # 0010's function, as it was.
    op.execute(
        _FUNCTION.replace("memory_scopes_count_by()", "memory_scopes_count()")
        .replace("counter text := TG_ARGV[0];", "counter text;")
        .replace(
            "IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;",
            "IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;\n"
            "        IF TG_TABLE_NAME = 'memory_events' THEN counter := 'event_count';\n"
            "        ELSE counter := 'entry_count'; END IF;",
        )
    )
    op.execute("DROP TRIGGER memory_scopes_event_delete ON memory_events")
    op.execute(f"CREATE TRIGGER memory_scopes_event_delete {_EVENTS} memory_scopes_count()")
    op.execute("DROP TRIGGER memory_scopes_entry ON memory_entries")
    op.execute(f"CREATE TRIGGER memory_scopes_entry {_ENTRIES} memory_scopes_count()")
    op.execute("DROP FUNCTION memory_scopes_count_by()")
