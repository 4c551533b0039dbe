"""memory_entries_revision: one number that changes with every change to memory_entries

Triggers bump it in the same transaction as the insert, update or delete, whoever writes:
this process, another API process, the compactor's worker, a raw client. The entry search
cache (app/services/search/page_cache.py) serves a cached page only while the number is what
it read before searching.

SQLite: three row-level triggers (SQLite has no statement-level ones; entry writes are
few). PostgreSQL: one statement-level trigger, TRUNCATE included; its function finds the
table in the trigger's own schema (TG_TABLE_SCHEMA), so it needs no search_path and
survives a renamed schema.

The number starts at a random 62-bit value, not 0: if the table is ever dropped and made
again (a downgrade, then an upgrade) while a process holds pages cached under the old
numbers, the new ones do not repeat them (but by a chance in ~2**62).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 09:00:00.000000
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_EVENTS = ("insert", "update", "delete")


def upgrade() -> None:
    op.create_table(
        "memory_entries_revision",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_memory_entries_revision_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    # Below 2**62, so n + 1 never overflows a signed 64-bit integer in practice.
    op.execute(
        sa.text("INSERT INTO memory_entries_revision (id, n) VALUES (1, :n)").bindparams(
            n=secrets.randbits(62)
        )
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("""
            CREATE FUNCTION memory_entries_revision_bump() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                EXECUTE format('UPDATE %I.memory_entries_revision SET n = n + 1',
                               TG_TABLE_SCHEMA);
                RETURN NULL;
            END $$""")
        op.execute("""
            CREATE TRIGGER memory_entries_revision_bump
            AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memory_entries
            FOR EACH STATEMENT EXECUTE FUNCTION memory_entries_revision_bump()""")
        return
    for event in _SQLITE_EVENTS:
        op.execute(f"""
            CREATE TRIGGER memory_entries_revision_{event} AFTER {event.upper()}
            ON memory_entries BEGIN
                UPDATE memory_entries_revision SET n = n + 1;
            END""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER memory_entries_revision_bump ON memory_entries")
        op.execute("DROP FUNCTION memory_entries_revision_bump()")
    else:
        for event in _SQLITE_EVENTS:
            op.execute(f"DROP TRIGGER memory_entries_revision_{event}")
    op.drop_table("memory_entries_revision")
