"""The search page cache (app/services/search/page_cache.py) behind memoryEntries(search): a hit is
the page a search would give; any write to the tenant's entries, by this process or any
other, makes the next lookup search again; tenants never share a page; the bounds (pages,
and bytes as measured) hold;
JET_SEARCH_CACHE_PAGES=0 turns it off; a write racing a search never leaves a stale
page to be served; and identical searches at once are searched once. On both backends."""

import asyncio
import contextlib
import random
import tracemalloc
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from app.config import Settings
from app.deps import Container, build
from app.errors import NotFound
from app.services import entries, events
from app.services.compaction import compact_tenant
from app.services.context import loader
from app.services.context.ranking import Candidate
from app.services.records import (
    Entry,
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    EventIn,
    Page,
    Scope,
)
from app.services.search import keywords, page_cache
from app.storage.tenants import TenantDb
from tests.conftest import TenantFixture, make_tenant, sample
from tests.support.raw_sql import run_sql

WORDS = "budget roas campaign launch creative audience pacing invoice weekly report".split()
SOURCES = [EntrySource.CHAT, EntrySource.CALL, EntrySource.EMAIL, EntrySource.MANUAL]
ACME = {"scope": Scope.ENTITY, "scope_ref": "ent_acme"}


def entry_in(i: int, rng: random.Random) -> EntryIn:
    scope, ref = [
        (Scope.ENTITY, "ent_acme"),
        (Scope.ENTITY, "ent_globex"),
        (Scope.INSTITUTIONAL, None),
    ][i % 3]
    return EntryIn(
        scope=scope,
        scope_ref=ref,
        title=" ".join(rng.sample(WORDS, 2)).title(),
        summary=" ".join(rng.choice(WORDS) for _ in range(8)),
        tags=rng.sample(["decision", "note", "results"], rng.randint(0, 2)),
        importance=rng.randint(1, 5),
        source=rng.choice(SOURCES),
    )


async def fill(db: TenantDb, n: int = 30, seed: int = 1) -> list[Entry]:
    rng = random.Random(seed)
    return [await entries.create_entry(db, entry_in(i, rng)) for i in range(n)]


RESULTS = ("hit", "miss", "stale")


def lookups() -> dict[str, float]:
    """The process's jet_entry_search_cache_lookups_total by result."""
    return {r: sample("jet_entry_search_cache_lookups_total", result=r) for r in RESULTS}


def counted_since(before: dict[str, float]) -> dict[str, float]:
    return {r: n - before[r] for r, n in lookups().items()}


async def uncached(db: TenantDb, flt: EntryFilter, first: int, after: str | None) -> Page[Entry]:
    """The page straight from the database."""
    return await keywords.uncached_search(db, flt, first=first, after=after)


async def search(db: TenantDb, text: str = "budget roas", first: int = 5, **kw: Any) -> Page[Entry]:
    return await entries.list_entries(db, EntryFilter(search=text, **kw), first=first, after=None)


def ids(page: Page[Entry]) -> list[str]:
    return [e.node.id for e in page.edges]


def the_cache(db: TenantDb) -> page_cache.SearchCache:
    cache = db.shared[page_cache.KEY]
    assert isinstance(cache, page_cache.SearchCache)
    return cache


FILTERS = [
    EntryFilter(search="budget"),
    EntryFilter(search="What did we decide about the ROAS budget?", **ACME),  # type: ignore[arg-type]
    EntryFilter(search="campaign launch", tags=["decision"]),
    EntryFilter(search="weekly report", min_importance=3, scope=Scope.INSTITUTIONAL),
    EntryFilter(search="invoice pacing", sources=[EntrySource.CALL, EntrySource.EMAIL]),
    EntryFilter(search="creative", scope_ref="ent_globex"),  # a scopeRef without a scope
    EntryFilter(search="nothingmatchesthis"),
]


