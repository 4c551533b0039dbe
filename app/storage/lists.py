"""A list of values bound as ONE parameter, whatever its length: `column IN (list)` that
does not grow the statement with the list (expanding IN lists do, one placeholder a value,
and PostgreSQL refuses more than 32,767 of them). PostgreSQL: `column = ANY(:list)` with
an array; SQLite: `column IN (SELECT value FROM json_each(:list))` with a JSON text.

Also where storage says which text no backend can hold: PostgreSQL's text cannot carry
NUL (U+0000) and neither database takes a lone surrogate (not UTF-8), so no stored value
has one and a value with one matches nothing."""

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import BindParameter, ColumnElement, String, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import NullType, TypeDecorator, TypeEngine


class ValueList(TypeDecorator[Sequence[str]]):
    """A list of strings as one bound value: a text array on PostgreSQL, a JSON array
    text on SQLite (read back by json_each)."""

    impl = String
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(ARRAY(String()))
        return dialect.type_descriptor(String())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        values = list(value)
        if dialect.name == "postgresql":
            return values
        return orjson.dumps(values).decode()


class _InList(FunctionElement[Any]):
    """`column IN list` with the list one bound parameter (see `in_list`)."""

    name = "in_list"
    # Not Boolean: SQLAlchemy writes a Boolean expression of a backend without a boolean
    # type (SQLite) as `(...) = 1` in a WHERE clause, which no index can answer, so every
    # `in_list` scanned its whole table.
    type = NullType()
    inherit_cache = True


@compiles(_InList)
def _sqlite_in_list(element: _InList, compiler: SQLCompiler, **kw: Any) -> str:
    column, values = list(element.clauses)
    return (
        f"({compiler.process(column, **kw)} IN "
        f"(SELECT value FROM json_each({compiler.process(values, **kw)})))"
    )


@compiles(_InList, "postgresql")
def _postgres_in_list(element: _InList, compiler: SQLCompiler, **kw: Any) -> str:
    column, values = list(element.clauses)
    return f"({compiler.process(column, **kw)} = ANY({compiler.process(values, **kw)}))"


def in_list(column: ColumnElement[Any], values: str | Sequence[str]) -> ColumnElement[bool]:
    """`column` is one of a list of strings, bound as one parameter: the bind parameter's
    name (its value given at execution, a list), or the list itself."""
    param: BindParameter[Any] = (
        bindparam(values, type_=ValueList())
        if isinstance(values, str)
        else bindparam(None, list(values), type_=ValueList())
    )
    return _InList(column, param)


def storable(value: str) -> bool:
    """Whether a text can be stored at all (no NUL, valid UTF-8): one that cannot
    matches no row."""
    if "\x00" in value:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
