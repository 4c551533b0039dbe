"""compaction_runs: who runs a run (host and pid) and its heartbeat

A run killed mid-way stays RUNNING; the tenant's next run marks it interrupted at once when
its owner process is gone from that host, or when its heartbeat is older than
compaction_stale_run_seconds. Rows from before have neither and fall back to started_at.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 18:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("compaction_runs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("owner_host", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True)
        )
        batch_op.add_column(sa.Column("owner_pid", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("heartbeat_at", app.storage.types.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("compaction_runs", schema=None) as batch_op:
        batch_op.drop_column("heartbeat_at")
        batch_op.drop_column("owner_pid")
        batch_op.drop_column("owner_host")
