"""Alembic environment of the control database; the logic is shared in app.storage.migrate."""

from alembic import context

from app.storage.control import ControlModel as Base
from app.storage.migrate import run_env

run_env(context, Base.metadata)
