"""The fast path's executor gives resolvers graphql-core's async helpers
(`info.async_helpers`, app/graphql/fastpath/executor.py) reaching the executor
weakly: a request's executor, with its context, is freed as soon as the request lets go
of it (no cycle left for the cyclic garbage collector), and the helpers still gather and
track work as graphql-core's own do."""

import asyncio
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import strawberry
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types import Info

from app.deps import Container
from app.graphql.fastpath.executor import PlannedExecutionContext
from app.graphql.request_context import Context
from app.graphql.schema import build_schema
from app.storage.tenants import TenantDb


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Recording(PlannedExecutionContext):
    executors: list[weakref.ref[Any]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        Recording.executors.append(weakref.ref(self))


async def test_the_executor_and_context_are_freed_without_the_cyclic_gc(
    container: Container, db: TenantDb, no_cyclic_gc: None
) -> None:
    schema = build_schema(fast_path=True)
    schema.execution_context_class = Recording
    Recording.executors.clear()
    ctx = Context(container=container, db=db, request_id="r1")
    context_ref = weakref.ref(ctx)
    result = await schema.execute(
        "{ __typename memoryEvents(first: 2) { edges { node { id } } } }", context_value=ctx
    )
    assert result.errors is None
    del ctx, result
    assert len(Recording.executors) == 1
    assert Recording.executors[0]() is None
    assert context_ref() is None


kept: list[Any] = []
settled: list[str] = []


async def _value(name: str) -> str:
    await asyncio.sleep(0)
    settled.append(name)
    return name


async def _failing() -> None:
    raise RuntimeError("observed, not raised")


@strawberry.type
class Query:
    @strawberry.field
    async def gathered(self, info: Info) -> list[str]:
        helpers = info._raw_info.async_helpers
        kept.append(helpers)
        helpers.track([_value("tracked"), _failing(), "not awaitable"])
        result: list[str] = await helpers.gather([_value("a"), _value("b")])
        return result


@pytest.mark.parametrize(
    "context_class", [PlannedExecutionContext, StrawberryGraphQLCoreExecutionContext]
)
async def test_the_helpers_gather_and_track_as_graphql_cores_do(context_class: Any) -> None:
    kept.clear()
    settled.clear()
    schema = strawberry.Schema(Query, execution_context_class=context_class)
    result = await schema.execute("{ gathered }")
    assert result.errors is None
    assert result.data == {"gathered": ["a", "b"]}
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(settled) == ["a", "b", "tracked"]

    # After the execution (its executor gone, for ours): the same results.
    helpers = kept[0]
    settled.clear()
    assert await helpers.gather([_value("c"), _value("d")]) == ["c", "d"]
    helpers.track([_value("late"), _failing(), None])
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(settled) == ["c", "d", "late"]
