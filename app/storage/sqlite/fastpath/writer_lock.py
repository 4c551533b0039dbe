"""Writers of one SQLite file in several processes queue on a file lock, not on SQLite's
busy handler (documented seams: sqlite3.connect's `factory`, fcntl.flock).

SQLite's busy handler polls: a writer that finds the file locked sleeps 1, 2, 5 ... up to
100 ms before it looks again, so with `serve --workers 2` appends to one tenant spent most
of their time asleep while the lock was free. A blocking flock() on a file beside the
database wakes the next writer as soon as the holder lets go. The lock only orders writers
that take it (the group commit of appends, on aiosqlite's thread); SQLite's own lock still
guards the file, so a writer that does not take it (an entry update, a migration) is as
safe as before and waits on busy_timeout as before.
"""

import fcntl
import os
import sqlite3
import weakref
from typing import Any

# Beside the database, named like SQLite's own -wal and -shm (removed with them).
SUFFIX = "-writer"


class WriterLockedConnection(sqlite3.Connection):
    """A sqlite3 connection that can hold its database's writer lock (`lock_writers`)."""

    def __init__(self, database: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(database, *args, **kwargs)
        self._lock_path = f"{os.fspath(database)}{SUFFIX}"
        self._lock_fd: int | None = None
        self._closer: weakref.finalize[Any, Any] | None = None

    def lock_writers(self) -> None:
        """Wait for the writer lock (blocks this thread: call it on aiosqlite's)."""
        if self._lock_fd is None:
            self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            # Closed with the connection, or when it is collected without a close().
            self._closer = weakref.finalize(self, os.close, self._lock_fd)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)

    def unlock_writers(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        super().close()
        if self._closer is not None:
            self._closer()
            self._lock_fd = self._closer = None
