"""Group commit: concurrent writes to one database share a transaction.

SQLite commits cost a sync each; one transaction per request caps appends at a few
thousand a second. Requests queue here; one writer task takes everything queued, applies
it in one BEGIN IMMEDIATE transaction, commits, and only then answers each request, so an
acknowledged write is durable. If the shared transaction fails, each request is retried
alone, so one bad request never fails its neighbours; a database that is locked, corrupt or
full (TenantUnavailable) fails the whole group at once, nothing of it stored.
"""

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage.sqlite.fastpath import OneHopDialect, write_on_thread
from app.storage.sqlite.writer_lock import WriterLock
from app.storage.transactions import write_transaction
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)

Req = TypeVar("Req")
Res = TypeVar("Res")
# Applies a group of requests inside one open transaction; one result or exception each.
Apply = Callable[[AsyncConnection, Sequence[Req]], Awaitable[list[Res | BaseException]]]
# The same on SQLite, run on the connection's thread with plain sqlite3 calls
# (app.storage.sqlite.fastpath.on_thread): the whole transaction is one hand-off.
ApplyOnThread = Callable[[sqlite3.Connection, Sequence[Req]], list[Res | BaseException]]


class GroupCommitter(Generic[Req, Res]):
    def __init__(
        self,
        engine: AsyncEngine,
        apply: Apply[Req, Res],
        *,
        apply_on_thread: ApplyOnThread[Req, Res] | None = None,
        size: Callable[[Req], int] = lambda _: 1,
        max_size: int = 2000,
        writer_lock: WriterLock | None = None,
    ) -> None:
        self._engine = engine
        # Held around each transaction: writers in other processes queue on it.
        self._writer_lock = writer_lock
        self._apply = apply
        # The SQLite fast path only; otherwise `apply` runs in write_transaction.
        self._on_thread = apply_on_thread if isinstance(engine.dialect, OneHopDialect) else None
        self._size = size
        self._max_size = max_size
        # None is the stop signal from aclose.
        self._queue: asyncio.Queue[tuple[Req, asyncio.Future[Res]] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._current: list[tuple[Req, asyncio.Future[Res]]] = []  # the group being written
        self.groups = 0  # transactions committed: lets tests see that requests shared them

    async def submit(self, request: Req) -> Res:
        if self._closed:
            raise RuntimeError("database is closing")
        future: asyncio.Future[Res] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((request, future))
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="group-commit")
        # A client that goes away cancels only its own future: the writer skips answering
        # a done future, and its write (shared with others) goes ahead. (asyncio.shield
        # did the same with a second future and two callbacks per request.)
        return await future

    async def aclose(self) -> None:
        """Finish what is queued, then stop."""
        self._closed = True
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
        if self._writer_lock is not None:
            self._writer_lock.close()

    async def _run(self) -> None:
        try:
            await self._drain()
        except BaseException as exc:
            # The writer must never die silently: fail every request it holds or that is
            # queued, so no caller waits forever, and let the next submit start a new one.
            self._task = None
            pending = list(self._current)
            while not self._queue.empty():
                item = self._queue.get_nowait()
                if item is not None:
                    pending.append(item)
            cancelled = isinstance(exc, asyncio.CancelledError)
            error = RuntimeError("the group-commit writer stopped") if cancelled else exc
            for _, future in pending:
                if not future.done():
                    future.set_exception(error)
            if cancelled or not isinstance(exc, Exception):
                raise
            log.exception("group-commit writer failed; its requests were failed")

    async def _drain(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            group = [first]
            size = self._size(first[0])
            while size < self._max_size and not self._queue.empty():
                nxt = self._queue.get_nowait()
                if nxt is None:
                    self._queue.put_nowait(nxt)
                    break
                group.append(nxt)
                size += self._size(nxt[0])
            self._current = group
            await self._commit(group)
            self._current = []

    async def _commit(self, group: list[tuple[Req, asyncio.Future[Res]]]) -> None:
        results: list[Res | BaseException]
        try:
            results = await self._transaction([req for req, _ in group])
        except TenantUnavailable as exc:
            # Locked past busy_timeout, corrupt or full: the whole transaction rolled back
            # and retrying each request alone would only wait (or fail) once per request.
            # Every request of the group fails with it; none of them was stored.
            results = [exc] * len(group)
        except Exception as exc:
            if len(group) > 1:
                # One request may have poisoned the shared transaction: retry each alone.
                for item in group:
                    await self._commit([item])
                return
            results = [exc]
        for (_, future), result in zip(group, results, strict=True):
            if future.done():
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

    async def _transaction(self, requests: list[Req]) -> list[Res | BaseException]:
        if self._writer_lock is None:
            return await self._write(requests)
        async with self._writer_lock.held():
            return await self._write(requests)

    async def _write(self, requests: list[Req]) -> list[Res | BaseException]:
        on_thread = self._on_thread
        if on_thread is not None:
            results = await write_on_thread(self._engine, lambda conn: on_thread(conn, requests))
            self.groups += 1
            return results
        async with write_transaction(self._engine) as conn:
            results = await self._apply(conn, requests)
        self.groups += 1
        return results
