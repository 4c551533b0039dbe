"""Full-text search, per backend: SQLite FTS5 (bm25) or PostgreSQL tsvector (ts_rank).

The services say what they look for (the words of a question, and scope, scopeRef and tag
filters); this module says how each backend finds it. Both return the same shape: the
columns asked for, the row's `seq` and a `rank` that is better when lower (FTS5's bm25 is
negative; PostgreSQL's ts_rank is negated to match), so ordering, paging and the context
loader's scaling are the same code on both.

- SQLite: contentful FTS5 tables, porter stemming; entries kept by triggers (tenant
  migration 0001), events indexed by their writer's transaction (INDEX_EVENTS_SQL).
  Filters are opaque tokens in the index's `filters` column, so they narrow the MATCH
  itself rather than filtering its results afterwards.
- PostgreSQL: generated `search_vector` columns (snowball english stemming, no stop words,
  weights A/B/D) with GIN indexes; filters are plain column conditions. Ranking differs
  in scale, not in intent: docs/postgresql.md compares the two.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    TextClause,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.storage.models import entries_table as en
from app.storage.models import events_table as ev
from app.storage.search import fulltext_postgres
from app.storage.search.spec import MIN_PREFIX_LEN, Search, Shape, Target


def matching(target: Target, table: Any, s: Search, columns: Sequence[Any]) -> Select[Any]:
    """Entries or events (by `table`) matching `s`: `columns`, `seq` and `rank` (lower is
    better). Events have no tags."""
    index = _index(table)
    if target.dialect == "postgresql":
        return fulltext_postgres.matching(
            target, table, s, columns, index.pg_weights, tags=index.tags
        )
    match = text(f"{index.name} MATCH :match").bindparams(match=fts5_match(s, index.text_columns))
    return _fts5_joined(table, columns, match, ranked=True)


def entries_page(
    dialect: str,
    shape: Shape,
    columns: Sequence[Any],
    *,
    conds: Sequence[ColumnElement[bool]] = (),
    below_hwm: bool = False,
    extra: Sequence[Any] = (),
) -> Select[Any]:
    """A page of the entries matching any Search of `shape`, best first (`rank`, then
    `seq`): `columns`, `seq`, `rank` and `extra`, of the rows that also pass `conds`
    (conditions on memory_entries) and, `below_hwm`, have `seq <= :hwm`. No `columns` nor
    `extra`: the ranking alone (`seq`, `rank`), which on SQLite reads no entry row.

    Built once per shape by the caller: the values are bind parameters, `params(...)` of
    the Search and `page_offset`, `page_limit` (and `hwm`). The same rows, ranks and order
    as `matching` with those conditions, ordered and cut (tests/services/
    test_entry_search.py compares them)."""
    offset = bindparam("page_offset", type_=Integer)
    limit = bindparam("page_limit", type_=Integer)
    if dialect == "postgresql":
        stmt = fulltext_postgres.template(
            en, shape, columns, fulltext_postgres.ENTRY_WEIGHTS, tags=True
        ).where(*conds)
        if below_hwm:
            stmt = stmt.where(en.c.seq <= bindparam("hwm"))
        return stmt.add_columns(*extra).order_by(text("rank"), en.c.seq).offset(offset).limit(limit)
    # SQLite: the page is cut from the index alone (rowid and bm25), then only its rows are
    # read from memory_entries, rather than sorting every match's whole row (Markdown
    # summaries) to keep 20 of them. The index holds exactly the entries (the tenant
    # migration's triggers, in the writer's transaction), so cutting before the join keeps
    # the same rows. Conditions on memory_entries need its rows first.
    fts = text("memory_entries_fts")
    rank = func.bm25(fts, *BM25_ENTRY_WEIGHTS).label("rank")
    match = _bound_match("memory_entries_fts")
    seq: ColumnElement[Any]
    if conds:
        seq = en.c.seq
        top = select(seq.label("seq"), rank).select_from(
            en.join(fts, text("memory_entries_fts.rowid = memory_entries.seq"))
        )
    else:
        seq = literal_column("memory_entries_fts.rowid", Integer)
        top = select(seq.label("seq"), rank).select_from(fts)
    top = top.where(match, *conds)
    if below_hwm:
        top = top.where(seq <= bindparam("hwm", type_=Integer))
    top = top.order_by(text("rank"), seq).offset(offset).limit(limit)
    if not columns and not extra:
        return top  # the ranking alone (seq, rank): no row of memory_entries to read
    page = top.subquery("page")
    return (
        select(*columns, en.c.seq, page.c.rank, *extra)
        .select_from(page.join(en, en.c.seq == page.c.seq))
        .order_by(page.c.rank, page.c.seq)
    )


def params(target: Target, s: Search) -> dict[str, Any]:
    """The bind parameters of `entries_page(target.dialect, Shape.of(s), ...)` for `s`."""
    if target.dialect == "postgresql":
        out: dict[str, Any] = {
            "fts_config": fulltext_postgres.config_name(target),
            "fts_query": fulltext_postgres.tsquery_text(s.words, prefix=s.prefix),
        }
        if s.scope is not None:
            out["fts_scope"] = s.scope
            if s.scope_ref is not None:
                out["fts_scope_ref"] = s.scope_ref
        if s.tags:
            out["fts_tags"] = list(dict.fromkeys(s.tags))
        return out
    return {"fts_match": fts5_match(s, ENTRY_TEXT_COLUMNS)}


def any_of_statement(
    dialect: str, table: Any, shape: Sequence[bool], columns: Sequence[Any], *, ranked: bool
) -> Select[Any]:
    """`matching(...)` of a Search with `any_of` whose pairs have the `shape` (True: no
    scopeRef), built once by the caller: the values are bind parameters,
    `any_of_params(...)` of the Search. `columns`, `seq` and (`ranked`) `rank`."""
    index = _index(table)
    if dialect == "postgresql":
        return fulltext_postgres.any_of_template(
            table, shape, columns, index.pg_weights, ranked=ranked
        )
    return _fts5_joined(table, columns, _bound_match(index.name), ranked=ranked)


def best_entries_any_of(dialect: str, shape: Sequence[bool], columns: Sequence[Any]) -> Select[Any]:
    """The best `:page_limit` entries (from `:page_offset`) of a Search with `any_of`
    (`any_of_statement` of memory_entries, ranked), best first (`rank`, then `seq`):
    `columns`, `seq`, `rank`. On SQLite that is `entries_page`, whose match (the scopes
    included) is one bind parameter: the best are cut from the index alone and only their
    rows are read, not every match's row to sort it."""
    if dialect != "postgresql":
        return entries_page(dialect, Shape(), columns)
    inner = any_of_statement(dialect, en, shape, columns, ranked=True).subquery()
    return (
        select(inner)
        .order_by(inner.c.rank, inner.c.seq)
        .offset(bindparam("page_offset", type_=Integer))
        .limit(bindparam("page_limit", type_=Integer))
    )


