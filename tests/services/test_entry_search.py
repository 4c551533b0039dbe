"""The entry search (memoryEntries / GET /memory with a search) as one prepared statement
(the page cut from the FTS5 index before its rows are read, on SQLite):
the same pages, byte for byte, as the two-statement search it replaced, on both backends,
and one statement a page.

`reference_search` is entries._search as it was before (commit 85695eb): a read transaction,
the high-water mark read first, then the page built from `fulltext.entries` (which the
context loader still uses) with `seq <= hwm`, ordered and cut in the same SELECT."""

import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, func, insert, select, text

from app.errors import InvalidInput
from app.services import cursors, entries, search, search_cache
from app.services.records import Edge, Entry, EntryFilter, EntryPatch, EntrySource, Page, Scope
from app.storage import fulltext, tenants
from app.storage.models import entries_table as en
from app.storage.sqlite.fastpath import compiled as compiled_module
from app.storage.sqlite.fastpath import inline_reader as inline_module
from app.storage.sqlite.fastpath import statement as statement_module
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement, read_transaction, write_transaction

SCOPES: list[tuple[Scope, str | None]] = [
    (Scope.ENTITY, "acme-outdoor"),
    (Scope.ENTITY, "bluefin-coffee"),
    (Scope.PROJECT, "wayne-launch"),
    (Scope.TEAM, "paid-social"),
    (Scope.INSTITUTIONAL, None),
]
WORDS = (
    "budget roas campaign launch creative audience retargeting pacing invoice contract "
    "weekly report decision approved paused tiktok meta google search display video"
).split()
RARE = ["Quillfeather", "Brightwater", "Okonkwo"]
TAGS = ["decision", "note", "people", "results", "budget"]


async def fill(db: TenantDb, n: int = 160) -> None:
    """Entries in five scopes, with common words, a few rare ones, tags, importances and
    sources; some with the very same text (equal ranks, ordered by seq)."""
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        scope, ref = SCOPES[i % len(SCOPES)]
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4))).title()
        summary = "\n".join(
            "- " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
            for _ in range(rng.randint(1, 5))
        )
        if i % 23 == 0:
            summary += f"\n- Vendor {RARE[i % len(RARE)]} quoted for the next run."
        if i % 17 == 0:  # twins of an earlier entry: a tie on rank
            title, summary = "Weekly report", "- budget pacing on track; roas 4.1"
        at = start + timedelta(hours=i)
        rows.append(
            {
                "id": f"mem_{i:04d}",
                "scope": scope.value,
                "scope_ref": ref,
                "title": title,
                "summary": summary,
                "tags": sorted(set(rng.sample(TAGS, rng.randint(0, 2)))),
                "importance": rng.randint(1, 5),
                "source": rng.choice(list(EntrySource)).value,
                "created_at": at,
                "updated_at": at,
                "version": 1,
            }
        )
    async with write_transaction(db.engine) as conn:
        await conn.execute(insert(en), rows)


