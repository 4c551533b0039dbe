"""Full-text search on PostgreSQL (app/storage/search/fulltext.py says what both backends share):
generated tsvector columns ranked by ts_rank, negated so lower is better as with bm25."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    and_,
    bindparam,
    cast,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB, REGCONFIG, TSVECTOR

from app.storage.search.spec import MIN_PREFIX_LEN, Search, Shape, Target

# ts_rank weights in the order {D, C, B, A}, scaled to 1: entries title A (5), tags B (3),
# summary D (1); events kind B (2), body D (1). The bm25 weights above, as ratios.
ENTRY_WEIGHTS = [0.2, 0.0, 0.6, 1.0]
EVENT_WEIGHTS = [0.5, 0.0, 1.0, 0.0]
# Normalisation 1: divide by 1 + log(document length), as bm25 favours short documents.
NORMALISATION = 1
_search_vector = column("search_vector", TSVECTOR)


def tsquery_text(words: Sequence[str], *, prefix: bool) -> str:
    """A to_tsquery() text matching any of `words`: each one a quoted lexeme (so no input
    is read as tsquery syntax), `:*` for a prefix, joined by `|`."""
    parts = []
    for word in words:
        quoted = "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
        parts.append(quoted + ":*" if prefix and len(word) >= MIN_PREFIX_LEN else quoted)
    return " | ".join(parts)


def matching(
    target: Target,
    table: Any,
    s: Search,
    columns: Sequence[Any],
    weights: list[float],
    *,
    tags: bool,
) -> Select[Any]:
    config = cast(literal(config_name(target)), REGCONFIG)
    query = func.to_tsquery(config, tsquery_text(s.words, prefix=s.prefix))
    conds: list[Any] = [_search_vector.op("@@")(query)]
    if s.scope is not None:
        conds.append(table.c.scope == s.scope)
        if s.scope_ref is not None:
            conds.append(table.c.scope_ref == s.scope_ref)
    if tags and s.tags:
        conds.append(cast(table.c.tags, JSONB).contains(list(dict.fromkeys(s.tags))))
    if s.any_of:
        conds.append(
            or_(
                *(
                    and_(
                        table.c.scope == sc,
                        table.c.scope_ref.is_(None) if ref is None else table.c.scope_ref == ref,
                    )
                    for sc, ref in s.any_of
                )
            )
        )
    return select(*columns, table.c.seq, rank_of(query, weights)).where(*conds)


def any_of_template(
    table: Any,
    shape: Sequence[bool],
    columns: Sequence[Any],
    weights: list[float],
    *,
    ranked: bool,
) -> Select[Any]:
    """`matching` for a Search with `any_of` alone, its values bind parameters
    (`fts_config`, `fts_query`, `fts_scope_{i}` and, when `shape[i]` is False,
    `fts_ref_{i}`): `shape[i]` says whether the i-th pair has no scopeRef."""
    config = cast(bindparam("fts_config", type_=String), REGCONFIG)
    query = func.to_tsquery(config, bindparam("fts_query", type_=String))
    rank = [rank_of(query, weights)] if ranked else []
    pairs = [
        and_(
            table.c.scope == bindparam(f"fts_scope_{i}", type_=String),
            table.c.scope_ref.is_(None)
            if ref_is_none
            else table.c.scope_ref == bindparam(f"fts_ref_{i}", type_=String),
        )
        for i, ref_is_none in enumerate(shape)
    ]
    return select(*columns, table.c.seq, *rank).where(_search_vector.op("@@")(query), or_(*pairs))


def any_of_params(target: Target, s: Search) -> dict[str, Any]:
    """The bind parameters of `any_of_template` for `s`."""
    out: dict[str, Any] = {
        "fts_config": config_name(target),
        "fts_query": tsquery_text(s.words, prefix=s.prefix),
    }
    for i, (scope, ref) in enumerate(s.any_of):
        out[f"fts_scope_{i}"] = scope
        if ref is not None:
            out[f"fts_ref_{i}"] = ref
    return out


def config_name(target: Target) -> str:
    """The tenant migration's `jet_english` (no stop words), named in the tenant's schema."""
    return f'"{target.schema}".jet_english'


def rank_of(query: ColumnElement[Any], weights: list[float]) -> ColumnElement[Any]:
    # Constants, not user input: rendered inline so asyncpg needs no array type for them.
    weight_array: ColumnElement[Any] = literal_column(
        "ARRAY[" + ", ".join(map(str, weights)) + "]::float4[]"
    )
    return (-func.ts_rank(weight_array, _search_vector, query, NORMALISATION)).label("rank")


def template(
    table: Any, shape: Shape, columns: Sequence[Any], weights: list[float], *, tags: bool
) -> Select[Any]:
    """`matching` with its values as bind parameters (`fts_config`, `fts_query`,
    `fts_scope`, `fts_scope_ref`, `fts_tags`)."""
    config = cast(bindparam("fts_config", type_=String), REGCONFIG)
    query = func.to_tsquery(config, bindparam("fts_query", type_=String))
    conds: list[Any] = [_search_vector.op("@@")(query)]
    if shape.scope:
        conds.append(table.c.scope == bindparam("fts_scope"))
        if shape.scope_ref:
            conds.append(table.c.scope_ref == bindparam("fts_scope_ref"))
    if tags and shape.tags:
        conds.append(cast(table.c.tags, JSONB).contains(bindparam("fts_tags", type_=JSONB)))
    return select(*columns, table.c.seq, rank_of(query, weights)).where(*conds)
