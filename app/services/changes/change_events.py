"""Change events: the one vocabulary every surface announces changes in (webhooks, the
memoryChanged subscription), read from the tenant's outbox by id. Never memory text."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import PlainSerializer, TypeAdapter, with_config

from app.errors import InvalidInput
from app.services import validation
from app.services.records import RECORD_JSON, Scope
from app.storage.changes import outbox
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, write_transaction
from app.storage.types import utcnow


class ChangeType(StrEnum):
    EVENT_APPENDED = "event.appended"
    ENTRY_CREATED = "entry.created"
    ENTRY_UPDATED = "entry.updated"
    ENTRY_DELETED = "entry.deleted"
    COMPACTION_FINISHED = "compaction.finished"


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class Change:
    """A change event, as POSTed to endpoints: never the memory text."""

    # Compared as a number here; every surface writes it as text (GraphQL's ID).
    id: Annotated[int, PlainSerializer(str, return_type=str)]
    """grows with every change of this tenant"""
    type: ChangeType
    time: datetime
    scope: Scope | None  # None for compaction.finished
    scope_ref: str | None
    object_id: str
    version: int

    def payload(self) -> dict[str, Any]:
        """The change as every surface sends it (camelCase, the time in ISO 8601 UTC)."""
        payload: dict[str, Any] = _PAYLOAD.dump_python(self, mode="json")
        return payload


_PAYLOAD = TypeAdapter(Change)


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    """Which changes a listener wants: types (empty: all), one scope (and scopeRef)."""

    types: frozenset[ChangeType] = frozenset()
    scope: Scope | None = None
    scope_ref: str | None = None

    def matches(self, change: Change) -> bool:
        if self.types and change.type not in self.types:
            return False
        if self.scope is not None and change.scope != self.scope:
            return False
        return self.scope_ref is None or change.scope_ref == self.scope_ref


def change_types(values: Collection[str], *, field: str = "types") -> frozenset[ChangeType]:
    """Parse change type names; an unknown one is an error naming the field."""
    known = {t.value: t for t in ChangeType}
    unknown = sorted(v for v in values if v not in known)
    if unknown:
        raise InvalidInput(
            [field], f"{field}: unknown change type {unknown[0]!r}; one of {', '.join(known)}"
        )
    return frozenset(known[v] for v in values)


def change_filter(
    types: Collection[str], scope: Scope | None, scope_ref: str | None
) -> ChangeFilter:
    """A listener's filter, checked: known types, a scopeRef only with a scope."""
    if len(types) > len(ChangeType):
        raise InvalidInput(["types"], f"types has more than {len(ChangeType)} values")
    parsed = change_types(types)
    if scope is not None:
        validation.check_scope(scope, scope_ref)
    elif scope_ref is not None:
        raise InvalidInput(["scopeRef"], "scopeRef needs a scope")
    return ChangeFilter(parsed, scope, scope_ref)


def parse_cursor(after: str | None) -> int | None:
    """A change id to resume after (None: from now on)."""
    if after is None:
        return None
    if not after.isascii() or not after.isdigit() or len(after) > 19:
        raise InvalidInput(["after"], "after must be a change id (the id of a MemoryChange)")
    return int(after)


def to_change(row: Any) -> Change:
    id_, type_, at, scope, scope_ref, object_id, version = row
    return Change(
        id=int(id_),
        type=ChangeType(type_),
        time=at,
        scope=Scope(scope) if scope is not None else None,
        scope_ref=scope_ref,
        object_id=object_id,
        version=int(version),
    )


async def changes_after(db: TenantDb, cursor: int, *, limit: int) -> Sequence[Change]:
    """The changes with an id above `cursor`, oldest first, at most `limit`."""
    rows = await read_rows(db.engine, outbox.AFTER, {"cursor": cursor, "limit": limit})
    return [to_change(r) for r in rows]


async def last_change_id(db: TenantDb) -> int:
    """The id of the latest change (0 before the first): where a new listener starts."""
    rows = await read_rows(db.engine, outbox.LAST_ID)
    return int(rows[0][0])


async def prune_changes(db: TenantDb, *, keep: timedelta, batch: int = 5000) -> int:
    """Forget changes older than `keep`, a bounded batch per transaction; how many went."""
    removed = 0
    before = utcnow() - keep
    while True:
        async with write_transaction(db.engine) as conn:
            n = await outbox.prune(conn, before, batch)
        removed += n
        if n < batch:
            return removed