async def reference_search(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """The search before it was one statement (see the module docstring)."""
    assert flt.search is not None
    conds: list[Any] = []
    if flt.min_importance is not None and flt.min_importance > 1:
        conds.append(en.c.importance + 0 >= flt.min_importance)
    if flt.sources:
        conds.append(en.c.source.in_([s.value for s in flt.sources]))
    if flt.scope is None and flt.scope_ref is not None:
        conds.append(en.c.scope_ref == flt.scope_ref)
    async with read_transaction(db.engine) as conn:
        query = fulltext.Search(
            search.words(flt.search, "filter.search"),
            scope=None if flt.scope is None else flt.scope.value,
            scope_ref=None if flt.scope is None else flt.scope_ref,
            tags=list(flt.tags or []),
        )
        hwm, offset = cursors.decode_search("entries-search", after)
        if hwm is None:
            hwm = (await conn.execute(select(func.coalesce(func.max(en.c.seq), 0)))).scalar_one()
        stmt = (
            fulltext.entries(fulltext.Target.of(conn), query, entries.COLUMNS)
            .where(en.c.seq <= hwm, *conds)
            .order_by(text("rank"), en.c.seq)
            .offset(offset)
            .limit(first + 1)
        )
        rows = list(await conn.execute(stmt))
    edges = [
        Edge(cursors.encode("entries-search", [hwm, offset + i + 1]), entries.to_entry(r), -r.rank)
        for i, r in enumerate(rows[:first])
    ]
    return Page(edges, has_next_page=len(rows) > first)


ACME = {"scope": Scope.ENTITY, "scope_ref": "acme-outdoor"}
FILTERS = [
    EntryFilter(search="budget"),
    EntryFilter(search="roas campaign", **ACME),  # type: ignore[arg-type]
    EntryFilter(search="What did we decide about the ROAS budget?", scope=Scope.ENTITY),
    EntryFilter(search="weekly report"),  # the twins: equal ranks
    EntryFilter(search="Quillfeather"),
    EntryFilter(search="Brightwater invoice", **ACME),  # type: ignore[arg-type]
    EntryFilter(search="okonkwo", scope=Scope.INSTITUTIONAL),
    EntryFilter(search="retarg"),  # a prefix
    EntryFilter(search="what did the"),  # only stop words
    EntryFilter(search="nothingmatchesthis"),
    EntryFilter(search="budget pacing", tags=["decision"]),
    EntryFilter(search="budget", tags=["decision", "results"], **ACME),  # type: ignore[arg-type]
    EntryFilter(search="launch", scope=Scope.PROJECT, scope_ref="wayne-launch", tags=["note"]),
    EntryFilter(search="video creative", min_importance=3),
    EntryFilter(search="meta google", sources=[EntrySource.CALL, EntrySource.EMAIL]),
    EntryFilter(search="roas", scope_ref="bluefin-coffee"),  # a scopeRef without a scope
    EntryFilter(
        search="paused",
        scope=Scope.TEAM,
        scope_ref="paid-social",
        min_importance=2,
        sources=[EntrySource.MANUAL],
        tags=["people"],
    ),  # fmt: skip
]


@pytest.fixture(autouse=True)
def without_the_page_cache() -> Iterator[None]:
    """The search itself, every time it is asked: the search page cache in front of it (and
    its revision read) is tested in tests/services/test_search_cache.py. Patched apart from
    the tests' own monkeypatch, which some undo halfway."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_cache, "search_page", uncached_page)
        yield


def uncached_page(db: TenantDb, flt: EntryFilter, *, search_fn: Any, **kw: Any) -> Any:
    return search_fn(db, flt, **kw)


@pytest.fixture(params=["thread", "inline", "engine"])
def read_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every way a page is read on SQLite: plain sqlite3 on aiosqlite's thread or on the
    event loop's (entries._search_on_thread, routed by how many entries the words match),
    and SQLAlchemy's engine (entries._search, as on PostgreSQL and for a filter by
    sources)."""
    on_sqlite = request.getfixturevalue("backend") == "sqlite"
    if request.param in ("thread", "inline"):
        if not on_sqlite:
            pytest.skip("PostgreSQL reads every page through the engine")
        search_on_engine = entries._search

        async def engine_path(conn: Any, flt: EntryFilter, **kwargs: Any) -> Page[Entry]:
            assert flt.sources, f"read through the engine, not by sqlite3: {flt}"
            return await search_on_engine(conn, flt, **kwargs)

        monkeypatch.setattr(entries, "_search", engine_path)
    if request.param == "thread":
        monkeypatch.setattr(entries, "INLINE_SEARCH_MATCHES", -1)  # no count is that low
    elif request.param == "inline":
        # Every question counts as rare, and nothing may fall back to the thread (on a
        # busy machine a page may take longer than the inline budget: not under test here).
        monkeypatch.setattr(fulltext.WordCounts, "matches", lambda self, words: 0)
        monkeypatch.setattr(statement_module, "INLINE_BUDGET_S", 60.0)

        async def not_on_thread(*args: Any) -> Any:
            raise AssertionError("read on aiosqlite's thread, not inline")

        monkeypatch.setattr(entries, "read_on_thread", not_on_thread)
    elif request.param == "engine":

        async def via_engine(db: TenantDb, flt: EntryFilter, **kwargs: Any) -> Page[Entry]:
            async with read_statement(db.engine) as conn:
                return await entries._search(conn, flt, **kwargs)

        monkeypatch.setattr(entries, "_search_on_thread", via_engine)
    return str(request.param)


@pytest.mark.parametrize("first", [1, 4, 20])
async def test_search_pages_are_the_same_as_before(
    db: TenantDb, first: int, read_path: str
) -> None:
    await fill(db)
    walked = 0
    for flt in FILTERS:
        after: str | None = None
        while True:
            page = await entries.list_entries(db, flt, first=first, after=after)
            want = await reference_search(db, flt, first=first, after=after)
            assert page == want, (flt, after)  # cursors, entries, scores, hasNextPage
            walked += len(page.edges)
            if not page.has_next_page:
                break
            after = page.end_cursor
    assert walked > 200  # the filters do find rows (and walk several pages)


async def test_the_same_after_updates_and_deletes(db: TenantDb, read_path: str) -> None:
    """The page is cut from the FTS5 index before memory_entries is joined: the index must
    hold exactly the entries (the migration's triggers), also after updates and deletes."""
    await fill(db, 80)
    for i in range(0, 80, 3):
        await entries.update_entry(
            db, f"mem_{i:04d}", EntryPatch(title=f"Budget review {i}", tags=["results"])
        )
    for i in range(1, 80, 5):
        await entries.delete_entry(db, f"mem_{i:04d}")
    for flt in FILTERS:
        after: str | None = None
        while True:
            page = await entries.list_entries(db, flt, first=4, after=after)
            assert page == await reference_search(db, flt, first=4, after=after), flt
            if not page.has_next_page:
                break
            after = page.end_cursor


async def test_a_cursor_keeps_its_snapshot_and_old_cursors_still_read(
    db: TenantDb, read_path: str
) -> None:
    """Entries added after the first page are not listed on the later ones, as before; and a
    cursor made by hand as the old code made them reads the same page."""
    await fill(db, 60)
    flt = EntryFilter(search="budget roas")
    page = await entries.list_entries(db, flt, first=5, after=None)
    assert page.has_next_page and page.end_cursor is not None
    hwm, offset = cursors.decode_search("entries-search", page.end_cursor)
    async with read_transaction(db.engine) as conn:
        assert hwm == (await conn.execute(select(func.max(en.c.seq)))).scalar_one()
    assert offset == 5
    await fill_more(db)
    later = await entries.list_entries(db, flt, first=100, after=page.end_cursor)
    assert later == await reference_search(db, flt, first=100, after=page.end_cursor)
    assert all(e.node.id.startswith("mem_0") for e in later.edges)
    made = cursors.encode("entries-search", [hwm, 5])
    assert made == page.end_cursor
    # A new first page sees the new entries and a new mark.
    fresh = await entries.list_entries(db, flt, first=100, after=None)
    assert fresh == await reference_search(db, flt, first=100, after=None)
    assert any(e.node.id.startswith("mem_new") for e in fresh.edges)


async def fill_more(db: TenantDb) -> None:
    at = datetime(2027, 1, 1, tzinfo=UTC)
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            insert(en),
            [
                {"id": f"mem_new{i}", "scope": "entity", "scope_ref": "acme-outdoor",
                 "title": "Budget ROAS", "summary": "budget roas budget roas", "tags": [],
                 "importance": 3, "source": "manual", "created_at": at, "updated_at": at,
                 "version": 1}
                for i in range(3)
            ],
        )  # fmt: skip


