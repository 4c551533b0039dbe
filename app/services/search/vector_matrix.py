"""The tenant's entry vectors held in the process, one matrix per tenant, for search by
meaning (app/services/search/fusion.py): read once, read again when the entries revision moves (in
the background for a big tenant), rows sorted by scope so a search scores its scope's rows as
one slice."""

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncConnection

from app.adapters.embedders import from_blobs
from app.storage.search import vectors
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Matrix:
    model: str
    revision: int
    seqs: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    # Rows sorted by scope and scopeRef (as codes), and where each scope and each pair
    # starts and ends: a search reads its scope's rows as one slice.
    scope_codes: dict[str, int]
    ref_codes: dict[str | None, int]
    scope_rows: dict[int, tuple[int, int]]
    pair_rows: dict[tuple[int, int], tuple[int, int]]
    read_seconds: float = 0.0
    read_at: float = 0.0  # time.monotonic() when the read ended


ANY_REF = object()  # in Where.scopes: any scopeRef of the scope


@dataclass(frozen=True)
class Where:
    """Which embedded entries a dense ranking may return: those in one of `scopes` ((scope,
    scopeRef) pairs, a None scope for any scope, ANY_REF for any scopeRef; none: every
    entry), filtered in memory, and passing `conds` on memory_entries, checked in the
    database on the nearest candidates only."""

    scopes: tuple[tuple[str | None, object], ...] = ()
    conds: tuple[Any, ...] = ()


def nearest(
    matrix: Matrix,
    query: npt.NDArray[np.float32],
    hwm: int,
    where: Where,
    depth: int,
) -> list[tuple[int, float]]:
    """(seq, similarity) of the `depth` rows nearest `query` in `where`'s scopes (its
    conditions are the caller's) at or below `hwm`, nearest first."""
    seqs, sims = [], []
    # Rows are kept sorted by scope and scopeRef, so a scope's rows are one slice: scored in
    # place, neither copied nor masked out of the whole matrix.
    for start, end in _row_ranges(matrix, where.scopes):
        part = matrix.seqs[start:end]
        scored = matrix.vectors[start:end] @ query
        below = part <= hwm
        seqs.append(part[below])
        sims.append(scored[below])
    if not seqs:
        return []
    found, scores = np.concatenate(seqs), np.concatenate(sims)
    if not len(found):
        return []
    top = (
        np.argpartition(-scores, depth - 1)[:depth]
        if len(scores) > depth
        else np.arange(len(scores))
    )
    order = top[np.argsort(-scores[top], kind="stable")]
    return [(int(found[i]), float(scores[i])) for i in order]


def _row_ranges(
    matrix: Matrix, scopes: Sequence[tuple[str | None, object]]
) -> list[tuple[int, int]]:
    """The matrix's row slices holding `scopes` (Where.scopes), without overlaps."""
    if not scopes:
        return [(0, len(matrix.seqs))]
    ranges: set[tuple[int, int]] = set()
    for scope, ref in scopes:
        scope_code = None if scope is None else matrix.scope_codes.get(scope)
        if scope is not None and scope_code is None:
            continue
        if ref is ANY_REF:
            ranges.add(
                (0, len(matrix.seqs)) if scope_code is None else matrix.scope_rows[scope_code]
            )
            continue
        ref_code = matrix.ref_codes.get(ref if isinstance(ref, str) else None)
        if ref_code is None:
            continue
        ranges.update(
            rows
            for (s, r), rows in matrix.pair_rows.items()
            if r == ref_code and (scope_code is None or s == scope_code)
        )
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