def any_of_params(target: Target, table: Any, s: Search) -> dict[str, Any]:
    """The bind parameters of `any_of_statement(target.dialect, table, ...)` for `s`."""
    if target.dialect == "postgresql":
        return fulltext_postgres.any_of_params(target, s)
    return {"fts_match": fts5_match(s, _index(table).text_columns)}


def from_seq_condition(dialect: str) -> ColumnElement[bool] | TextClause:
    """Only the events from `:from_seq` on, in the form the index itself skips the rest."""
    if dialect == "postgresql":
        at_least: ColumnElement[bool] = ev.c.seq >= bindparam("from_seq", type_=Integer)
        return at_least
    return text("memory_events_fts.rowid >= :from_seq").bindparams(
        bindparam("from_seq", type_=Integer)
    )


def events_newest_first(target: Target) -> ColumnElement[Any]:
    """The order of events matching a search, newest first, that the index serves
    without a sort."""
    seq: ColumnElement[Any] = (
        ev.c.seq
        if target.dialect == "postgresql"
        else literal_column("memory_events_fts.rowid", Integer)
    )
    return seq.desc()


def entries_tagged(
    target: Target, tags: Sequence[str], scope: str | None, scope_ref: str | None
) -> ColumnElement[bool]:
    """A condition: the entry carries every one of `tags` (for lists without a search)."""
    if target.dialect == "postgresql":
        contains: ColumnElement[bool] = cast(en.c.tags, JSONB).contains(list(tags))
        return contains
    tokens = [tag_token(t) for t in dict.fromkeys(tags)] + _scope_tokens(scope, scope_ref)
    in_index: ColumnElement[bool] = en.c.seq.in_(
        select(text("rowid"))
        .select_from(text("memory_entries_fts"))
        .where(text("memory_entries_fts MATCH :tags").bindparams(tags=filter_query(tokens)))
    )
    return in_index


# ------------------------------------------------------------------------ SQLite FTS5

ENTRY_TEXT_COLUMNS = "{title summary tags}"
EVENT_TEXT_COLUMNS = "{body kind}"
# bm25 column weights: title, summary, tags, filters (filters never score); body, kind.
BM25_ENTRY_WEIGHTS = (5.0, 1.0, 3.0, 0.0)
BM25_EVENT_WEIGHTS = (1.0, 2.0, 0.0)


def filter_token(marker: str, value: str) -> str:
    """One FTS token for a filter value; twin of `event_filters_sql` (and of the SQL in
    the tenant migration 0001's entry triggers).

    Hex keeps any value a single alphanumeric token; the trailing digit keeps the porter
    stemmer from touching it.
    """
    return f"{marker}{value.encode('utf-8').hex()}9"


def event_filters_sql(row: str = "") -> str:
    """The SQL twin of an event's filter tokens (its `scope_token`s with and without the
    scopeRef), in the `filters` column of memory_events_fts: over the columns of
    memory_events, `row` ("new." in a trigger) before each name. tests/services/
    test_event_index.py holds the two equal for awkward values."""
    scope, ref = f"{row}scope", f"{row}scope_ref"
    return (
        f"'k' || lower(hex({scope})) || '9 k' "
        f"|| lower(hex({scope} || '/' || coalesce({ref}, ''))) || '9'"
    )


