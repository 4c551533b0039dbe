"""The group commit of appends queues on the tenant's writer lock (app/storage/sqlite/
writer_lock.py), so writers in other processes (serve --workers) wake when it is free instead
of polling; with the SQLite fast path on or off (it is behaviour, not a short cut)."""

import asyncio
import fcntl
import os
from pathlib import Path

import pytest

from app.config import Settings
from app.deps import build
from app.services import events
from app.services.records import EventIn, Scope
from app.storage.sqlite.writer_lock import SUFFIX, WriterLock


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("JET_DATABASE_URL", raising=False)
    return Settings()


async def test_an_append_waits_for_the_writer_lock_held_elsewhere(settings: Settings) -> None:
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


async def test_a_cancelled_wait_lets_the_lock_go_once_it_has_it(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    lock = WriterLock(database)
    fd = os.open(f"{database}{SUFFIX}", os.O_RDWR | os.O_CREAT)  # another process's writer
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)

        async def write() -> None:
            async with lock.held():
                pass

        waiting = asyncio.create_task(write())
        await asyncio.sleep(0.3)
        assert not waiting.done(), "the writer did not wait for the lock"
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        abandoned = lock._abandoned  # the thread still waiting for the lock
        assert abandoned is not None
        fcntl.flock(fd, fcntl.LOCK_UN)
        await asyncio.wait_for(asyncio.shield(abandoned), 30)  # it has taken the lock
        await asyncio.sleep(0)
        # ... and let it go: the other writer takes it at once.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
        lock.close()
