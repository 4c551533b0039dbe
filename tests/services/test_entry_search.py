"""The entry search (memoryEntries / GET /memory with a search) as one prepared statement
(the page cut from the FTS5 index before its rows are read, on SQLite):
the same pages, byte for byte, as the two-statement search it replaced, on both backends,
and one statement a page.

`reference_search` is entries._search as it was before (commit 85695eb): a read transaction,
the high-water mark read first, then the page built from `fulltext.matching` with
`seq <= hwm`, ordered and cut in the same SELECT."""

import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text

from app.config import Settings
from app.services import cursors, entries, entry_rows
from app.services.records import Edge, Entry, EntryFilter, EntrySource, Page, Scope
from app.services.search import analysis, page_cache
from app.storage import tenants, transactions
from app.storage.models import entries_table as en
from app.storage.search import fulltext, spec
from app.storage.sqlite.fastpath import compiled as statement_module
from app.storage.sqlite.fastpath import inline_reader as inline_module
from app.storage.sqlite.fastpath import search as search_module
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction, write_transaction

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
        query = spec.Search(
            analysis.words(flt.search, "filter.search"),
            scope=None if flt.scope is None else flt.scope.value,
            scope_ref=None if flt.scope is None else flt.scope_ref,
            tags=list(flt.tags or []),
        )
        hwm, offset = cursors.decode_search("entries-search", after)
        if hwm is None:
            hwm = (await conn.execute(select(func.coalesce(func.max(en.c.seq), 0)))).scalar_one()
        stmt = (
            fulltext.matching(spec.Target.of(conn), en, query, entry_rows.COLUMNS)
            .where(en.c.seq <= hwm, *conds)
            .order_by(text("rank"), en.c.seq)
            .offset(offset)
            .limit(first + 1)
        )
        rows = list(await conn.execute(stmt))
    edges = []
    for i, r in enumerate(rows[:first]):
        e = entry_rows.to_entry(r)
        # The score: the share of the search's words the entry contains (search.score).
        matched = analysis.matched_terms(query.words, [e.title, e.summary, *e.tags])
        cursor = cursors.encode("entries-search", [hwm, offset + i + 1])
        edges.append(Edge(cursor, e, analysis.score(query.words, matched), matched))
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
    ),
]


@pytest.fixture(autouse=True)
def without_the_page_cache() -> Iterator[None]:
    """The search itself, every time it is asked: the search page cache in front of it (and
    its revision read) is tested in tests/services/test_search_cache.py. Patched apart from
    the tests' own monkeypatch, which some undo halfway."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page_cache, "search_page", uncached_page)
        yield


def uncached_page(db: TenantDb, flt: EntryFilter, *, search_fn: Any, **kw: Any) -> Any:
    return search_fn(db, flt, **kw)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The keyword search alone (no embedder: not even the fused search's first read, which
    finds no vectors); the fused one is tests/services/test_fusion_search.py's."""
    return settings.model_copy(update={"embedder": "none"})


@pytest.fixture(params=["thread", "inline", "engine"])
def read_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every way a page is read: with the SQLite fast path, plain sqlite3 on aiosqlite's
    thread or on the event loop's (routed by how many entries the words match), and
    SQLAlchemy's engine (PostgreSQL, and SQLite with the fast path off)."""
    db: TenantDb = request.getfixturevalue("db")
    if request.param in ("thread", "inline"):
        if not db.fast_path:
            pytest.skip("without the SQLite fast path every page is read through the engine")

        def engine_path(*args: Any) -> Any:
            raise AssertionError("read through the engine, not by sqlite3")

        monkeypatch.setattr(transactions, "read_statement", engine_path)
    if request.param == "thread":
        monkeypatch.setattr(search_module, "INLINE_SEARCH_MATCHES", -1)  # no count is that low
    elif request.param == "inline":
        # Every question counts as rare, and nothing may fall back to the thread (on a
        # busy machine a page may take longer than the inline budget: not under test here).
        monkeypatch.setattr(search_module.WordCounts, "matches", lambda self, words: 0)
        monkeypatch.setattr(statement_module, "INLINE_BUDGET_S", 60.0)

        async def not_on_thread(*args: Any) -> Any:
            raise AssertionError("read on aiosqlite's thread, not inline")

        monkeypatch.setattr(search_module, "read_on_thread", not_on_thread)
    elif request.param == "engine":
        monkeypatch.setattr(db, "fast_path", False)
    return str(request.param)


# --------------------------------------------------- which thread reads a search's page


