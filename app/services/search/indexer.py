"""The background indexer: embeds new and changed entries, off the write path.

Work is found, not queued: an entry needs embedding while it has no vector of its current
version by the embedder's model (app/storage/search/vectors.py), so a process killed mid-batch
loses nothing (the batch is found again) and repeats nothing stored (a stored vector ends
the entry's need). One process per tenant and model embeds at a time (a lease in the
tenant's database); storing is idempotent anyway. The model runs in a thread.
"""

import asyncio
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from app import metrics
from app.adapters.embedders import Embedder, to_blob
from app.adapters.gateway import GatewayError
from app.errors import BudgetExceeded
from app.services.search import page_cache
from app.storage.control import ControlDb
from app.storage.search import vectors
from app.storage.tenants import TenantDatabases, TenantDb
from app.storage.transactions import read_statement, write_transaction

log = logging.getLogger(__name__)

LEASE_SECONDS = 30.0


def entry_text(title: str, tags: Sequence[str], summary: str) -> str:
    """What the embedder reads of an entry."""
    return "\n".join([title, " ".join(tags), summary])


async def index_batch(db: TenantDb, embedder: Embedder, *, batch: int, owner: str) -> int | None:
    """Embed up to `batch` entries of `db` that need it; how many were stored, or None when
    another process holds the tenant's lease."""
    async with write_transaction(db.engine) as conn:
        if not await vectors.claim(conn, embedder.model, owner, LEASE_SECONDS):
            return None
    async with read_statement(db.engine) as conn:
        rows = await vectors.pending(conn, embedder.model, batch)
    if not rows:
        return 0
    embedded = await embedder.embed([entry_text(t, tags or [], s) for _, _, t, tags, s in rows])
    found = [
        (seq, version, to_blob(v)) for (seq, version, *_), v in zip(rows, embedded, strict=True)
    ]
    async with write_transaction(db.engine) as conn:
        stored = await vectors.store(conn, embedder.model, found)
        await vectors.bump_revision(conn)
    metrics.ENTRIES_EMBEDDED.inc(stored)
    return max(stored, len(rows))  # rows changed meanwhile are found again next batch


async def keyword_only(db: TenantDb) -> bool:
    """The tenant's switch: every search by words only, and nothing embedded."""
    async with read_statement(db.engine) as conn:
        return await vectors.keyword_only(conn)


async def set_keyword_only(db: TenantDb, value: bool) -> None:
    async with write_transaction(db.engine) as conn:
        await vectors.set_keyword_only(conn, value)


async def counts(db: TenantDb, model: str) -> tuple[int, int]:
    """(entries embedded by `model` at their current version, entries)."""
    async with read_statement(db.engine) as conn:
        return await vectors.counts(conn, model)


async def drop_other_models(db: TenantDb, model: str) -> int:
    """Once every entry has a vector by `model`, those of an earlier model go: a changed
    model is re-embedded in the background, searches using the new vectors as they come."""
    async with write_transaction(db.engine) as conn:
        return await vectors.drop_other_models(conn, model)


async def catch_up(db: TenantDb, embedder: Embedder, *, batch: int, owner: str) -> int:
    """Embed every entry of `db` that needs it, batch by batch; how many batches ran."""
    batches = 0
    while True:
        done = await index_batch(db, embedder, batch=batch, owner=owner)
        if not done:
            return batches
        batches += 1


class Indexer:
    """The in-process indexer: every `interval` seconds, each tenant whose entries changed
    since it was last caught up is embedded until nothing is left."""

    def __init__(
        self,
        control: ControlDb,
        tenants: TenantDatabases,
        embedder_for: Callable[[str], Awaitable[Embedder | None]],
        *,
        batch: int,
        interval: float,
        sweep: int,
    ) -> None:
        self._control = control
        self._tenants = tenants
        self._embedder_for = embedder_for
        self._batch = batch
        self._interval = interval
        self._sweep = sweep
        self._swept_to = ""  # the last tenant id the sweep of closed tenants reached
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        # tenant -> (model, the entries revision it was caught up at)
        self._caught_up: dict[str, tuple[str, int]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="entry-indexer")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # the next tick tries again; a broken tenant does not stop it
                log.exception("the entry indexer's pass failed")
            await asyncio.sleep(self._interval)

    async def tick(self) -> int:
        """One pass: every tenant open in this process (entries written through it), and
        the next `sweep` of the others in id order, round the list over the passes (entries
        written while no process had them open); how many batches ran. Looking at every
        tenant on every pass would open them all each second, in every process."""
        active = sorted(t.id for t in await self._control.tenants() if t.status == "active")
        open_now = set(self._tenants.open_ids())
        closed = [t for t in active if t not in open_now]
        after = [t for t in closed if t > self._swept_to]
        swept = (after + [t for t in closed if t <= self._swept_to])[: self._sweep]
        if swept:
            self._swept_to = swept[-1]
        batches = 0
        for tenant_id in [t for t in active if t in open_now] + swept:
            embedder = await self._embedder_for(tenant_id)
            if embedder is None:
                continue
            try:
                batches += await self._tenant(tenant_id, embedder)
            except (GatewayError, BudgetExceeded) as exc:
                # Its gateway failed or its budget is spent: the next pass tries again,
                # and the other tenants go on meanwhile.
                log.warning("embedding tenant %s stopped: %s", tenant_id, type(exc).__name__)
        return batches

    async def _tenant(self, tenant_id: str, embedder: Embedder) -> int:
        async with self._tenants.visit(tenant_id) as db:
            revision = await page_cache.read_revision(db)
            if revision is None or self._caught_up.get(tenant_id) == (embedder.model, revision):
                return 0
            async with read_statement(db.engine) as conn:
                if await vectors.keyword_only(conn):  # the tenant's switch: nothing to embed
                    self._caught_up[tenant_id] = (embedder.model, revision)
                    return 0
            batches = await catch_up(db, embedder, batch=self._batch, owner=self.owner)
            # Read before the check: a write after it moves the revision past this one.
            after = await page_cache.read_revision(db)
            async with read_statement(db.engine) as conn:
                left: list[Any] = await vectors.pending(conn, embedder.model, 1)
            if not left and after is not None:
                await drop_other_models(db, embedder.model)
                self._caught_up[tenant_id] = (embedder.model, after)
            return batches
