"""PostgreSQL: memory_entry_versions.seq becomes bigint (bigserial), the rows kept.

An update copies the entry into its versions with one INSERT … SELECT, which Citus runs on
the tenant's worker; a worker draws only from a bigint sequence (each node has its own
range of it). Citus refuses to change the type of a column whose default is a sequence, or
the type of that sequence, or to give an existing distributed table a sequence it owns; it
does take a new table with a serial column. So the table is made again: a new one with a
bigserial seq, the rows copied with their seq, its sequence set above them, the old table
dropped (its sequence with it) and the new one renamed, with the indexes of 0007.
Downgrade does the same with a serial. SQLite is unchanged: its INTEGER PRIMARY KEY is the
64-bit rowid.

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-02 07:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0014"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "memory_entry_versions"
_COLUMNS = (
    "seq, entry_id, version, scope, scope_ref, title, summary, tags, importance, source,"
    " created_at, updated_at, change, changed_at, changed_by"
)


def _remake(seq_type: sa.types.TypeEngine[int], new: str) -> None:
    # `new` differs per direction: the sequence a serial makes is named after its table,
    # and keeps that name after the rename.
    op.create_table(
        new,
        sa.Column("seq", seq_type, nullable=False),
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
        sa.PrimaryKeyConstraint("seq", name=f"{new}_pkey"),
    )
    bind = op.get_bind()
    bind.execute(sa.text(f"LOCK TABLE {_TABLE} IN EXCLUSIVE MODE"))  # no write until commit
    bind.execute(sa.text(f"INSERT INTO {new} ({_COLUMNS}) SELECT {_COLUMNS} FROM {_TABLE}"))
    top = bind.execute(sa.text(f"SELECT max(seq)::bigint FROM {new}")).scalar_one()
    if top is not None:
        bind.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{new}', 'seq'), {top})"))
    op.drop_table(_TABLE)
    op.rename_table(new, _TABLE)
    op.execute(f"ALTER INDEX {new}_pkey RENAME TO {_TABLE}_pkey")
    op.create_index("ix_memory_entry_versions_entry", _TABLE, ["entry_id", "version"], unique=True)
    op.create_index("ix_memory_entry_versions_scope", _TABLE, ["scope", "scope_ref"])


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _remake(sa.BigInteger(), f"{_TABLE}_big")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _remake(sa.Integer(), f"{_TABLE}_int")