def sqlite_only(db: TenantDb) -> None:
    if not db.fast_path:
        pytest.skip("without the SQLite fast path every page is read through the engine")


async def test_word_counts_are_the_entries_a_search_finds(db: TenantDb) -> None:
    """count_entry_words counts what a search for the word finds, in every scope: the
    word stemmed or as a prefix, in the title, summary or tags."""
    sqlite_only(db)
    await fill(db)
    words = ["budget", "quillfeather", "retarg", "roas", "decision", "nothingmatchesthis"]
    assert db.engine.url.database is not None
    conn = sqlite3.connect(db.engine.url.database)
    counts = search_module.count_entry_words(conn, words)
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
        on_thread, rows = search_module.read_on_thread, inline_module.InlineReader.rows
        count = search_module.count_entry_words

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

        monkeypatch.setattr(search_module, "read_on_thread", spy_thread)
        monkeypatch.setattr(inline_module.InlineReader, "rows", spy_inline)
        monkeypatch.setattr(search_module, "count_entry_words", spy_count)
        if inline_matches is not None:
            monkeypatch.setattr(search_module, "INLINE_SEARCH_MATCHES", inline_matches)
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
    monkeypatch.setattr(search_module, "INLINE_SEARCH_WORDS", 2)
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
    monkeypatch.setattr(search_module.WordCounts, "matches", lambda self, words: 0)
    monkeypatch.setattr(inline_module.InlineReader, "rows", lambda self, *args: None)
    flt = EntryFilter(search="budget roas")
    page = await entries.list_entries(db, flt, first=7, after=None)
    assert page == await reference_search(db, flt, first=7, after=None)
    assert page.edges and route.thread == 1


def test_word_counts_expire_and_stay_bounded() -> None:
    counts = search_module.WordCounts(size=3)
    assert counts.matches(["a"]) is None and counts.unknown(["a", "b"]) == ["a", "b"]
    counts.learn({"a": 1, "b": 20})
    assert counts.matches(["a", "b"]) == 21 and counts.matches(["a", "c"]) is None
    assert counts.unknown(["a", "c"]) == ["c"]
    counts.learn({"c": 2, "d": 3})  # over the size: starts again
    assert counts.matches(["a"]) is None and counts.matches(["c", "d"]) == 5
    stale = search_module.WordCounts(ttl=0)
    stale.learn({"a": 1})
    assert stale.matches(["a"]) is None and stale.unknown(["a"]) == ["a"]


# ------------------------------------------------ the context loader's best entries


ANY_OF: list[list[tuple[Scope, str | None]]] = [
    [(Scope.ENTITY, "acme-outdoor"), (Scope.INSTITUTIONAL, None)],
    [(Scope.TEAM, "paid-social")],
    [(Scope.INSTITUTIONAL, None)],
    [
        (Scope.PROJECT, "wayne-launch"),
        (Scope.ENTITY, "bluefin-coffee"),
        (Scope.INSTITUTIONAL, None),
    ],
]


@pytest.mark.parametrize("question", ["budget", "weekly report", "roas campaign launch", "okonkwo"])
@pytest.mark.parametrize("limit", [3, 200])
async def test_the_loaders_best_entries_are_the_joined_searchs_first(
    db: TenantDb, question: str, limit: int
) -> None:
    """`best_entries_any_of` (cut from the index first on SQLite) keeps the rows, ranks and
    order of the search joined to memory_entries, ordered and cut (ties on rank by seq)."""
    await fill(db)
    async with read_transaction(db.engine) as conn:
        target = spec.Target.of(conn)
        for scopes in ANY_OF:
            query = spec.Search(
                analysis.words(question, "query"),
                prefix=False,
                any_of=[(s.value, r) for s, r in scopes],
            )
            columns = [en.c.importance, en.c.updated_at]
            joined = (
                fulltext.any_of_statement(
                    target.dialect, en, [r is None for _, r in scopes], columns, ranked=True
                )
                .order_by(text("rank"), en.c.seq)
                .limit(limit)
            )
            values = fulltext.any_of_params(target, en, query) | {"limit": limit}
            page = {"page_offset": 0, "page_limit": limit}
            best = fulltext.best_entries_any_of(
                target.dialect, [r is None for _, r in scopes], columns
            )
            expected = [tuple(r) for r in await conn.execute(joined, values)]
            got = [tuple(r) for r in await conn.execute(best, values | page)]
            assert got == expected, (question, scopes)
            assert expected or question == "okonkwo"
