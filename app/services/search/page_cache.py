"""A cache of memoryEntries search pages (Solr's queryResultCache, in process), invalidated
exactly by writes to the tenant's entries rather than by time.

Agents ask the same questions at the start of many sessions (the context loader), while
entries change rarely (curation, the daily compactor); a common-word question costs FTS5
milliseconds of ranking (docs/benchmarks.md, search). So a page is kept, keyed by the tenant of
the leased database (never anything from the request) and everything the search depends
on: the question's words as app/services/search/analysis.py picks them, scope, scopeRef, tags,
minImportance, sources, first and the cursor. It is stamped with the tenant's entries
revision: `memory_entries_revision.n`, which database triggers change in the same
transaction as any insert, update or delete of an entry, by any writer (other API
processes, the compactor's worker, a raw client; migration 0005).

A lookup reads the revision (one row; on SQLite on the event loop through the
InlineReader) and serves the cached page only if its stamp is equal. Otherwise the search
runs as without the cache, and its page is stored under the revision read *before* it:

- The search starts after that read, so it sees at least every write the read saw.
- A write that commits after the read (before, during or after the search) moved the
  revision past the stamp, so this page is never served: every later lookup reads a
  revision that differs from the stamp.
- So a page is served only while no write has committed since its stamp was read, and
  then the database holds exactly what the search saw.

Stamping with a revision read after the search would be wrong: a write committed between
the search's snapshot and that read would be missing from a page stamped as if it had
been seen, and the page would be served until the next write. The tests
(tests/services/test_search_cache.py) commit a write just before and just after the
search's own read, and fail with that order.

Only equality of stamps means anything (a revision is not a clock). Pages are kept as
tuples and made into new records on every hit, so no caller shares a list with the cache
or with another caller. Used from the event loop only (no lock).

Identical searches at once (16 agents starting sessions with the same new question) are
searched once: a miss for a key and revision that a search is already running for waits
for it (`joined`) and takes its page from the cache, rather than asking FTS5 the same
question again. If that search fails or its client goes away, one of the waiters
searches again and the others wait for it.
"""

import asyncio
import dataclasses
import enum
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Hashable
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select

from app import metrics
from app.services import entry_rows
from app.services.records import Edge, Entry, EntryFilter, Page
from app.services.search import analysis
from app.storage import reads
from app.storage.models import entries_revision_table
from app.storage.tenants import TenantDb

# The cache's key in TenantDb.shared (made by app/deps.py from JET_SEARCH_CACHE_PAGES).
KEY = "entry_search_cache"

REVISION = select(entries_revision_table.c.n)
_HIT = metrics.ENTRY_SEARCH_CACHE.labels(result="hit")
_MISS = metrics.ENTRY_SEARCH_CACHE.labels(result="miss")
_STALE = metrics.ENTRY_SEARCH_CACHE.labels(result="stale")
_JOINED = metrics.ENTRY_SEARCH_CACHE.labels(result="joined")

# A page as immutable values: ((cursor, score, matched terms, entry fields with tags as a
# tuple, similarity), ...) and has_next_page.
_Frozen = tuple[
    tuple[tuple[str, float | None, tuple[str, ...] | None, tuple[Any, ...], float | None], ...],
    bool,
]


class Search(Protocol):
    def __call__(
        self, db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
    ) -> Awaitable[Page[Entry]]: ...


