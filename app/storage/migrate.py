"""Alembic, run from code: upgrades a tenant or the control database to head.

Migrations are the only way a schema is created or changed. The per-database alembic
environments live in migrations/tenant and migrations/control (app/migrations in a wheel);
both call `run_env`.
"""

from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, create_engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.postgres import advisory_lock

Kind = Literal["tenant", "control"]


class NewDatabases(Protocol):
    """How a database that does not exist yet is made before it is opened and migrated as
    usual. The product has none (a new database is migrated from 0001: tenants are created
    rarely); the tests copy one already at head (tests/support/db_templates.py)."""

    def sqlite_file(self, kind: Kind, path: Path) -> None:
        """Make `path` when it does not exist; anything not at head is migrated after."""

    async def postgres_schema(self, conn: AsyncConnection, schema: str) -> None:
        """Make `schema` inside the caller's transaction when it does not exist."""


def _migrations_dir() -> Path:
    package = Path(__file__).resolve().parents[1]
    # A wheel carries them inside the package (setup.py); a checkout keeps them at its root.
    inside = package / "migrations"
    return inside if inside.is_dir() else package.parent / "migrations"


MIGRATIONS_DIR = _migrations_dir()


def is_fts_object(name: str | None) -> bool:
    # FTS5 virtual tables (and their shadow tables) and PostgreSQL's tsvector columns and
    # their indexes exist only in migrations: the models cannot carry them and autogenerate
    # would otherwise propose dropping them.
    return name is not None and ("_fts" in name or "search" in name)


def alembic_config(kind: Kind, url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR / kind))
    if url:
        cfg.set_main_option("sqlalchemy.url", url)
    return cfg


@cache
def head_revision(kind: Kind) -> str:
    head = ScriptDirectory.from_config(alembic_config(kind)).get_current_head()
    assert head is not None, f"no migrations for {kind}"
    return head


async def current_revision(conn: AsyncConnection, schema: str | None = None) -> str | None:
    """The database's (on PostgreSQL: `schema`'s) alembic revision; None when new."""
    if conn.dialect.name == "postgresql":
        assert schema is not None
        # Look before reading: a failed statement would abort the caller's transaction.
        # pg_tables, not to_regclass(): to_regclass answers from this backend's catalog
        # cache, which may not show a table another migrator has just committed.
        found = await conn.execute(
            text(
                "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = :s "
                "AND tablename = 'alembic_version'"
            ),
            {"s": schema},
        )
        if found.first() is None:
            return None
        query = text(f'SELECT version_num FROM "{schema}".alembic_version')
        row = (await conn.execute(query)).first()
    else:
        try:
            row = (await conn.execute(text("SELECT version_num FROM alembic_version"))).first()
        except OperationalError:  # no alembic_version table: a new, empty database
            return None
    return None if row is None else str(row[0])


def upgrade_sync(conn: Connection, kind: Kind) -> None:
    cfg = alembic_config(kind)
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")


async def upgrade(conn: AsyncConnection, kind: Kind, schema: str | None = None) -> bool:
    """Bring the database (on PostgreSQL: `schema`) behind `conn` to head inside the
    caller's transaction.

    Returns True when a migration ran. Cheap when already at head: one SELECT (two on
    PostgreSQL).
    """
    if conn.dialect.name != "postgresql":
        if await current_revision(conn) == head_revision(kind):
            return False
        await conn.run_sync(upgrade_sync, kind)
        return True
    assert schema is not None and schema.replace("_", "").isalnum(), schema
    if await current_revision(conn, schema) == head_revision(kind):
        return False
    # Two processes opening a new tenant at once: the second waits here, then finds it
    # migrated (SQLite gets the same from BEGIN IMMEDIATE).
    await advisory_lock(conn, f"migrate/{schema}")
    if await current_revision(conn, schema) == head_revision(kind):
        return False
    await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    # Unqualified names in the migrations (and alembic's version table) land in the
    # schema; SET LOCAL ends with this transaction, so no pooled connection keeps it.
    await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
    await conn.run_sync(upgrade_sync, kind)
    return True


def run_env(context: Any, metadata: MetaData) -> None:
    """Body of both env.py files: migrate the given connection, or the configured URL."""

    def include_object(obj: Any, name: str | None, type_: str, *_: Any) -> bool:
        return not (type_ in ("table", "column", "index") and is_fts_object(name))

    def run(conn: Connection) -> None:
        context.configure(
            connection=conn,
            target_metadata=metadata,
            render_as_batch=conn.dialect.name == "sqlite",
            include_object=include_object,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()

    conn = context.config.attributes.get("connection")
    if conn is not None:
        run(conn)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("set sqlalchemy.url (alembic -x) or run `jet-memory migrate`")
    engine = create_engine(url)
    with engine.begin() as sync_conn:
        run(sync_conn)
    engine.dispose()