@dataclass
class Matrices:
    """The process's matrices, the least recently used dropped past `kept` tenants."""

    max_vectors: int = 200_000
    kept: int = 4
    # A matrix of more rows than this is read again in the background after a change, at
    # most once per `refresh_gap` times its last read's time: while the indexer or the
    # writers move the revision on, a big tenant's searches would otherwise each wait for a
    # whole new read. (Rows, not seconds: a busy machine must not change what a search sees.)
    background_rows: int = 20_000
    refresh_gap: float = 4.0
    _cache: "OrderedDict[str, Matrix]" = field(default_factory=OrderedDict)
    # One read of a tenant's vectors at a time: concurrent searches after a change wait
    # for it rather than each holding a copy.
    _loading: asyncio.Lock = field(default_factory=asyncio.Lock)
    _refreshing: "dict[str, asyncio.Task[None]]" = field(default_factory=dict)

    async def get(
        self, db: TenantDb, model: str, revision: int, conn: AsyncConnection | None = None
    ) -> Matrix:
        """The tenant's current vectors by `model` as one matrix, read again when its entries
        `revision` moved (a write, or the indexer storing vectors): at once for a small
        tenant, else in the background while searches use the matrix they have (entries
        embedded since are found by their words meanwhile). Read in `conn` when given."""
        held = self._cache.get(db.tenant_id)
        if held is not None and held.model == model:
            if held.revision == revision:
                self._cache.move_to_end(db.tenant_id)
                return held
            if len(held.seqs) > self.background_rows:
                self._refresh_later(db, model, revision, held)
                return held
        if conn is not None:
            return await self._read_now(db, model, revision, conn)
        async with read_statement(db.engine) as own:
            return await self._read_now(db, model, revision, own)

    async def _read_now(
        self, db: TenantDb, model: str, revision: int, conn: AsyncConnection
    ) -> Matrix:
        # The connection is taken before the lock, so the lock's holder never waits for the pool
        # while others hold the pool's connections and wait for the lock.
        async with self._loading:
            held = self._cache.get(db.tenant_id)
            if held is not None and held.model == model and held.revision == revision:
                return held  # read meanwhile by the search this one waited for
            return await self._read(db, model, revision, conn)

    def _refresh_later(self, db: TenantDb, model: str, revision: int, held: Matrix) -> None:
        """One background read of the tenant's matrix at a time, spaced by `refresh_gap`."""
        if db.tenant_id in self._refreshing:
            return
        if time.monotonic() - held.read_at < self.refresh_gap * held.read_seconds:
            return

        async def refresh() -> None:
            async with read_statement(db.engine) as conn:
                await self._read_now(db, model, revision, conn)

        task = asyncio.get_running_loop().create_task(refresh())
        self._refreshing[db.tenant_id] = task
        task.add_done_callback(lambda t: self._refreshed(db.tenant_id, t))

    def _refreshed(self, tenant_id: str, task: "asyncio.Task[None]") -> None:
        self._refreshing.pop(tenant_id, None)
        if not task.cancelled() and task.exception() is not None:
            # The next search that finds the matrix stale tries again; searches keep the old one.
            log.warning(
                "refreshing the vectors of tenant %s failed: %r", tenant_id, task.exception()
            )

    async def _read(self, db: TenantDb, model: str, revision: int, conn: AsyncConnection) -> Matrix:
        started = time.monotonic()
        rows = await vectors.matrix_rows(conn, model, limit=self.max_vectors)
        # Built on a thread: sorting and decoding a big tenant's rows would hold the loop.
        held = await asyncio.to_thread(_build, model, revision, rows, started)
        self._cache[db.tenant_id] = held
        while len(self._cache) > self.kept:
            self._cache.popitem(last=False)
        return held


def _build(
    model: str, revision: int, rows: Sequence[tuple[int, str, str | None, bytes]], started: float
) -> Matrix:
    """The matrix of (seq, scope, scopeRef, vector) rows, sorted by scope and scopeRef."""
    scope_codes: dict[str, int] = {}
    ref_codes: dict[str | None, int] = {}
    count = len(rows)
    scopes = np.fromiter(
        (scope_codes.setdefault(r[1], len(scope_codes)) for r in rows), dtype=np.int64, count=count
    )
    refs = np.fromiter(
        (ref_codes.setdefault(r[2], len(ref_codes)) for r in rows), dtype=np.int64, count=count
    )
    order = np.lexsort((refs, scopes))
    scopes, refs = scopes[order], refs[order]
    seqs = np.fromiter((rows[i][0] for i in order), dtype=np.int64, count=count)
    matrix = from_blobs([rows[i][3] for i in order])
    ended = time.monotonic()
    return Matrix(
        model,
        revision,
        seqs,
        matrix,
        scope_codes,
        ref_codes,
        _runs(scopes),
        _runs(scopes * len(ref_codes) + refs, (scopes, refs)),
        ended - started,
        ended,
    )


def _runs(keys: npt.NDArray[np.int64], parts: Any = None) -> dict[Any, tuple[int, int]]:
    """Where each value of sorted `keys` starts and ends; keyed by the value, or by the
    tuple of `parts` at that row."""
    if not len(keys):
        return {}
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    return {
        (int(keys[a]) if parts is None else tuple(int(p[a]) for p in parts)): (int(a), int(b))
        for a, b in zip(starts, ends, strict=True)
    }
