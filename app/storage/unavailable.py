"""A tenant database that cannot serve a request right now: locked, corrupt, full, or (on
PostgreSQL) its server unreachable.

SQLite reports these as `sqlite3.OperationalError`/`DatabaseError` with a result code.
`classify` turns them into `TenantUnavailable(reason)`, which the edge answers with a clear
error (503 + Retry-After for a lock, 507 for a full disk, 500 naming corruption) instead
of a masked "Internal server error"; every other error stays what it was. The engines
raise it from SQLAlchemy's `handle_error` hook (app/storage/sqlite/engines.py), so it comes out of
opening a tenant (TenantDatabases.lease), of a query and of a commit alike.
"""

import sqlite3
from typing import Literal

from app.errors import Unavailable

Reason = Literal["busy", "corrupt", "full", "unreachable"]

# Primary result codes (the low byte of an extended code): https://sqlite.org/rescode.html
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 5, 6, 11, 13, 26
_BY_CODE: dict[int, Reason] = {
    _SQLITE_BUSY: "busy",
    _SQLITE_LOCKED: "busy",
    _SQLITE_CORRUPT: "corrupt",
    _SQLITE_NOTADB: "corrupt",
    _SQLITE_FULL: "full",
}
_BY_MESSAGE: tuple[tuple[str, Reason], ...] = (
    ("database is locked", "busy"),
    ("database table is locked", "busy"),
    ("file is not a database", "corrupt"),
    ("database disk image is malformed", "corrupt"),
    ("database or disk is full", "full"),
)

MESSAGES: dict[Reason, str] = {
    "busy": "the tenant database is busy (locked by another writer); retry shortly",
    "corrupt": "the tenant database file is corrupt or not a SQLite database; "
    "an operator must restore it from a backup",
    "full": "the tenant database could not be written: the disk (or its size limit) is "
    "full; nothing from this request was stored",
    "unreachable": "the database server cannot be reached (down, restarting or out of "
    "connections); nothing from this request was stored; retry shortly",
}
# HTTP status and Retry-After (seconds) per reason.
STATUS: dict[Reason, int] = {"busy": 503, "corrupt": 500, "full": 507, "unreachable": 503}
RETRY_AFTER: dict[Reason, int | None] = {
    "busy": 1,
    "corrupt": None,
    "full": None,
    "unreachable": 1,
}


class TenantUnavailable(Unavailable):
    """The tenant's database cannot serve this request (nothing of it was written)."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(MESSAGES[reason])
        self.reason: Reason = reason
        self.message = MESSAGES[reason]
        self.status = STATUS[reason]
        self.retry_after = RETRY_AFTER[reason]
        # A stable, machine-readable code for GraphQL `extensions.code` and REST `code`.
        self.code = f"TENANT_DATABASE_{reason.upper()}"


def classify(exc: BaseException) -> TenantUnavailable | None:
    """The TenantUnavailable for a SQLite lock, corruption or full disk; else None."""
    if isinstance(exc, TenantUnavailable):
        return exc
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _BY_CODE:
        return TenantUnavailable(_BY_CODE[code & 0xFF])
    text = str(exc).lower()
    for fragment, reason in _BY_MESSAGE:
        if fragment in text:
            return TenantUnavailable(reason)
    return None


# PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/15/errcodes-appendix.html) by class
# or code. A deadlock or serialisation failure is not here: the transaction is retried by
# whoever owns it (group commit retries each request alone), not reported as down.
_PG_BY_STATE: dict[str, Reason] = {
    "53100": "full",  # disk_full
    "53300": "unreachable",  # too_many_connections
    "55P03": "busy",  # lock_not_available
    "57P01": "unreachable",  # admin_shutdown
    "57P02": "unreachable",  # crash_shutdown
    "57P03": "unreachable",  # cannot_connect_now (starting up, recovering)
    "XX001": "corrupt",  # data_corrupted
    "XX002": "corrupt",  # index_corrupted
}


def classify_postgres(exc: BaseException) -> TenantUnavailable | None:
    """The TenantUnavailable for a PostgreSQL server that is down, full or refusing
    connections; else None. asyncpg's error may sit under SQLAlchemy's adapter."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            break
        if isinstance(seen, TenantUnavailable):
            return seen
        state = getattr(seen, "sqlstate", None) or getattr(seen, "pgcode", None)
        if isinstance(state, str):
            if state in _PG_BY_STATE:
                return TenantUnavailable(_PG_BY_STATE[state])
            if state.startswith("08"):  # connection_exception
                return TenantUnavailable("unreachable")
        # OSError: refused, reset or unroutable (on this path only the network raises it).
        if isinstance(seen, OSError | TimeoutError) or (
            type(seen).__name__ == "ConnectionDoesNotExistError"
        ):
            return TenantUnavailable("unreachable")
        seen = seen.__cause__ or seen.__context__
    return None
