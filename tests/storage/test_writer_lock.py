"""The group commit of appends queues on the tenant's writer lock (fastpath.writer_lock), so
writers in other processes (serve --workers) wake when it is free instead of polling."""

import asyncio
import fcntl
import os
from pathlib import Path

import pytest

from app.config import Settings
from app.deps import build
from app.services import events
from app.services.records import EventIn, Scope
from app.storage.sqlite.fastpath.writer_lock import SUFFIX


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("JET_DATABASE_URL", raising=False)
    return Settings()


async def test_an_append_waits_for_the_writer_lock_held_elsewhere(settings: Settings) -> None:
    if not settings.sqlite_fast_path:
        pytest.skip("the writer lock belongs to the SQLite fast path (JET_SQLITE_FAST_PATH=0)")
    c = await build(settings)
    try:
        async with c.tenants.lease("t_lock") as db:
            await events.append_events(db, [EventIn(Scope.ENTITY, "e", "note", "first")])
            lock_file = f"{settings.tenants_dir / 't_lock.db'}{SUFFIX}"
            # Another process's writer, as far as the lock can tell: its own open file (no
            # O_CREAT: the first append made it).
            fd = os.open(lock_file, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                pending = asyncio.create_task(
                    events.append_events(db, [EventIn(Scope.ENTITY, "e", "note", "second")])
                )
                await asyncio.sleep(0.3)
                assert not pending.done(), "the append did not wait for the writer lock"
                fcntl.flock(fd, fcntl.LOCK_UN)
                stored = await asyncio.wait_for(pending, 30)
            finally:
                os.close(fd)
            assert len(stored) == 1
    finally:
        await c.aclose()