async def test_a_hit_is_the_same_page_as_a_search(db: TenantDb) -> None:
    await fill(db)
    before = lookups()
    pages = 0
    for flt in FILTERS:
        after: str | None = None
        while True:
            first = await entries.list_entries(db, flt, first=4, after=after)  # a miss
            hit = await entries.list_entries(db, flt, first=4, after=after)
            assert first == hit == await uncached(db, flt, 4, after), (flt, after)
            pages += 1
            if not hit.has_next_page:
                break
            after = hit.end_cursor
    assert pages > len(FILTERS)  # several pages walked
    assert counted_since(before) == {"hit": pages, "miss": pages, "stale": 0}
    # The same words (in the same order) asked another way are the same question.
    asked = await search(db, "Budget, ROAS?")
    assert await search(db, "what about the budget and the roas") == asked
    assert counted_since(before)["hit"] == pages + 1


async def test_callers_never_share_anything_mutable(db: TenantDb) -> None:
    await fill(db)
    first = await search(db, "budget", first=3)
    assert first.edges and first.edges[0].node.tags is not None
    want = await uncached(db, EntryFilter(search="budget"), 3, None)
    # Whatever a caller does to what it was given, the next one gets the page as searched.
    for page in (first, await search(db, "budget", first=3)):
        page.edges[0].node.tags.append("mutated")
        page.edges.pop()
    again = await search(db, "budget", first=3)
    assert again == want and "mutated" not in again.edges[0].node.tags


async def test_writes_through_the_services_invalidate(db: TenantDb) -> None:
    made = await fill(db)
    flt = EntryFilter(search="zebra budget")
    await search(db, "zebra budget")
    new = await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_acme", "Zebra", "zebra"))
    found = await search(db, "zebra budget")
    assert found == await uncached(db, flt, 5, None) and ids(found)[0] == new.id
    await entries.update_entry(db, made[0].id, EntryPatch(title="Zebra zebra zebra"), by="key_test")
    found = await search(db, "zebra budget")
    assert found == await uncached(db, flt, 5, None) and made[0].id in ids(found)[:2]
    await entries.delete_entry(db, made[0].id, by="key_test")
    found = await search(db, "zebra budget")
    assert found == await uncached(db, flt, 5, None) and made[0].id not in ids(found)
    # Events are appended all day: they leave cached pages alone.
    before = lookups()
    await events.append_event(db, EventIn(Scope.ENTITY, "ent_acme", "note", "zebra budget"))
    assert await search(db, "zebra budget") == found
    assert counted_since(before) == {"hit": 1, "miss": 0, "stale": 0}


@pytest.fixture
async def other_process(settings: Settings) -> AsyncIterator[Container]:
    """A second container on the same databases: another API process, or the compactor's
    worker, with its own pools (and its own cache)."""
    other = await build(settings)
    yield other
    await other.aclose()


async def test_writes_by_other_processes_invalidate(
    container: Container, db: TenantDb, other_process: Container
) -> None:
    await fill(db)
    flt = EntryFilter(search="yak")
    assert ids(await search(db, "yak")) == []
    # A raw client's connection.
    await run_sql(
        container,
        db.tenant_id,
        "INSERT INTO memory_entries (id, scope, scope_ref, title, summary, tags, importance,"
        " source, created_at, updated_at, version) VALUES ('mem_raw', 'entity', 'ent_acme',"
        " 'Yak', 'yak', '[]', 3, 'manual', '2026-11-30 00:00:00.000000',"
        " '2026-11-30 00:00:00.000000', 1)",
    )
    assert ids(await search(db, "yak")) == ["mem_raw"]
    await run_sql(container, db.tenant_id, "UPDATE memory_entries SET title = 'Ox', summary = 'ox'")
    assert ids(await search(db, "yak")) == []
    # Another API process's service.
    async with other_process.tenants.lease(db.tenant_id) as theirs:
        added = await entries.create_entry(theirs, EntryIn(Scope.TEAM, "u1", "Yak yak", "yak"))
    assert ids(await search(db, "yak")) == [added.id] and await search(db, "yak") == await uncached(
        db, flt, 5, None
    )
    # The compactor, in its worker, folds old events into a new entry.
    now = datetime.now(UTC)
    old = [
        EventIn(
            Scope.ENTITY,
            "ent_yak",
            "call_summary",
            f"Yak herd call {i}: budget agreed.",
            occurred_at=now - timedelta(days=200 + i),
        )
        for i in range(3)
    ]
    await events.append_events(db, old)
    assert ids(await search(db, "herd")) == []
    run = await compact_tenant(other_process, db.tenant_id, trigger="cli", now=now)
    assert run.entries_created
    assert ids(await search(db, "herd")) == run.entries_created