async def test_an_empty_tenant_and_bad_cursors(db: TenantDb, read_path: str) -> None:
    page = await entries.list_entries(db, EntryFilter(search="roas"), first=5, after=None)
    assert page == Page([], has_next_page=False)
    bad_cursors = [
        "nope",
        cursors.encode("entries-search", [-1, 0]),
        cursors.encode("entries", ["a", "b"]),
    ]
    for bad in bad_cursors:
        with pytest.raises(InvalidInput):
            await entries.list_entries(db, EntryFilter(search="roas"), first=5, after=bad)


@contextmanager
def statements(db: TenantDb) -> Iterator[list[str]]:
    sent: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    def fetch(conn: Any, sql: str, parameters: Any) -> Any:  # fetch_rows' one statement
        sent.append(sql)
        return plain_fetch(conn, sql, parameters)

    engine = db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    plain_fetch = compiled_module.fetch
    compiled_module.fetch = inline_module.fetch = fetch  # type: ignore[assignment]
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", count)
        compiled_module.fetch = inline_module.fetch = plain_fetch  # type: ignore[assignment]


async def test_one_statement_a_page(db: TenantDb, read_path: str) -> None:
    """A page of a search is one statement: no BEGIN, no separate high-water mark."""
    await fill(db, 40)
    flt = EntryFilter(search="budget", tags=["decision"], min_importance=2, **ACME)  # type: ignore[arg-type]
    with statements(db) as sent:
        page = await entries.list_entries(db, EntryFilter(search="budget"), first=2, after=None)
    assert len(sent) == 1 and page.has_next_page, sent
    with statements(db) as sent:
        await entries.list_entries(db, EntryFilter(search="budget"), first=2, after=page.end_cursor)
    assert len(sent) == 1, sent
    with statements(db) as sent:
        await entries.list_entries(db, flt, first=2, after=None)
    assert len(sent) == 1, sent


