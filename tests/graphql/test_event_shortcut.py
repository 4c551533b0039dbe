"""The subscription event short cut (app/graphql/fastpath/events.py) changes nothing a
subscriber sees.

Each subscription runs twice over the same events, through the fast path's execution
context with the short cut on and with it off (graphql-core's per-event execution): the
data (as JSON text, so the order of the keys counts) and the errors must be identical.
A count of the events the short cut answered shows which path was taken: a plain
selection must take it (else this compares graphql-core with itself), and what it must
refuse (fragments, directives, a field asked twice, a value the scalar refuses, a null
in a non-null field) must not.
"""

import json
from collections.abc import AsyncGenerator, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import strawberry

from app.graphql.changes import MemoryChange
from app.graphql.fastpath import events
from app.graphql.fastpath.executor import PlannedExecutionContext
from app.services.changes import Change, ChangeType
from app.services.records import Scope

AT = datetime(2026, 5, 4, 3, 2, 1, 123456, tzinfo=UTC)
CHANGES = [
    Change(7, ChangeType.ENTRY_UPDATED, AT, Scope.ENTITY, "acme", "ent_01", 3),
    Change(8, ChangeType.COMPACTION_FINISHED, AT, None, None, "run_01", 1),
    Change(9, ChangeType.EVENT_APPENDED, AT, Scope.INSTITUTIONAL, None, "evt_01", 1),
]
FIELDS = "id type time scope scopeRef objectId version"


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many events the short cut answered itself."""
    count = [0]
    render = events.EventPlan.render

    def counting(self: events.EventPlan, payload: Any, is_awaitable: Any) -> Any:
        data = render(self, payload, is_awaitable)
        count[0] += data is not None
        return data

    monkeypatch.setattr(events.EventPlan, "render", counting)
    yield count


def _schema(payloads: list[Any]) -> strawberry.Schema:
    @strawberry.type
    class Query:
        ok: bool = True

    @strawberry.type
    class Subscription:
        @strawberry.subscription
        async def memory_changed(self) -> AsyncGenerator[MemoryChange, None]:
            for p in payloads:
                yield p

        @strawberry.subscription
        async def maybe_changed(self) -> AsyncGenerator[MemoryChange | None, None]:
            for p in payloads:
                yield p

    return strawberry.Schema(
        query=Query, subscription=Subscription, execution_context_class=PlannedExecutionContext
    )


async def _run(schema: strawberry.Schema, query: str) -> list[tuple[str, list[Any]]]:
    out = []
    async for result in await schema.subscribe(query):
        errors = [e.formatted for e in result.errors or []]
        out.append((json.dumps(result.data), errors))
    return out


async def _both(payloads: list[Any], query: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    schema = _schema(payloads)
    fast = await _run(schema, query)
    monkeypatch.setattr(events, "enabled", False)
    stock = await _run(schema, query)
    monkeypatch.setattr(events, "enabled", True)
    assert fast == stock
    return fast


PLAIN = [
    f"subscription {{ memoryChanged {{ {FIELDS} }} }}",
    "subscription S { c: memoryChanged { __typename i: id t: time scope } }",
    "subscription { maybeChanged { version objectId } }",
]


@pytest.mark.parametrize("query", PLAIN)
async def test_a_plain_selection_is_answered_by_the_short_cut_as_graphql_core_would(
    query: str, answered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    payloads = [MemoryChange.of_change(c) for c in CHANGES]
    results = await _both(payloads, query, monkeypatch)
    assert answered[0] == len(CHANGES)
    assert len(results) == len(CHANGES) and all(not errors for _, errors in results)
    first = json.loads(results[0][0])
    assert next(iter(first.values()))  # data, not null


REFUSED = [
    "subscription { memoryChanged { ... on MemoryChange { id } } }",
    "subscription { memoryChanged { ...F } } fragment F on MemoryChange { id type }",
    "subscription { memoryChanged { id @include(if: true) type } }",
    "subscription { memoryChanged @skip(if: false) { id } }",
    "subscription { memoryChanged { id id } }",
]


@pytest.mark.parametrize("query", REFUSED)
async def test_a_selection_the_short_cut_does_not_cover_takes_graphql_cores_path(
    query: str, answered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    await _both([MemoryChange.of_change(c) for c in CHANGES], query, monkeypatch)
    assert answered[0] == 0


async def test_an_event_it_cannot_say_exactly_takes_graphql_cores_path_errors_and_all(
    answered: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = MemoryChange.of_change(CHANGES[0])
    bad_time = MemoryChange.of_change(CHANGES[0])
    bad_time.time = "yesterday"  # type: ignore[assignment]
    no_id = MemoryChange.of_change(CHANGES[1])
    no_id.id = None  # type: ignore[assignment]
    payloads: list[Any] = [good, bad_time, no_id, None, good]
    for field in ("memoryChanged", "maybeChanged"):
        answered[0] = 0
        results = await _both(payloads, f"subscription {{ {field} {{ {FIELDS} }} }}", monkeypatch)
        assert answered[0] == 2  # the two good ones
        assert [bool(errors) for _, errors in results] == [
            False,
            True,
            True,
            field == "memoryChanged",
            False,
        ]


async def test_of_change_says_what_of_payload_says() -> None:
    for change in CHANGES:
        assert MemoryChange.of_change(change) == MemoryChange.of(change.payload())
