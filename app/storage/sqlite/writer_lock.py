"""Writers of one SQLite file in several processes queue on a file lock, not on SQLite's
busy handler (fcntl.flock on a file beside the database).

SQLite's busy handler polls: a writer that finds the file locked sleeps 1, 2, 5 ... up to
100 ms before it looks again, so with `serve --workers 2` appends to one tenant spent most
of their time asleep while the lock was free. A blocking flock() on a file beside the
database wakes the next writer as soon as the holder lets go. The lock only orders writers
that take it (the group commit of appends); SQLite's own lock still guards the file, so a
writer that does not take it (an entry update, a migration) is as safe as before and waits
on busy_timeout as before. Behaviour, not a short cut: taken whether the SQLite fast path
is on or off.
"""

import asyncio
import fcntl
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

# Beside the database, named like SQLite's own -wal and -shm (removed with them).
SUFFIX = "-writer"


class WriterLock:
    """The writer lock of one database file, as this process's group commit takes it."""

    def __init__(self, database: str | os.PathLike[str]) -> None:
        self._path = f"{os.fspath(database)}{SUFFIX}"
        self._fd: int | None = None
        self._closer: weakref.finalize[Any, Any] | None = None
        # A wait whose task was cancelled: its thread still waits for the lock.
        self._abandoned: asyncio.Future[None] | None = None
        self._closed = False

    def _fileno(self) -> int:
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
            # Closed by close(), or when the lock is collected without one.
            self._closer = weakref.finalize(self, os.close, self._fd)
        return self._fd

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """The lock, held while the block runs. A free lock is taken at once; a held one is
        waited for on a thread, so the event loop goes on serving meanwhile."""
        if self._abandoned is not None:
            # Its thread's flock is on the same open file, where ours would not wait.
            await asyncio.shield(self._abandoned)
        fd = self._fileno()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            await self._wait(fd)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    async def _wait(self, fd: int) -> None:
        waiting = asyncio.ensure_future(asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX))
        try:
            await asyncio.shield(waiting)
        except asyncio.CancelledError:
            # Let the lock go as soon as the thread has it, or other processes' writers
            # would wait for it forever.
            self._abandoned = waiting
            waiting.add_done_callback(self._let_go)
            raise

    def _let_go(self, waiting: "asyncio.Future[None]") -> None:
        self._abandoned = None
        if not waiting.cancelled() and waiting.exception() is None and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        if self._closed:
            self.close()

    def close(self) -> None:
        self._closed = True
        # Not under a waiting thread (the number could be another file's by the time it
        # is done): closed when it is.
        if self._abandoned is None and self._closer is not None:
            self._closer()
            self._fd = self._closer = None
