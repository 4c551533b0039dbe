"""Templates of the fixtures' new databases: a new tenant (or control) database copied from
one already migrated to head, where migrating it from 0001 would cost more than the copy
(docs/testing.md). Made once per test session: SQLite files at head, or a PostgreSQL
template database holding the control schema and spare tenant schemas at head, from which
each test's database is created. The product has no templates (app/storage/migrate.py's
NewDatabases is the seam these fill): tenant creation is rare, and a template kept beside
the data is one more thing to go stale.
A copy is only ever of a template at the current head, and the database is then opened as
usual, which migrates whatever is not at head: a template never skips a migration. What a
migration draws at random for each database is drawn again for each copy (`_REDRAW`).
"""

import asyncio
import os
import secrets
import shutil
import sqlite3
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.config import Settings
from app.storage import migrate, postgres
from app.storage.control import ControlDb
from app.storage.postgres import advisory_lock
from app.storage.sqlite.engines import sqlite_engine
from app.storage.transactions import write_transaction

# PostgreSQL: spare tenant schemas at head wait in the database under this prefix and the
# head's revision; a new tenant's schema is one of them renamed (no schema-qualified name
# inside a tenant's schema: its trigger functions use TG_TABLE_SCHEMA).
SPARE_PREFIX = "jet_spare_"


# Per database, a migration's random start (tenant 0005: the entry revision number, so a
# page cached under a dropped table's numbers is never served for a new one): a copy must
# not share it with its template.
_REDRAW = "UPDATE {table}memory_entries_revision SET n = :n"


def _random_start() -> int:
    return secrets.randbits(62)  # as migration 0005 draws it


@dataclass(frozen=True, slots=True)
class DatabaseTemplates:
    """Where new databases come from (app.storage.migrate.NewDatabases). SQLite: files at
    head (`tenant_file`, `control_file`), never written after they are made. PostgreSQL
    (`spares`): spare tenant schemas at head, made by `make_spares` in the database (or in
    its template database)."""

    tenant_file: Path | None = None
    control_file: Path | None = None
    spares: bool = False

    def sqlite_file(self, kind: migrate.Kind, path: Path) -> None:
        template = self.tenant_file if kind == "tenant" else self.control_file
        if template is not None:
            copy_sqlite(template, path, kind)

    async def postgres_schema(self, conn: AsyncConnection, schema: str) -> None:
        if self.spares:
            await claim_spare(conn, schema)


def sqlite_template_name(kind: migrate.Kind) -> str:
    """The template file of `kind` at the current head: a new migration names a new file."""
    return f"{kind}-{migrate.head_revision(kind)}.db"


async def make_sqlite_templates(directory: Path) -> DatabaseTemplates:
    """Migrate a tenant and a control database to head in `directory` (once per process
    that uses them) and make both read-only."""
    await asyncio.to_thread(directory.mkdir, mode=0o700, parents=True, exist_ok=True)
    files = {}
    for kind in ("tenant", "control"):
        path = directory / sqlite_template_name(kind)
        engine = sqlite_engine(
            path, synchronous="OFF", busy_timeout_ms=5000, pool_size=1, fast_path=False
        )
        try:
            async with write_transaction(engine) as conn:
                await migrate.upgrade(conn, kind)
        finally:
            await engine.dispose()  # the last connection's close checkpoints the WAL
        await asyncio.to_thread(_seal, path)
        files[kind] = path
    return DatabaseTemplates(tenant_file=files["tenant"], control_file=files["control"])


def _seal(path: Path) -> None:
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size:
        raise RuntimeError(f"template {path.name} not checkpointed")
    path.chmod(0o400)


def copy_sqlite(template: Path, dest: Path, kind: migrate.Kind) -> bool:
    """Make `dest` a copy of `template` if `dest` does not exist and the template is at the
    current head; False (nothing done) otherwise.

    The copy is written beside `dest` and linked into place (os.link fails if `dest`
    exists), so `dest` never exists half-written, and a process that created `dest`
    meanwhile keeps its own: the caller then opens and migrates `dest` as usual."""
    if dest.exists() or template.name != sqlite_template_name(kind):
        return False
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(template, tmp)
        os.chmod(tmp, 0o600)  # memory is private, as engines._prepare_file makes it
        if kind == "tenant":
            with sqlite3.connect(tmp) as conn:
                conn.execute(_REDRAW.format(table=""), {"n": _random_start()})
            conn.close()
        try:
            os.link(tmp, dest)
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(tmp)


def spare_prefix() -> str:
    return f"{SPARE_PREFIX}{migrate.head_revision('tenant')}_"


async def make_spares(conn: AsyncConnection, count: int) -> None:
    """Create `count` spare tenant schemas at head in the database behind `conn` (inside
    the caller's transaction)."""
    for i in range(count):
        await migrate.upgrade(conn, "tenant", f"{spare_prefix()}{i}")


async def claim_spare(conn: AsyncConnection, schema: str) -> bool:
    """Rename a spare schema at head to `schema` if `schema` does not exist (inside the
    caller's transaction, which then migrates it as usual). False when there is none.

    Under the same advisory lock as the migration of `schema` (migrate.upgrade), and one
    that orders every claim, so two processes never take one spare or make one schema."""
    if await _schema_exists(conn, schema):
        return False
    await advisory_lock(conn, f"migrate/{schema}", "templates/spares")
    if await _schema_exists(conn, schema):
        return False
    # LIKE's escape: the prefix's underscores are literal.
    pattern = spare_prefix().replace("_", r"\_") + "%"
    row = (
        await conn.execute(
            text(
                "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname LIKE :p "
                "ORDER BY nspname LIMIT 1"
            ),
            {"p": pattern},
        )
    ).first()
    if row is None:
        return False
    assert schema.replace("_", "").isalnum(), schema
    await conn.execute(text(f'ALTER SCHEMA "{row[0]}" RENAME TO "{schema}"'))
    await conn.execute(text(_REDRAW.format(table=f'"{schema}".')), {"n": _random_start()})
    return True


async def _schema_exists(conn: AsyncConnection, schema: str) -> bool:
    found = await conn.execute(
        text("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = :s"), {"s": schema}
    )
    return found.first() is not None


# Spare tenant schemas in each test's PostgreSQL database: each makes every CREATE DATABASE
# copy more files (docs/testing.md has the figures), and most tests make one tenant; the
# tenants past the spares are migrated as without a template.
SPARE_SCHEMAS = 1


def sqlite_templates(directory: Path) -> DatabaseTemplates:
    return asyncio.run(make_sqlite_templates(directory))


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
            await make_spares(conn, SPARE_SCHEMAS)
    finally:
        await engine.dispose()
