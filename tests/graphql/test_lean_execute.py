"""The lean execute short cut (app/graphql/fastpath/operation.py) does what Strawberry's
own `Schema.execute` does with the policy runner: the same fast schema runs every case of
tests/graphql/test_fast_operations.py with it on and off, on a real tenant database, and
everything a caller can see is equal (result or exception, errors, noted operation,
processed and logged errors, what the execution context was left with)."""

from typing import Any

import pytest
from strawberry.extensions import SchemaExtension

from app.deps import Container
from app.graphql.fastpath import PolicySchema, operation
from app.graphql.schema import build_schema
from app.storage.tenants import TenantDb
from tests.graphql.test_fast_operations import CASES, _run, seeded  # noqa: F401 - fixture


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
async def test_lean_execute_is_strawberrys(
    case: Any,
    container: Container,
    seeded: TenantDb,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = seeded if case[4] else None
    schema = build_schema(fast_path=True)
    assert isinstance(schema, PolicySchema) and schema.lean
    taken: list[bool] = []
    lean_execute = operation.execute_lean

    async def counted(*args: Any, **kwargs: Any) -> Any:
        taken.append(True)
        return await lean_execute(*args, **kwargs)

    monkeypatch.setattr(operation, "execute_lean", counted)
    lean = await _run(schema, case, container, db, monkeypatch, caplog)
    assert taken == [True]
    monkeypatch.setattr(operation, "enabled", False)
    stock = await _run(schema, case, container, db, monkeypatch, caplog)
    assert taken == [True]  # Strawberry's execute the second time
    assert lean == stock


class Noting(SchemaExtension):
    def on_operation(self) -> Any:
        yield


def test_lean_only_where_it_is_strawberrys() -> None:
    schema = build_schema(fast_path=True)
    assert isinstance(schema, PolicySchema) and schema.lean
    cls = type(schema)
    common = {"query": schema.query, "mutation": schema.mutation, "policy": schema.policy}
    context_class = {"execution_context_class": schema.execution_context_class}
    assert cls(**common, **context_class).lean
    assert not cls(**common, **context_class, extensions=[Noting]).lean
    assert not cls(**common).lean  # graphql-core's executor: not the prepared build

    class Handled(cls):  # type: ignore[valid-type, misc]
        async def _handle_execution_result(self, *args: Any, **kwargs: Any) -> Any:
            return await super()._handle_execution_result(*args, **kwargs)

    assert not Handled(**common, **context_class).lean
