"""Templates of the fixtures' new databases (app/storage/templates.py), made once per test
session: SQLite files at head, or a PostgreSQL template database holding the control schema
and spare tenant schemas at head, from which each test's database is created."""

import asyncio
import uuid
from pathlib import Path

from app.config import Settings
from app.storage import postgres, templates
from app.storage.control import ControlDb
from app.storage.transactions import write_transaction

# Spare tenant schemas in each test's PostgreSQL database: each makes every CREATE DATABASE
# copy more files (docs/testing.md has the figures), and most tests make one tenant; the
# tenants past the spares are migrated as without a template.
SPARE_SCHEMAS = 1


def sqlite_templates(directory: Path) -> templates.DatabaseTemplates:
    return asyncio.run(templates.make_sqlite_templates(directory))


def postgres_template(server_url: str) -> str:
    """Create a template database (control schema and spare tenant schemas at head) on the
    server; its name. Nobody stays connected to it, as CREATE DATABASE ... TEMPLATE needs."""
    from tests.support.postgres_server import create_database

    name = f"jet_template_{uuid.uuid4().hex[:12]}"
    url = asyncio.run(create_database(server_url, name))
    asyncio.run(_fill(url))
    return name


async def _fill(url: str) -> None:
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    control = ControlDb(settings)
    try:
        await control.migrate()
    finally:
        await control.aclose()
    engine = postgres.engine(url, pool_size=1)
    try:
        async with write_transaction(engine) as conn:
            await templates.make_spares(conn, SPARE_SCHEMAS)
    finally:
        await engine.dispose()