# --------------------------------------------------- which thread reads a search's page


def sqlite_only(db: TenantDb) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL reads every page through the engine")


async def test_word_counts_are_the_entries_a_search_finds(db: TenantDb) -> None:
    """count_entry_words counts what a search for the word finds, in every scope: the
    word stemmed or as a prefix, in the title, summary or tags."""
    sqlite_only(db)
    await fill(db)
    words = ["budget", "quillfeather", "retarg", "roas", "decision", "nothingmatchesthis"]
    assert db.engine.url.database is not None
    conn = sqlite3.connect(db.engine.url.database)
    counts = fulltext.count_entry_words(conn, words)
    conn.close()
    for word in words:
        found, after = 0, None
        while True:
            page = await entries.list_entries(db, EntryFilter(search=word), first=50, after=after)
            found += len(page.edges)
            if not page.has_next_page:
                break
            after = page.end_cursor
        assert counts[word] == found, word
    assert counts["quillfeather"] > 0 and counts["budget"] > 20
    assert counts["nothingmatchesthis"] == 0


class Route:
    """Which way each page of a search was read; with `inline_matches`, the routing's
    threshold set to it (and an inline budget no busy machine runs out of)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, inline_matches: int | None = None) -> None:
        self.thread = 0
        self.inline = 0
        self.counted: list[list[str]] = []
        on_thread, rows = entries.read_on_thread, inline_module.InlineReader.rows
        count = fulltext.count_entry_words

        async def spy_thread(*args: Any) -> Any:
            self.thread += 1
            return await on_thread(*args)

        def spy_inline(reader: Any, *args: Any) -> Any:
            found = rows(reader, *args)
            self.inline += found is not None
            return found

        def spy_count(conn: Any, words: Any) -> dict[str, int]:
            self.counted.append(list(words))
            return count(conn, words)

        monkeypatch.setattr(entries, "read_on_thread", spy_thread)
        monkeypatch.setattr(inline_module.InlineReader, "rows", spy_inline)
        monkeypatch.setattr(fulltext, "count_entry_words", spy_count)
        if inline_matches is not None:
            monkeypatch.setattr(entries, "INLINE_SEARCH_MATCHES", inline_matches)
            monkeypatch.setattr(statement_module, "INLINE_BUDGET_S", 60.0)  # a busy machine's pace


async def test_rare_words_are_read_inline_once_counted(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite_only(db)
    await fill(db)
    route = Route(monkeypatch, inline_matches=20)
    rare = EntryFilter(search="Who is Quillfeather?")
    first = await entries.list_entries(db, rare, first=5, after=None)
    # Words not counted yet: the page is read on the thread, which counts them.
    assert (route.thread, route.inline, route.counted) == (1, 0, [["quillfeather"]])
    again = await entries.list_entries(db, rare, first=5, after=None)
    assert again == first == await reference_search(db, rare, first=5, after=None)
    assert first.edges
    assert (route.thread, route.inline, route.counted) == (1, 1, [["quillfeather"]])

    # With other requests in flight, the loop is left to them.
    monkeypatch.setattr(tenants, "leased", lambda: 3)
    assert await entries.list_entries(db, rare, first=5, after=None) == first
    assert (route.thread, route.inline) == (2, 1)
    monkeypatch.undo()
    route = Route(monkeypatch, inline_matches=20)

    # A common word stays on the thread, and is not counted again.
    common = EntryFilter(search="quillfeather budget", scope=Scope.ENTITY)
    for _ in range(2):
        page = await entries.list_entries(db, common, first=5, after=None)
        assert page == await reference_search(db, common, first=5, after=None)
    assert (route.thread, route.inline) == (2, 0)
    assert route.counted == [["budget"], []]


async def test_a_long_question_is_neither_counted_nor_read_inline(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite_only(db)
    await fill(db)
    route = Route(monkeypatch)
    monkeypatch.setattr(entries, "INLINE_SEARCH_WORDS", 2)
    long = EntryFilter(search="Quillfeather Brightwater Okonkwo")
    for _ in range(2):
        page = await entries.list_entries(db, long, first=5, after=None)
        assert page == await reference_search(db, long, first=5, after=None)
    assert page.edges
    assert (route.thread, route.inline, route.counted) == (2, 0, [[], []])


async def test_an_inline_read_it_does_not_answer_is_read_on_the_thread(
    db: TenantDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over its budget (or anything else InlineReader gives up on): the same page, from
    aiosqlite's thread."""
    sqlite_only(db)
    await fill(db)
    route = Route(monkeypatch)
    monkeypatch.setattr(fulltext.WordCounts, "matches", lambda self, words: 0)
    monkeypatch.setattr(inline_module.InlineReader, "rows", lambda self, *args: None)
    flt = EntryFilter(search="budget roas")
    page = await entries.list_entries(db, flt, first=7, after=None)
    assert page == await reference_search(db, flt, first=7, after=None)
    assert page.edges and route.thread == 1


def test_word_counts_expire_and_stay_bounded() -> None:
    counts = fulltext.WordCounts(size=3)
    assert counts.matches(["a"]) is None and counts.unknown(["a", "b"]) == ["a", "b"]
    counts.learn({"a": 1, "b": 20})
    assert counts.matches(["a", "b"]) == 21 and counts.matches(["a", "c"]) is None
    assert counts.unknown(["a", "c"]) == ["c"]
    counts.learn({"c": 2, "d": 3})  # over the size: starts again
    assert counts.matches(["a"]) is None and counts.matches(["c", "d"]) == 5
    stale = fulltext.WordCounts(ttl=0)
    stale.learn({"a": 1})
    assert stale.matches(["a"]) is None and stale.unknown(["a"]) == ["a"]