class SearchCache:
    """At most `max_pages` search pages over all tenants, holding at most `max_bytes` (as
    `weigh` counts them), least recently used dropped first.

    Both bounds, because a page's size is not fixed: a context loader's candidates grow
    with the tenant's entries (up to context.KEEP_MAX), so a bound in pages alone let the
    cache's memory grow with the tenants for hours (docs/benchmarks.md, "Memory under a
    soak").

    Written here over an OrderedDict (as the tenant LRU in app/storage/tenants.py) rather
    than taken from a library: cachetools is not a dependency of the project, and
    SQLAlchemy's LRUCache (app/storage/sqlite/fastpath uses it for compiled statements) is an
    internal utility that lets its size run to 1.5x before pruning, where this bound is
    documented and exact."""

    def __init__(self, max_pages: int, *, max_bytes: int | None = None) -> None:
        if max_pages < 1:
            raise ValueError("max_pages must be at least 1 (0 means no cache: make none)")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be at least 1 (None: pages alone bound the cache)")
        self.max_pages = max_pages
        self.max_bytes = sys.maxsize if max_bytes is None else max_bytes
        self.bytes = 0  # the sum of the kept values' weights
        # key -> (revision, a page as _Frozen or a value of put_value, its weight)
        self._pages: OrderedDict[Hashable, tuple[int, Any, int]] = OrderedDict()
        # (key, revision) -> set when the search running for it has ended, page or not.
        self.flights: dict[tuple[Hashable, int], asyncio.Event] = {}

    def __len__(self) -> int:
        return len(self._pages)

    def get(self, key: Hashable, revision: int, *, count: bool = True) -> Page[Entry] | None:
        """The page cached under `key` if it was stamped with `revision`, else None;
        counted as a hit, miss or stale lookup unless not `count`."""
        frozen = self._lookup(key, revision, count)
        return None if frozen is None else _thaw(frozen)

    def put(self, key: Hashable, revision: int, page: Page[Entry]) -> None:
        """Keep `page`, searched after `revision` was read."""
        self._keep(key, revision, _freeze(page))

    def get_value(self, key: Hashable, revision: int) -> tuple[Any, ...] | None:
        """Like `get`, for a value kept by `put_value` (the context loader's candidates)."""
        value: tuple[Any, ...] | None = self._lookup(key, revision, True)
        return value

    def put_value(self, key: Hashable, revision: int, value: tuple[Any, ...]) -> None:
        """Keep `value`, found after `revision` was read: a tuple of immutable values
        (frozen records of immutable fields), shared as it is by every caller."""
        self._keep(key, revision, value)

    def _lookup(self, key: Hashable, revision: int, count: bool) -> Any:
        found = self._pages.get(key)
        if found is None:
            if count:
                _MISS.inc()
            return None
        stamp, value, weight = found
        if stamp != revision:
            if count:
                _STALE.inc()
            del self._pages[key]  # never servable again: make room
            self.bytes -= weight
            return None
        if count:
            _HIT.inc()
        self._pages.move_to_end(key)
        return value

    def _keep(self, key: Hashable, revision: int, value: Any) -> None:
        found = self._pages.get(key)
        if found is not None and found[0] > revision:
            # A search that started later stored this one meanwhile (revisions only grow
            # between two reads of one table); keep the page more likely to be served.
            return
        if found is not None:
            del self._pages[key]
            self.bytes -= found[2]
        weight = weigh(key) + weigh(value)
        if weight > self.max_bytes:
            # Bigger than the whole cache: not kept (searches waiting for it search again).
            return
        self._pages[key] = (revision, value, weight)
        self.bytes += weight
        while len(self._pages) > self.max_pages or self.bytes > self.max_bytes:
            _, (_, _, dropped) = self._pages.popitem(last=False)
            self.bytes -= dropped
            metrics.ENTRY_SEARCH_CACHE_EVICTIONS.inc()


