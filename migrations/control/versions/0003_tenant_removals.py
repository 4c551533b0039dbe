"""tenant_removals: a receipt per removed tenant (its database, keys and name gone)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.storage.types

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tenant_removals",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("removed_at", app.storage.types.UTCDateTime(), nullable=False),
        sa.Column("keys", sa.Integer(), nullable=False),
        sa.Column("storage", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("tenant_removals", schema=None) as batch_op:
        batch_op.create_index("ix_tenant_removals_time", ["removed_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tenant_removals", schema=None) as batch_op:
        batch_op.drop_index("ix_tenant_removals_time")
    op.drop_table("tenant_removals")
