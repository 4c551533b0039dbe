"""The fast path's short cut for plain leaf fields (app/graphql/fastpath/executor.py)
changes nothing a client sees: the same data as stock Strawberry's, and the same errors
with the same paths."""

from datetime import UTC, datetime
from enum import Enum
from typing import Any

import strawberry

from app.deps import Container
from app.graphql.fastpath.executor import PlannedExecutionContext
from app.graphql.request_context import Context
from app.graphql.schema import build_schema
from app.services import entries, events
from app.services.records import EntryIn, EntrySource, EventIn, Scope
from app.storage.tenants import TenantDb

EVERYTHING = """{
  memoryEvents(first: 10) {
    edges { cursor node { __typename id scope scopeRef kind body source sourceRef occurredAt
      recordedAt compressedAt compressedInto { id title } } }
    pageInfo { hasNextPage endCursor }
  }
  memoryEntries(first: 10) {
    edges { cursor score node { id scope scopeRef title summary tags importance source
      createdAt updatedAt version alias: title sourceEvents(first: 2) { edges { cursor } } } }
    pageInfo { hasNextPage endCursor }
  }
}"""


async def test_the_schema_answers_the_same_as_graphql_core_alone(
    container: Container, db: TenantDb
) -> None:
    at = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    await events.append_events(
        db,
        [
            EventIn(
                scope=Scope.ENTITY,
                scope_ref="ent_acme",
                kind="decision",
                body="Ünïcode ✓",
                source="inbox",
                source_ref=f"m{i}",
                occurred_at=at,
                idempotency_key=None,
            )
            for i in range(3)
        ]
        + [
            EventIn(
                scope=Scope.INSTITUTIONAL,
                scope_ref=None,
                kind="note",
                body="b",
                source=None,
                source_ref=None,
                occurred_at=None,
                idempotency_key=None,
            )
        ],
        max_rows=100,
    )
    await entries.create_entry(
        db,
        EntryIn(
            scope=Scope.ENTITY,
            scope_ref="ent_acme",
            title="T",
            summary="S",
            tags=["a", "b"],
            importance=4,
            source=EntrySource.MANUAL,
        ),
    )
    ctx = Context(container=container, db=db, request_id="r1")
    ours = await build_schema(fast_path=True).execute(EVERYTHING, context_value=ctx)
    plain = build_schema(fast_path=False)
    theirs = await plain.execute(EVERYTHING, context_value=ctx)
    assert ours.errors is None and theirs.errors is None
    assert ours.data == theirs.data
    assert ours.data is not None and len(ours.data["memoryEvents"]["edges"]) == 4


class Colour(Enum):
    RED = "red"


@strawberry.type
class Thing:
    name: str
    nickname: str | None
    colour: Colour
    when: datetime
    count: int


@strawberry.type
class Query:
    @strawberry.field
    def things(self) -> list[Thing | None]:
        good = Thing(name="a", nickname=None, colour=Colour.RED, when=datetime(2026, 1, 1), count=1)
        # Values graphql-core refuses: null for a non-null field, a wrong enum, a string
        # for a DateTime, an int out of range.
        bad: Any = [
            Thing(name=None, nickname="n", colour=Colour.RED, when=datetime(2026, 1, 1), count=1),  # type: ignore[arg-type]
            Thing(name="b", nickname=None, colour="blue", when=datetime(2026, 1, 1), count=1),  # type: ignore[arg-type]
            Thing(name="c", nickname=None, colour=Colour.RED, when="x", count=1),  # type: ignore[arg-type]
            Thing(
                name="d", nickname=None, colour=Colour.RED, when=datetime(2026, 1, 1), count=2**40
            ),
        ]
        return [good, *bad]


async def test_refused_values_give_the_same_errors() -> None:
    query = "{ things { name nickname colour when count } }"
    ours = await strawberry.Schema(Query, execution_context_class=PlannedExecutionContext).execute(
        query
    )
    theirs = await strawberry.Schema(Query).execute(query)
    assert theirs.errors and len(theirs.errors) == 4
    assert ours.data == theirs.data
    assert [e.formatted for e in ours.errors or []] == [e.formatted for e in theirs.errors]
