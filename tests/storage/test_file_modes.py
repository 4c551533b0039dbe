"""Memory files are private to the service's user; bound values never reach error text."""

import os
import stat
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.config import Settings
from app.deps import build
from app.services import events, tenants
from app.services.records import EventIn, Scope
from app.storage.transactions import write_transaction

pytestmark = pytest.mark.sqlite_only  # file modes of SQLite files


def existing(dbs: list[Path]) -> list[Path]:
    return [*dbs, *(Path(f"{f}-wal") for f in dbs if os.path.exists(f"{f}-wal"))]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_data_files_are_private(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    container = await build(settings)
    try:
        tenant, _ = await tenants.create_tenant(container.control, container.tenants, "acme")
        async with container.tenants.lease(tenant.id) as db:
            await events.append_event(db, EventIn(Scope.TEAM, "u1", "note", "private"))
            files = existing([settings.control_db_path, container.tenants.path(tenant.id)])
            assert files and all(mode(f) == 0o600 for f in files), [oct(mode(f)) for f in files]
            assert mode(settings.data_dir) == 0o700 and mode(settings.tenants_dir) == 0o700
            with pytest.raises(IntegrityError) as info:
                async with write_transaction(db.engine) as conn:
                    await conn.execute(
                        text("UPDATE memory_events SET body = :b"), {"b": "sk-SECRET-VALUE"}
                    )
            assert "sk-SECRET-VALUE" not in str(info.value)
    finally:
        await container.aclose()