async def test_tenants_never_see_each_others_pages(
    container: Container, tenant: TenantFixture
) -> None:
    other = await make_tenant(container, "globex")
    async with container.tenants.lease(tenant.id) as a, container.tenants.lease(other.id) as b:
        await entries.create_entry(a, EntryIn(Scope.ENTITY, "ent_acme", "Budget A", "budget"))
        await entries.create_entry(b, EntryIn(Scope.ENTITY, "ent_acme", "Budget B", "budget"))
        # The very same revision number in both: only the tenant tells the pages apart.
        for t in (tenant.id, other.id):
            await run_sql(container, t, "UPDATE memory_entries_revision SET n = 42")
        assert await page_cache.read_revision(a) == await page_cache.read_revision(b) == 42
        before = lookups()
        page_a, page_b = await search(a, "budget", **ACME), await search(b, "budget", **ACME)
        assert [e.node.title for e in page_a.edges] == ["Budget A"]
        assert [e.node.title for e in page_b.edges] == ["Budget B"]
        assert counted_since(before) == {"hit": 0, "miss": 2, "stale": 0}
        assert await search(b, "budget", **ACME) == page_b
        assert await search(a, "budget", **ACME) == page_a


async def test_the_bound_drops_the_least_recently_used_page(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fill(db)
    cache = page_cache.SearchCache(2)
    monkeypatch.setattr(db, "shared", {page_cache.KEY: cache})
    evicted = sample("jet_entry_search_cache_evictions_total")
    await search(db, "budget")
    await search(db, "roas")
    await search(db, "budget")  # a hit: "roas" is now the least recently used
    await search(db, "launch")  # a third page: "roas" goes
    assert len(cache) == 2
    assert sample("jet_entry_search_cache_evictions_total") == evicted + 1
    before = lookups()
    await search(db, "budget")
    await search(db, "launch")
    await search(db, "roas")
    assert counted_since(before) == {"hit": 2, "miss": 1, "stale": 0}
    assert len(cache) == 2


def context_value(first_seq: int, n: int) -> tuple[Candidate, ...]:
    """What the context loader keeps for a question: n candidates of its own (no object
    shared with another value, as candidates read from the database are)."""
    at = datetime(2027, 1, 1, tzinfo=UTC)
    return tuple(
        Candidate(seq, 1 + seq % 5, at + timedelta(seconds=seq), seq / 1e6)
        for seq in range(first_seq, first_seq + n)
    )


def test_the_cache_holds_at_most_its_bytes_measured() -> None:
    """Values that grow with the tenant (the context loader's, up to KEEP_MAX candidates)
    fill a cache bounded in pages alone with far more memory than its pages suggest; the
    byte bound holds the memory itself, as tracemalloc measures it."""
    budget = 1 << 20
    cache = page_cache.SearchCache(100_000, max_bytes=budget)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(400):  # ~50 KiB each: ~20 MiB offered
            cache.put_value(("context", "ten_a", i), 7, context_value(i * 300, 300))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.bytes <= budget
    assert 10 <= len(cache) < 400
    # The weights are not an underestimate: what the process holds is within the budget
    # (plus the cache's own table).
    assert held <= budget * 1.1
    # The newest are kept, the oldest dropped.
    assert cache.get_value(("context", "ten_a", 399), 7) is not None
    assert cache.get_value(("context", "ten_a", 0), 7) is None


async def test_the_byte_bound_drops_the_least_recently_used_page(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fill(db)
    probe = page_cache.SearchCache(10)
    monkeypatch.setattr(db, "shared", {page_cache.KEY: probe})
    for text in ("budget", "roas", "launch"):
        await search(db, text)
    weights = sorted(w for _, _, w in probe._pages.values())
    assert probe.bytes == sum(weights) and weights[0] > 0
    # Room for the two smallest of the three pages, not for the three.
    cache = page_cache.SearchCache(10, max_bytes=weights[0] + weights[1])
    monkeypatch.setattr(db, "shared", {page_cache.KEY: cache})
    evicted = sample("jet_entry_search_cache_evictions_total")
    for text in ("budget", "roas", "launch"):
        await search(db, text)
    assert len(cache) <= 2 and cache.bytes <= cache.max_bytes
    assert sample("jet_entry_search_cache_evictions_total") >= evicted + 1
    before = lookups()
    await search(db, "launch")  # the most recent is kept
    assert counted_since(before) == {"hit": 1, "miss": 0, "stale": 0}
    # A page bigger than the whole cache is not kept, and drops nothing.
    tiny = page_cache.SearchCache(10, max_bytes=weights[0] - 1)
    monkeypatch.setattr(db, "shared", {page_cache.KEY: tiny})
    assert await search(db, "budget") == await search(db, "budget")
    assert len(tiny) == 0 and tiny.bytes == 0
    # Stale pages give their bytes back.
    await fill(db, 1, seed=9)
    await search(db, "launch")
    assert cache.bytes == sum(w for _, _, w in cache._pages.values())


async def test_0_pages_turns_the_cache_off(settings: Settings) -> None:
    container = await build(settings.model_copy(update={"search_cache_pages": 0}))
    try:
        tenant = await make_tenant(container, "uncached")
        async with container.tenants.lease(tenant.id) as db:
            assert page_cache.KEY not in db.shared
            await fill(db, 6)
            before = lookups()
            assert await search(db, "budget") == await search(db, "budget")
            assert counted_since(before) == {"hit": 0, "miss": 0, "stale": 0}
    finally:
        await container.aclose()
    with pytest.raises(ValidationError, match="search_cache_pages"):
        Settings(_env_file=None, search_cache_pages=-1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="max_pages"):
        page_cache.SearchCache(0)
    with pytest.raises(ValidationError, match="search_cache_mib"):
        Settings(_env_file=None, search_cache_mib=0)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="max_bytes"):
        page_cache.SearchCache(10, max_bytes=0)


# ---------------------------------------------------------------------------- races


@pytest.mark.parametrize("when", ["before the search", "after the search"])
async def test_a_write_racing_the_search_never_leaves_a_stale_page(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """A write commits after the cache read the revision and before it stores the page:
    before the search (the page has it) or after the search read its snapshot (the page
    lacks it). Either way the page is stored under the revision read first, which the write
    has moved past, so the next lookup searches again. (Stamped with a revision read after
    the search, the page without the write would be served from then on.)"""
    await fill(db)
    flt = EntryFilter(search="walrus budget")
    search_for_real = keywords.uncached_search
    written: list[Entry] = []

    async def racing(db: TenantDb, flt: EntryFilter, **kw: Any) -> Page[Entry]:
        if written:
            return await search_for_real(db, flt, **kw)
        walrus = EntryIn(Scope.ENTITY, "ent_acme", "Walrus", "walrus walrus")
        if when == "before the search":
            written.append(await entries.create_entry(db, walrus))
            return await search_for_real(db, flt, **kw)
        page = await search_for_real(db, flt, **kw)
        written.append(await entries.create_entry(db, walrus))
        return page

    monkeypatch.setattr(keywords, "uncached_search", racing)
    revision_read = await page_cache.read_revision(db)
    raced = await search(db, "walrus budget")
    assert (written[0].id in ids(raced)) is (when == "before the search")
    [(stamp, _, _)] = the_cache(db)._pages.values()
    now = await page_cache.read_revision(db)
    before = lookups()
    for _ in range(2):
        page = await search(db, "walrus budget")
        assert page == await uncached(db, flt, 5, None) and ids(page)[0] == written[0].id
    # The page was kept under the revision read before the write, so it was not served.
    assert stamp == revision_read != now
    assert counted_since(before) == {"hit": 1, "miss": 0, "stale": 1}


async def test_concurrent_searches_and_writes_leave_only_current_pages(db: TenantDb) -> None:
    """Searches and writes at once (on SQLite they run on several connection threads, on
    PostgreSQL on several connections); whenever things settle, every cached answer is
    what the database says."""
    made = await fill(db, 24)
    rng = random.Random(5)
    questions = [EntryFilter(search=q) for q in ("budget", "roas launch", "weekly report pacing")]

    async def write(i: int) -> None:
        victim = made[rng.randrange(len(made))]
        with contextlib.suppress(NotFound):  # another writer deleted it meanwhile
            if i % 7 == 0:
                made.remove(victim)
                await entries.delete_entry(db, victim.id, by="key_test")
            elif i % 3 == 0:
                made.append(await entries.create_entry(db, entry_in(i, rng)))
            else:
                title = " ".join(rng.sample(WORDS, 3))
                await entries.update_entry(db, victim.id, EntryPatch(title=title), by="key_test")

    for round_ in range(8):
        tasks: list[Any] = [
            entries.list_entries(db, rng.choice(questions), first=5, after=None) for _ in range(12)
        ]
        tasks[3:3] = [write(round_ * 10 + i) for i in range(3)]
        await asyncio.gather(*tasks)
        for flt in questions:
            got = await entries.list_entries(db, flt, first=5, after=None)
            assert got == await uncached(db, flt, 5, None), (round_, flt)


async def test_identical_searches_at_once_search_once(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight agents asking the same new question at once: one search, eight equal pages,
    none sharing a list with another."""
    await fill(db)
    searched: list[EntryFilter] = []
    search_fn = keywords.uncached_search

    async def counting(db: TenantDb, flt: EntryFilter, **kw: Any) -> Page[Entry]:
        searched.append(flt)
        return await search_fn(db, flt, **kw)

    monkeypatch.setattr(keywords, "uncached_search", counting)
    joined = sample("jet_entry_search_cache_lookups_total", result="joined")
    before = lookups()
    pages = await asyncio.gather(*(search(db, "budget pacing") for _ in range(8)))
    assert len(searched) == 1
    assert all(p == pages[0] for p in pages) and pages[0].edges
    assert len({id(p.edges) for p in pages}) == 8
    assert pages[0] == await uncached(db, EntryFilter(search="budget pacing"), 5, None)
    # The others joined it, or (reading their revision once it was over, as on a
    # PostgreSQL connection they may) found its page.
    counted = counted_since(before)
    assert counted["miss"] == 1 and counted["stale"] == 0
    assert (
        counted["hit"] + sample("jet_entry_search_cache_lookups_total", result="joined") - joined
        == 7
    )
    assert not the_cache(db).flights


@pytest.mark.parametrize("ending", ["error", "cancelled"])
async def test_when_the_search_they_wait_for_fails_one_waiter_searches_again(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    await fill(db)
    want = await uncached(db, EntryFilter(search="roas"), 5, None)
    search_fn = keywords.uncached_search
    started, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def first_one_fails(db: TenantDb, flt: EntryFilter, **kw: Any) -> Page[Entry]:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            await release.wait()  # the others join meanwhile
            raise RuntimeError("the database went away")
        return await search_fn(db, flt, **kw)

    class Joins:  # the joined counter, which says when the three have joined
        def __init__(self) -> None:
            self.count, self.three = 0, asyncio.Event()

        def inc(self) -> None:
            self.count += 1
            if self.count == 3:
                self.three.set()

    joins = Joins()
    monkeypatch.setattr(page_cache, "_JOINED", joins)
    monkeypatch.setattr(keywords, "uncached_search", first_one_fails)
    leader = asyncio.ensure_future(search(db, "roas"))
    await asyncio.wait_for(started.wait(), 30)
    # Each reads the revision first (I/O on PostgreSQL), then joins.
    waiters = [asyncio.ensure_future(search(db, "roas")) for _ in range(3)]
    await asyncio.wait_for(joins.three.wait(), 30)
    assert calls == 1 and len(the_cache(db).flights) == 1
    if ending == "error":
        release.set()
        with pytest.raises(RuntimeError):
            await leader
    else:
        leader.cancel()  # its client went away
        with pytest.raises(asyncio.CancelledError):
            await leader
    # One of the waiters searched again; the others waited for it.
    assert [await w for w in waiters] == [want] * 3
    assert calls == 2 and not the_cache(db).flights


# ------------------------------------------------------------ the context loader


async def test_the_context_loader_keeps_its_candidates_until_entries_change(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memoryContext with a query: the entries worth ranking are kept like a page (what
    FTS5 found, not the ranking: recency is scored at each call's time), and any write to
    an entry makes the next call find them again."""
    await fill(db, 40)
    now = datetime(2027, 1, 1, tzinfo=UTC)

    async def load(
        at: datetime, *, cached: bool = True, query: str = "budget roas report"
    ) -> loader.MemoryContextResult:
        with monkeypatch.context() as m:
            if not cached:
                m.setattr(db, "shared", {})
            return await loader.load_context(
                db,
                scope=Scope.ENTITY,
                scope_ref="ent_acme",
                query=query,
                max_tokens=400,
                include_institutional=True,
                now=at,
            )

    before = lookups()
    first = await load(now)
    assert counted_since(before) == {"hit": 0, "miss": 1, "stale": 0}
    assert first == await load(now, cached=False) and first.entries
    again = await load(now)
    assert again == first and counted_since(before)["hit"] == 1
    # Ranking is the call's own: years later, recency weighs differently.
    later = now + timedelta(days=3 * 365)
    assert await load(later) == await load(later, cached=False)
    # A write to an entry: found again.
    await entries.create_entry(
        db,
        EntryIn(
            scope=Scope.ENTITY,
            scope_ref="ent_acme",
            title="Budget ROAS report",
            summary="budget roas report budget roas report",
            tags=[],
            importance=5,
            source=EntrySource.MANUAL,
        ),
    )
    fresh = await load(now)
    assert counted_since(before)["stale"] == 1
    assert fresh == await load(now, cached=False) and fresh != first
    assert fresh.entries[0].title == "Budget ROAS report"
    # Too many candidates to keep (a budget near 32,000 tokens): found again each time.
    monkeypatch.setattr(loader, "KEEP_MAX", 3)
    mark = lookups()
    for _ in range(2):
        big = await load(now, query="campaign creative pacing")
        assert big == await load(now, cached=False, query="campaign creative pacing")
    assert counted_since(mark) == {"hit": 0, "miss": 2, "stale": 0}
    monkeypatch.undo()
    # Without a query nothing is looked up (an index read, cheap as it is).
    mark = lookups()
    await loader.load_context(
        db,
        scope=Scope.ENTITY,
        scope_ref="ent_acme",
        query=None,
        max_tokens=400,
        include_institutional=True,
    )
    assert counted_since(mark) == {"hit": 0, "miss": 0, "stale": 0}


# -------------------------------------------------------------------------- the API


async def test_graphql_and_rest_are_served_from_it(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    h = tenant.headers
    r = await client.post(
        "/memory",
        headers=h,
        json={
            "scope": "entity",
            "scopeRef": "ent_acme",
            "title": "Heron budget",
            "summary": "heron",
        },
    )
    assert r.status_code == 201, r.text
    entry_id = r.json()["id"]
    query = {"query": '{ memoryEntries(filter: {search: "heron"}) { edges { node { title } } } }'}
    before = lookups()
    for _ in range(2):
        r = await client.post("/graphql", json=query, headers=h)
        assert r.json()["data"]["memoryEntries"]["edges"] == [{"node": {"title": "Heron budget"}}]
        r = await client.get("/memory?search=heron", headers=h)
        assert [i["title"] for i in r.json()["items"]] == ["Heron budget"]
    # Both ask for 20 (their default): one page, searched once.
    assert counted_since(before) == {"hit": 3, "miss": 1, "stale": 0}
    r = await client.put(f"/memory/{entry_id}", headers=h, json={"title": "Heron plan"})
    assert r.status_code == 200, r.text
    r = await client.post("/graphql", json=query, headers=h)
    assert r.json()["data"]["memoryEntries"]["edges"] == [{"node": {"title": "Heron plan"}}]
    metrics = (await client.get("/metrics")).text
    assert 'jet_entry_search_cache_lookups_total{result="hit"}' in metrics
