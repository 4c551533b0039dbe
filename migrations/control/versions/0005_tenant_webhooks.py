"""tenants.webhooks_since: when the tenant's first webhook endpoint was registered, so the
worker's delivery loop visits only the tenants that have one

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 04:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.storage.types

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("webhooks_since", app.storage.types.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("webhooks_since")
