"""tenant_policies.embedder: what embeds a tenant's entries (local model, its gateway, none)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 04:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tenant_policies", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("embedder", sa.String(length=8), server_default="local", nullable=False)
        )
        batch_op.add_column(
            sa.Column(
                "embeddings_model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True
            )
        )
        batch_op.create_check_constraint(
            "ck_tenant_policies_embedder", "embedder IN ('local', 'gateway', 'none')"
        )


def downgrade() -> None:
    with op.batch_alter_table("tenant_policies", schema=None) as batch_op:
        batch_op.drop_constraint("ck_tenant_policies_embedder", type_="check")
        batch_op.drop_column("embeddings_model")
        batch_op.drop_column("embedder")
