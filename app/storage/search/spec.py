"""What a full-text search asks for (Search), for which backend (Target), and the shape of
its statement (Shape): shared by app/storage/search/fulltext.py and its PostgreSQL half."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage import postgres

MIN_PREFIX_LEN = 3


@dataclass(frozen=True, slots=True)
class Search:
    """What to find: any of `words` (none required; matching more ranks higher), in rows
    that pass every filter."""

    words: Sequence[str]
    prefix: bool = True  # a word also matches as a prefix (3 characters or more)
    scope: str | None = None
    scope_ref: str | None = None  # with `scope`: that exact scope/scopeRef
    tags: Sequence[str] = ()  # every one of them
    # At least one of these exact (scope, scopeRef) pairs (the context loader).
    any_of: Sequence[tuple[str, str | None]] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Target:
    """Which backend a statement is for, and (PostgreSQL) the tenant's schema."""

    dialect: str
    schema: str | None = None

    @classmethod
    def of(cls, conn: AsyncConnection) -> "Target":
        return cls(conn.dialect.name, postgres.schema_of(conn))

    @classmethod
    def of_engine(cls, engine: AsyncEngine) -> "Target":
        options = engine.sync_engine.get_execution_options()
        translate: dict[Any, str] = options.get("schema_translate_map") or {}
        return cls(engine.dialect.name, translate.get(None))


@dataclass(frozen=True, slots=True)
class Shape:
    """What a Search's statement looks like, apart from its values (which become bind
    parameters, see `params`): a key for a statement built once and reused. `any_of` (the
    context loader's) has no template; it builds its statement with `entries`."""

    scope: bool = False
    scope_ref: bool = False
    tags: bool = False

    @classmethod
    def of(cls, s: Search) -> "Shape":
        assert not s.any_of, "a Search with any_of has no template"
        return cls(
            s.scope is not None, s.scope is not None and s.scope_ref is not None, bool(s.tags)
        )
