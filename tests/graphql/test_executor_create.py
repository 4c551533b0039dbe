"""`JetExecutionContext._create` (what `build` returns for a prepared document) sets the
attributes the constructor chain sets (graphql-core's Executor and IncrementalExecutor,
Strawberry's, ours), with the same values; and `build` takes it only where it is that."""

from typing import Any

import pytest
from graphql import (
    GraphQLResolveInfoHelpers,
    MiddlewareManager,
    default_field_resolver,
    default_type_resolver,
    parse,
)
from graphql.execution.executor import CollectedErrors
from graphql.pyutils.ref_map import RefMap
from strawberry.execution import optimized_is_awaitable

from app.graphql import execution
from app.graphql.execution import JetExecutionContext
from app.graphql.schema import schema

DOCUMENTS = [
    ("{ __typename }", None, None),
    ("query Q @experimental_disableErrorPropagation { __typename }", None, None),
    (
        "query($f: MemoryEventFilter!) { memoryEvents(filter: $f) { edges { cursor } } }",
        None,
        {"f": {"scope": "ENTITY", "scopeRef": "x"}},
    ),  # fmt: skip
    ("query A { __typename } mutation B { __typename }", "B", None),
    ("{ ...F } fragment F on Query { __typename }", None, None),
]


def _comparable(value: Any) -> Any:
    if isinstance(value, RefMap):
        return ("RefMap", dict(value._map))
    if isinstance(value, CollectedErrors):
        return ("CollectedErrors", value._errors, value._error_positions)
    if isinstance(value, GraphQLResolveInfoHelpers):
        return ("helpers", value._fields)  # ours: closures made per executor
    return value


def _state(executor: Any) -> dict[str, Any]:
    return {name: _comparable(value) for name, value in vars(executor).items()}


@pytest.mark.parametrize("query,name,variables", DOCUMENTS)
@pytest.mark.parametrize("options", [
    (MiddlewareManager(), optimized_is_awaitable, None, False, None, None, None),
    (None, None, None, True, object(), object(), {"ext": 1}),
])  # fmt: skip
def test_create_sets_what_the_constructors_set(
    query: str, name: str | None, variables: Any, options: Any
) -> None:
    core = schema._schema
    document = parse(query)
    prepared = execution._prepare(core, document, name)
    assert prepared is not None
    values = prepared.variable_values(variables or {})
    assert values is not None
    middleware, is_awaitable, is_async_iterable, hide, abort, hooks, extensions = options
    execution._seen_operations.pop(id(prepared.operation), None)
    made = JetExecutionContext(
        core, dict(prepared.fragment_definitions), dict(prepared.fragments), "root", "ctx",
        prepared.operation, values, default_field_resolver, default_type_resolver,
        default_field_resolver, False, middleware, is_awaitable, is_async_iterable,
        hide_suggestions=hide, abort_signal=abort, hooks=hooks, operation_extensions=extensions,
    )  # fmt: skip
    execution._seen_operations.pop(id(prepared.operation), None)
    created = JetExecutionContext._create(
        prepared, "root", "ctx", values, middleware, is_awaitable, is_async_iterable, hide,
        abort, hooks, extensions,
    )  # fmt: skip
    assert type(created) is type(made)
    assert list(vars(created)) == list(vars(made)) or set(vars(created)) == set(vars(made))
    assert _state(created) == _state(made)
    assert created.error_propagation is ("ErrorPropagation" not in query)


def test_build_creates_only_where_it_is_the_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[Any] = []
    original = JetExecutionContext._create.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, *args: Any) -> Any:
        created.append(cls)
        return original(cls, *args)

    monkeypatch.setattr(JetExecutionContext, "_create", classmethod(counting))

    class OwnInit(JetExecutionContext):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.own = True

    document = parse("{ __typename }")

    def build(cls: Any, **overrides: Any) -> Any:
        arguments: dict[str, Any] = {
            "field_resolver": None, "middleware": MiddlewareManager(),
            "operation_extensions": None, **overrides,
        }  # fmt: skip
        return cls.build(schema._schema, document, None, None, None, None, **arguments)

    assert type(build(JetExecutionContext)) is JetExecutionContext
    assert created == [JetExecutionContext]
    assert build(OwnInit).own
    build(JetExecutionContext, field_resolver=default_field_resolver)
    with pytest.raises(TypeError, match="other_argument"):  # the constructors' own error
        build(JetExecutionContext, other_argument=1)
    build(JetExecutionContext, middleware=[])
    assert created == [JetExecutionContext]
    result = build(JetExecutionContext).execute_operation()
    assert result.data == {"__typename": "Query"}
