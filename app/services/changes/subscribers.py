"""Live change feeds for subscribers (GraphQL memoryChanged): one poller per tenant and
process reads the tenant's outbox by id and wakes that tenant's subscribers when it moves,
so changes written by any process (another API replica, the compactor's worker, the CLI)
arrive, and idle subscribers cost one small query per tenant per poll, whatever their count.
A subscriber reads its own changes after its own cursor, so it can resume after any id."""

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from app.errors import InvalidInput
from app.services.changes import change_events
from app.services.changes.change_events import Change, ChangeFilter
from app.storage.tenants import TenantDatabases

PAGE = 200  # changes read per query by one subscriber


class TooManySubscriptions(InvalidInput):
    """An API key already holds its most live subscriptions in this process."""


@dataclass
class _Feed:
    last: int
    moved: asyncio.Condition = field(default_factory=asyncio.Condition)
    subscribers: int = 0
    task: asyncio.Task[None] | None = None


class ChangeFeeds:
    """The process's feeds, one per tenant with subscribers, and the per-key bound."""

    def __init__(self, tenants: TenantDatabases, *, poll: float, per_key: int) -> None:
        self._tenants = tenants
        self._poll = poll
        self._per_key = per_key
        self._feeds: dict[str, _Feed] = {}
        self._keys: dict[str, int] = {}

    def active(self) -> int:
        return sum(self._keys.values())

    async def follow(
        self, tenant_id: str, key: str, wanted: ChangeFilter, after: int | None
    ) -> AsyncIterator[Change]:
        """The tenant's changes that `wanted` matches, after `after` (None: from now on),
        for as long as the caller iterates."""
        slot = hashlib.sha256(key.encode()).hexdigest()  # never the key itself in memory
        if self._keys.get(slot, 0) >= self._per_key:
            raise TooManySubscriptions(
                [], f"an API key holds at most {self._per_key} live subscriptions per server"
            )
        self._keys[slot] = self._keys.get(slot, 0) + 1
        try:
            feed = await self._join(tenant_id)
            try:
                cursor = feed.last if after is None else after
                while True:
                    async with self._tenants.lease(tenant_id) as db:
                        page = await change_events.changes_after(db, cursor, limit=PAGE)
                    for change in page:
                        cursor = change.id
                        if wanted.matches(change):
                            yield change
                    if len(page) == PAGE:
                        continue
                    async with feed.moved:
                        if feed.last <= cursor:
                            await feed.moved.wait()
            finally:
                self._leave(tenant_id, feed)
        finally:
            self._keys[slot] -= 1
            if not self._keys[slot]:
                del self._keys[slot]

    async def _join(self, tenant_id: str) -> _Feed:
        feed = self._feeds.get(tenant_id)
        if feed is None:
            async with self._tenants.lease(tenant_id) as db:
                last = await change_events.last_change_id(db)
            feed = self._feeds.get(tenant_id)  # another subscriber may have made it meanwhile
            if feed is None:
                feed = self._feeds[tenant_id] = _Feed(last)
                feed.task = asyncio.create_task(self._poll_feed(tenant_id, feed))
        feed.subscribers += 1
        return feed

    def _leave(self, tenant_id: str, feed: _Feed) -> None:
        feed.subscribers -= 1
        if feed.subscribers == 0 and self._feeds.get(tenant_id) is feed:
            del self._feeds[tenant_id]
            if feed.task is not None:
                feed.task.cancel()

    async def _poll_feed(self, tenant_id: str, feed: _Feed) -> None:
        while True:
            await asyncio.sleep(self._poll)
            with contextlib.suppress(Exception):  # a busy database: the next poll retries
                async with self._tenants.lease(tenant_id) as db:
                    last = await change_events.last_change_id(db)
                if last != feed.last:
                    feed.last = last
                    async with feed.moved:
                        feed.moved.notify_all()

    async def aclose(self) -> None:
        for feed in list(self._feeds.values()):
            if feed.task is not None:
                feed.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task
        self._feeds.clear()
