"""The scopes of a statement built once (its shape) and their bind parameters: the context
loader's reads take one to three scopes, each with or without a scopeRef, and building a
statement and its cache key anew for each read was a measurable part of a call's time
(docs/context.md, "Performance"). The event kinds a call includes or leaves out are part
of the shape the same way."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, String, bindparam, not_

from app.services.records import Scope
from app.storage.lists import in_list

LIMIT = bindparam("limit", type_=Integer)


def shape_of(scopes: Sequence[tuple[Scope, str | None]]) -> tuple[bool, ...]:
    """Whether each scope has no scopeRef: what the statement of `scopes` depends on."""
    return tuple(ref is None for _, ref in scopes)


def in_scope(table: Any, i: int, ref_is_none: bool) -> list[Any]:
    """The conditions of the i-th scope of a shape: `scope_{i}`, and `ref_{i}` or IS NULL."""
    ref = (
        table.c.scope_ref.is_(None)
        if ref_is_none
        else table.c.scope_ref == bindparam(f"ref_{i}", type_=String)
    )
    return [table.c.scope == bindparam(f"scope_{i}", type_=String), ref]


def values(scopes: Sequence[tuple[Scope, str | None]]) -> dict[str, Any]:
    """The bind parameters of `in_scope` for each of `scopes`, in order."""
    out: dict[str, Any] = {}
    for i, (scope, ref) in enumerate(scopes):
        out[f"scope_{i}"] = scope.value
        if ref is not None:
            out[f"ref_{i}"] = ref
    return out


@dataclass(frozen=True, slots=True)
class Kinds:
    """The event kinds a call takes (`only`, when given) and leaves out (`without`)."""

    only: tuple[str, ...] | None = None
    without: tuple[str, ...] | None = None

    @property
    def shape(self) -> tuple[bool, bool]:
        return (self.only is not None, bool(self.without))

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.only is not None:
            out["kinds"] = list(self.only)
        if self.without:
            out["exclude_kinds"] = list(self.without)
        return out


ALL_KINDS = Kinds()


def of_kinds(table: Any, shape: tuple[bool, bool]) -> list[Any]:
    """The conditions of a kinds shape: `kind` among `:kinds`, and not among
    `:exclude_kinds`."""
    only, without = shape
    conds: list[Any] = []
    if only:
        conds.append(in_list(table.c.kind, "kinds"))
    if without:
        conds.append(not_(in_list(table.c.kind, "exclude_kinds")))
    return conds
