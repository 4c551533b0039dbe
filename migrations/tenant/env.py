"""Alembic environment of the tenant database; the logic is shared in app.storage.migrate."""

from alembic import context

from app.storage.migrate import run_env
from app.storage.models import TenantModel as Base

run_env(context, Base.metadata)