# Events are indexed by the statement that follows their INSERT, in the same transaction,
# once per transaction rather than by a per-row trigger (tenant migration 0004 dropped it
# as the slower of the two; docs/benchmarks.md).
# `:after` is the highest seq before the transaction's first insert (LAST_EVENT_SEQ_SQL,
# read inside the same write transaction, so every row above it is this transaction's).
# Plain SQL with named parameters: sqlite3, aiosqlite and text() all take it, so every
# writer (the service, the benchmarks' raw baselines, their data seeding) runs this one.
LAST_EVENT_SEQ_SQL = "SELECT coalesce(max(seq), 0) FROM memory_events"
INDEX_EVENTS_SQL = (
    "INSERT INTO memory_events_fts (rowid, body, kind, filters) "
    f"SELECT seq, body, kind, {event_filters_sql()} FROM memory_events WHERE seq > :after"
)


def scope_token(scope: str, scope_ref: str | None = None, *, with_ref: bool) -> str:
    return filter_token("k", f"{scope}/{scope_ref or ''}" if with_ref else scope)


def tag_token(tag: str) -> str:
    return filter_token("t", tag)


def _scope_tokens(scope: str | None, scope_ref: str | None) -> list[str]:
    if scope is None:
        return []
    return [scope_token(scope, scope_ref, with_ref=scope_ref is not None)]


def text_query(words: Sequence[str], columns: str, *, prefix: bool = True) -> str:
    """An FTS5 expression matching any of `words`, stemmed or as a prefix.

    Every word is a quoted string, so no user input is ever read as FTS5 syntax
    (AND, NEAR, quotes, parentheses, column filters). bm25 adds up over the words an
    entry matches: matching more of them ranks higher, none is required.
    """
    alternatives: list[str] = []
    for word in words:
        quoted = '"' + word.replace('"', '""') + '"'
        alternatives.append(quoted)
        if prefix and len(word) >= MIN_PREFIX_LEN:
            alternatives.append(quoted + "*")
    return f"{columns} : ({' OR '.join(alternatives)})"


def filter_query(tokens: Sequence[str]) -> str:
    return " AND ".join(f'filters : "{t}"' for t in tokens)


def any_filter_query(tokens: Sequence[str]) -> str:
    """Rows carrying at least one of `tokens` (a scope, or the institutional scope)."""
    return "filters : (" + " OR ".join(f'"{t}"' for t in tokens) + ")"


def match_expression(
    text_expr: str | None, filter_tokens: Sequence[str], *, any_of: Sequence[str] = ()
) -> str:
    """text AND every filter token AND (when given) at least one of `any_of`."""
    parts = (
        ([f"({text_expr})"] if text_expr else [])
        + ([filter_query(filter_tokens)] if filter_tokens else [])
        + ([any_filter_query(any_of)] if any_of else [])
    )
    assert parts, "a MATCH needs text or filters"
    return " AND ".join(parts)


def fts5_match(s: Search, columns: str) -> str:
    """The whole MATCH expression of `s` against the FTS5 `columns`."""
    tokens = [tag_token(t) for t in dict.fromkeys(s.tags)] + _scope_tokens(s.scope, s.scope_ref)
    any_of = [scope_token(sc, ref, with_ref=True) for sc, ref in s.any_of]
    return match_expression(text_query(s.words, columns, prefix=s.prefix), tokens, any_of=any_of)


@dataclass(frozen=True, slots=True)
class _Index:
    """What the statements of one table's full-text index differ by."""

    name: str  # the FTS5 table
    text_columns: str  # the FTS5 columns a search's words are looked for in
    bm25: tuple[float, ...]
    pg_weights: list[float]  # PostgreSQL's ts_rank weights
    tags: bool  # whether a Search's tags apply


_INDEXES = {
    "memory_entries": _Index(
        "memory_entries_fts",
        ENTRY_TEXT_COLUMNS,
        BM25_ENTRY_WEIGHTS,
        fulltext_postgres.ENTRY_WEIGHTS,
        tags=True,
    ),
    "memory_events": _Index(
        "memory_events_fts",
        EVENT_TEXT_COLUMNS,
        BM25_EVENT_WEIGHTS,
        fulltext_postgres.EVENT_WEIGHTS,
        tags=False,
    ),
}


def _index(table: Any) -> _Index:
    return _INDEXES[table.name]


def _bound_match(name: str) -> TextClause:
    """`<name> MATCH :fts_match`, the expression a bind parameter."""
    return text(f"{name} MATCH :fts_match").bindparams(bindparam("fts_match", type_=String))


def _fts5_joined(
    table: Any, columns: Sequence[Any], match: TextClause, *, ranked: bool
) -> Select[Any]:
    """`columns`, `seq` and (`ranked`) bm25 as `rank` of `table`'s rows that `match`."""
    index = _index(table)
    fts = text(index.name)
    rank = [func.bm25(fts, *index.bm25).label("rank")] if ranked else []
    return (
        select(*columns, table.c.seq, *rank)
        .select_from(table.join(fts, text(f"{index.name}.rowid = {table.name}.seq")))
        .where(match)
    )