async def search_page(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None, search_fn: Search
) -> Page[Entry]:
    """`search_fn`'s page of `flt` (a search), from the cache when the tenant's entries have
    not changed since it was cached; `search_fn` runs otherwise, and always when the
    process has no cache (JET_SEARCH_CACHE_PAGES=0)."""
    cache = db.shared.get(KEY)
    if not isinstance(cache, SearchCache):
        return await search_fn(db, flt, first=first, after=after)
    assert flt.search is not None
    key = (
        db.tenant_id,
        tuple(analysis.words(flt.search, "search")),
        flt.scope,
        flt.scope_ref,
        tuple(flt.tags or ()),
        flt.min_importance,
        tuple(flt.sources or ()),
        first,
        after,
        flt.keyword_only,
    )
    revision = await read_revision(db)
    if revision is None:  # no revision row (removed by hand): nothing can be cached
        return await search_fn(db, flt, first=first, after=after)
    flight = cache.flights.get((key, revision))
    if flight is None:
        page = cache.get(key, revision)
        if page is not None:
            return page
    while flight is not None:
        # The same search under the same revision is running: its page, when it is done
        # (no page is cached under this revision until then).
        _JOINED.inc()
        await flight.wait()
        page = cache.get(key, revision, count=False)
        if page is not None:
            return page
        # It failed, or its client left: join the waiter searching again, or be it.
        flight = cache.flights.get((key, revision))
    cache.flights[key, revision] = flight = asyncio.Event()
    try:
        page = await search_fn(db, flt, first=first, after=after)
        if not page.stale:
            cache.put(key, revision, page)
    finally:
        del cache.flights[key, revision]
        flight.set()
    return page


async def read_revision(db: TenantDb) -> int | None:
    """The tenant's entries revision now (None without its row): a one-row table, read
    as an index-bounded read (app/storage/transactions.py)."""
    rows = await reads.index_rows(db, REVISION, {})
    return int(rows[0][0]) if rows else None


def weigh(value: object) -> int:
    """The bytes `value` holds: sys.getsizeof summed over it and, through tuples and slotted
    dataclasses, what it holds; a tuple of records of one slotted dataclass (the context
    loader's candidates: numbers and times, the same size each) is weighed by its first.
    Enum members, None and booleans are the process's, not the value's; other objects
    that may be shared (interned strings, small integers) are counted at each use, so the
    figure errs on the side of less memory. Written here because the library that does
    this (pympler's asizeof) is not a dependency, and walks far more than a cached value
    holds."""
    size = 0
    todo = [value]
    while todo:
        obj = todo.pop()
        kind = type(obj)
        if kind in _LEAVES:
            size += sys.getsizeof(obj)
            continue
        if obj is None or kind is bool or isinstance(obj, enum.Enum):
            continue
        size += sys.getsizeof(obj)
        if kind is tuple:
            items: Any = obj
            first = type(items[0]) if items else None
            if _is_record(first) and all(type(item) is first for item in items):
                size += len(items) * weigh(items[0])
            else:
                todo.extend(items)
        elif _is_record(kind):
            todo.extend(getattr(obj, name) for name in vars(kind)["__slots__"])
    return size


_LEAVES = frozenset({str, int, float, datetime, bytes})


def _is_record(kind: type | None) -> bool:
    return dataclasses.is_dataclass(kind) and "__slots__" in vars(kind)


def _freeze(page: Page[Entry]) -> _Frozen:
    edges = tuple(
        (
            edge.cursor,
            edge.score,
            None if edge.matched_terms is None else tuple(edge.matched_terms),
            _fields(edge.node),
            edge.similarity,
        )
        for edge in page.edges
    )
    return edges, page.has_next_page


def _fields(e: Entry) -> tuple[Any, ...]:
    """An entry's fields in order (entry_rows.NAMES), lists as tuples: a kept page is never
    changed by a caller of the cache (see _thaw)."""
    return tuple(
        tuple(v) if isinstance(v, list) else v for v in (getattr(e, n) for n in entry_rows.NAMES)
    )


def _thaw(frozen: _Frozen) -> Page[Entry]:
    edges, has_next_page = frozen
    return Page(
        [
            Edge(
                cursor,
                entry_rows.to_entry(fields),
                score,
                None if matched is None else list(matched),
                similarity,
            )
            for cursor, score, matched, fields, similarity in edges
        ],
        has_next_page,
    )
