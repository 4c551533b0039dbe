"""The entry search by words: the FTS statement of a page (built once per shape), the page
it reads, and the keyword ranking that search by meaning fuses with (app/services/search/fusion.py).
app/services/entries.py's list_entries serves it through the search page cache."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, bindparam, func, select

from app.services import cursors
from app.services.entry_rows import COLUMNS, to_entry
from app.services.records import Edge, Entry, EntryFilter, Page
from app.services.search import analysis, fusion
from app.storage import reads
from app.storage.lists import in_list
from app.storage.models import entries_table as en
from app.storage.search import fulltext, spec
from app.storage.tenants import TenantDb


async def uncached_search(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """A search's page, read from the database (what the cache keeps): one statement,
    relevance-ordered, paged by offset under the high-water mark of the first page (see
    cursors.decode_search). Fused with the dense ranking unless keywords only."""
    fused = await fusion.fused_page(
        db,
        flt,
        first=first,
        after=after,
        keyword_ranking=keyword_ranking,
        to_entry=to_entry,
        columns=COLUMNS,
    )
    if fused is not None:
        return fused
    target = spec.Target.of_engine(db.engine)
    stmt, values, hwm, offset, words = search_query(target, flt, first, after)
    rows = await reads.search_rows(db, stmt, values, words)
    rank_at, hwm_at = _RANK_HWM_AT.get(stmt) or _rank_hwm_at(stmt)
    if rows and hwm is None:
        hwm = rows[0][hwm_at]  # the first page reads the high-water mark its cursors keep
    return _search_page(
        [(row, row[rank_at]) for row in rows], words, first=first, hwm=hwm, offset=offset
    )


async def keyword_ranking(
    db: TenantDb, flt: EntryFilter, hwm: int, limit: int
) -> list[tuple[int, float]]:
    """The keyword ranking's best `limit` (seq, rank) at or below `hwm`, best first: what
    fusion ranks by, without the entries' rows (read for the page only)."""
    target = spec.Target.of_engine(db.engine)
    cursor = cursors.encode("entries-search", [hwm, 0])
    stmt, values, _, _, words = search_query(target, flt, limit - 1, cursor, ranking=True)
    return [(int(s), float(r)) for s, r in await reads.search_rows(db, stmt, values, words)]


# The search's statements, built once per shape (which filters are given; the first page or
# a later one): the values are bind parameters, so a search builds no SQL expression, and
# SQLAlchemy's compiled cache finds the statement by the same object every time.
_SEARCH_STATEMENTS: dict[tuple[Any, ...], Select[Any]] = {}
# The high-water mark of a first page: a column of the page's own statement, so one
# statement reads it and the page from the same snapshot (an aliased table: never
# correlated with the page's own memory_entries).
_hw = en.alias("hw")
_HWM = select(func.coalesce(func.max(_hw.c.seq), 0)).scalar_subquery().label("hwm")


def search_statement(
    dialect: str, flt: EntryFilter, query: spec.Search, *, cursor: bool, ranking: bool = False
) -> Select[Any]:
    """The statement of a page of `flt`'s search (`query`, as `_search` makes it from
    `flt`): a later page's (`cursor`) or the first's. Also the benchmarks' raw baseline
    (bench/data.py)."""
    shape = spec.Shape.of(query)
    key = (
        dialect,
        shape,
        cursor,
        flt.min_importance is not None and flt.min_importance > 1,
        bool(flt.sources),
        flt.scope is None and flt.scope_ref is not None,
        ranking,
    )
    stmt = _SEARCH_STATEMENTS.get(key)
    if stmt is None:
        _, _, _, min_importance, sources, ref_only, _ = key
        # The same conditions list_entries gives a list without a search.
        conds: list[Any] = []
        if min_importance:
            conds.append(en.c.importance + 0 >= bindparam("min_importance"))
        if sources:
            conds.append(in_list(en.c.source, "sources"))
        if ref_only:
            conds.append(en.c.scope_ref == bindparam("scope_ref"))
        # A later page: only the rows that existed at the first page. The first: every
        # row is at or below the mark read with them, so it only reads the mark.
        stmt = fulltext.entries_page(
            dialect,
            shape,
            () if ranking else COLUMNS,
            conds=conds,
            below_hwm=cursor,
            extra=() if cursor or ranking else (_HWM,),
        )
        _SEARCH_STATEMENTS[key] = stmt
    return stmt


def search_query(
    target: spec.Target,
    flt: EntryFilter,
    first: int,
    after: str | None,
    *,
    ranking: bool = False,
) -> tuple[Select[Any], dict[str, Any], int | None, int, Sequence[str]]:
    """The search statement of this page (`ranking`: its seq and rank only), its values,
    the cursor's hwm and offset, and the words searched for."""
    assert flt.search is not None
    query = spec.Search(
        analysis.words(flt.search, "search"),
        scope=None if flt.scope is None else flt.scope.value,
        scope_ref=None if flt.scope is None else flt.scope_ref,
        tags=list(flt.tags or []),
    )
    hwm, offset = cursors.decode_search("entries-search", after)
    stmt = search_statement(target.dialect, flt, query, cursor=hwm is not None, ranking=ranking)
    values = fulltext.params(target, query)
    values["page_offset"] = offset
    values["page_limit"] = first + 1
    if hwm is not None:
        values["hwm"] = hwm
    if flt.min_importance is not None and flt.min_importance > 1:
        values["min_importance"] = flt.min_importance
    if flt.sources:
        values["sources"] = [s.value for s in flt.sources]
    if flt.scope is None and flt.scope_ref is not None:
        values["scope_ref"] = flt.scope_ref
    return stmt, values, hwm, offset, query.words


def _search_page(
    rows: Sequence[tuple[Any, float]],
    words: Sequence[str],
    *,
    first: int,
    hwm: int | None,
    offset: int,
) -> Page[Entry]:
    """The page of (row, rank) pairs, under the high-water mark `hwm`, each hit scored by
    the share of the search's `words` it contains (search.score), ordered by rank."""
    edges = []
    for i, (row, _) in enumerate(rows[:first]):
        entry = to_entry(row)
        matched = analysis.matched_terms(words, [entry.title, entry.summary, *entry.tags])
        cursor = cursors.encode("entries-search", [hwm, offset + i + 1])
        edges.append(Edge(cursor, entry, analysis.score(words, matched), matched))
    return Page(edges, has_next_page=len(rows) > first)


# search statement -> the positions of its `rank` and `hwm` columns (-1: a later page's
# statement has no `hwm`)
_RANK_HWM_AT: dict[Select[Any], tuple[int, int]] = {}


def _rank_hwm_at(stmt: Select[Any]) -> tuple[int, int]:
    keys = list(stmt.selected_columns.keys())
    _RANK_HWM_AT[stmt] = at = (keys.index("rank"), keys.index("hwm") if "hwm" in keys else -1)
    return at
