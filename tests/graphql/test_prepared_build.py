"""The prepared build (app/graphql/fastpath/prepared.py): `PreparedExecutionContext.build`
builds what graphql-core's own `Executor.build` builds and leaves it every unusual case;
`create` sets the attributes the constructor chain sets, with the same values."""

import re
from typing import Any

import pytest
from graphql import (
    GraphQLResolveInfoHelpers,
    MiddlewareManager,
    build_schema,
    default_field_resolver,
    default_type_resolver,
    parse,
)
from graphql.execution.executor import CollectedErrors, Executor
from graphql.pyutils.ref_map import RefMap
from strawberry.execution import optimized_is_awaitable

from app.graphql.fastpath import prepared as prep
from app.graphql.fastpath.executor import seen_operations
from app.graphql.fastpath.prepared import PreparedExecutionContext, input_depth
from app.graphql.schema import build_schema as build_app_schema

SCHEMA = build_schema(
    """
    enum Colour { RED BLUE }
    input Inner { n: Int!, tags: [String!] = ["d"] }
    input Outer { name: String!, colour: Colour, inner: Inner, inners: [Inner] }
    input Tree { label: String, children: [Tree!] }
    type Query {
      echo(o: Outer, i: Int, s: String, t: Tree, ids: [ID!]): String
    }
    """
)

Q = "query($o: Outer, $i: Int, $s: String) { echo(o: $o, i: $i, s: $s) }"
CASES: list[tuple[str, str | None, dict[str, Any] | None, bool]] = [
    # (document, operation name, variables, whether the prepared path answers)
    (Q, None, {"o": {"name": "n", "colour": "RED", "inner": {"n": 1}}, "i": 3}, True),
    (Q, None, {"o": {"name": "n", "inners": [{"n": 1, "tags": None}, None]}}, True),
    (Q, None, {"o": None, "i": None}, True),
    (Q, None, {}, True),
    (Q, None, None, True),
    (Q, None, {"o": {"name": 5}}, False),  # not coercible: graphql-core's errors
    (Q, None, {"o": {"nme": "x"}}, False),
    (Q, None, {"i": "x", "s": 1}, False),
    ("query($o: Outer!) { echo(o: $o) }", None, {}, False),  # required, missing
    ("query($o: Outer!) { echo(o: $o) }", None, {"o": None}, False),
    ('query($s: String = "d") { echo(s: $s) }', None, {}, False),  # its default
    ('query($s: String = "d") { echo(s: $s) }', None, {"s": "given"}, True),
    ("query($t: Tree) { echo(t: $t) }", None, {"t": {"children": [{"label": "a"}]}}, False),
    ("query($ids: [ID!]) { echo(ids: $ids) }", None, {"ids": "1"}, True),
    ("query A { echo } query B { echo(i: 1) }", "B", None, True),
    ("query A { echo } query B { echo(i: 1) }", None, None, False),  # which one?
    ("query A { echo } query B { echo(i: 1) }", "C", None, False),
    ("{ ...F } fragment F on Query { echo }", None, None, True),
    ("query($x: Query) { echo }", None, {"x": 1}, False),  # not an input type
]


def _build(build: Any, document: Any, name: str | None, variables: Any) -> Any:
    return build(
        SCHEMA,
        document,
        None,
        None,
        variables,
        name,
        None,
        None,
        None,
        50,
        False,
        None,
        None,
        None,
        hide_suggestions=False,
        abort_signal=None,
        hooks=None,
    )


def _text(value: Any) -> str:
    # A variable's default (GraphQLDefaultInput, of its literal) is one object per
    # prepared document instead of one per request: compared without addresses.
    return re.sub(r" object at 0x[0-9a-f]+", "", repr(value))


def _summary(built: Any) -> Any:
    if isinstance(built, list):
        return [e.formatted for e in built]
    return (
        built.operation,
        _text(built.variable_values),
        built.fragment_definitions,
        repr(built.fragments),
        built.middleware_manager,
    )


CORE_BUILD = Executor.build.__func__  # type: ignore[attr-defined]  # graphql-core's own


@pytest.fixture
def core_builds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The arguments of every call of graphql-core's own build from now on."""
    calls: list[Any] = []

    def counted(cls: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return CORE_BUILD(cls, *args, **kwargs)

    monkeypatch.setattr(Executor, "build", classmethod(counted))
    return calls


@pytest.mark.parametrize(("query", "name", "variables", "prepared"), CASES)
def test_builds_what_graphql_core_builds(
    query: str, name: str | None, variables: Any, prepared: bool, core_builds: list[Any]
) -> None:
    document = parse(query)
    theirs = _build(CORE_BUILD.__get__(PreparedExecutionContext), document, name, variables)
    calls = core_builds
    for _ in range(2):  # prepared, then from the cache
        calls.clear()
        ours = _build(PreparedExecutionContext.build, document, name, variables)
        assert _summary(ours) == _summary(theirs)
        assert isinstance(ours, list) or type(ours) is PreparedExecutionContext
        assert (not calls) is prepared


def test_middleware_as_a_list_is_managed() -> None:
    document = parse("{ echo }")

    def middleware(next_: Any, root: Any, info: Any, **args: Any) -> Any:
        return next_(root, info, **args)

    ours = PreparedExecutionContext.build(SCHEMA, document, middleware=[middleware])
    assert not isinstance(ours, list)
    assert ours.middleware_manager is not None
    assert ours.middleware_manager.middlewares == (middleware,)


def test_a_middleware_manager_is_kept() -> None:
    manager = MiddlewareManager()  # what Strawberry passes, per request
    ours = PreparedExecutionContext.build(SCHEMA, parse("{ echo }"), middleware=manager)
    assert not isinstance(ours, list)
    assert ours.middleware_manager is manager


async def test_the_application_takes_it(core_builds: list[Any]) -> None:
    """Through Strawberry's Schema.execute (the variables coerced, no graphql-core build)."""
    from app.graphql.schema import build_schema

    schema = build_schema(fast_path=True)
    calls = core_builds
    query = "query($f: MemoryEventFilter!) { memoryEvents(filter: $f) { edges { cursor } } }"
    # No context: the resolver fails (no database), after the executor was built.
    result = await schema.execute(query, variable_values={"f": {"scope": "BOGUS"}})
    assert result.errors and "BOGUS" in result.errors[0].message and len(calls) == 1
    calls.clear()
    result = await schema.execute(query, variable_values={"f": {"scope": "ENTITY"}})
    assert result.errors and result.errors[0].path == ["memoryEvents"] and not calls


def test_input_depth() -> None:
    assert input_depth(SCHEMA.get_type("Outer"), ()) == 4  # inners: [Inner], tags: [String!]
    assert input_depth(SCHEMA.get_type("Tree"), ()) == float("inf")
    assert isinstance(prep.prepare(SCHEMA, parse("{ echo }"), None), prep.Prepared)
    assert prep.prepare(SCHEMA, parse("{ echo }"), "X") is None


FAST = build_app_schema(fast_path=True)

DOCUMENTS = [
    ("{ __typename }", None, None),
    ("query Q @experimental_disableErrorPropagation { __typename }", None, None),
    (
        "query($f: MemoryEventFilter!) { memoryEvents(filter: $f) { edges { cursor } } }",
        None,
        {"f": {"scope": "ENTITY", "scopeRef": "x"}},
    ),
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
@pytest.mark.parametrize(
    "options",
    [
        (MiddlewareManager(), optimized_is_awaitable, None, False, None, None, None),
        (None, None, None, True, object(), object(), {"ext": 1}),
    ],
)
def test_create_sets_what_the_constructors_set(
    query: str, name: str | None, variables: Any, options: Any
) -> None:
    core = FAST._schema
    document = parse(query)
    prepared = prep.prepare(core, document, name)
    assert prepared is not None
    values = prepared.variable_values(variables or {})
    assert values is not None
    middleware, is_awaitable, is_async_iterable, hide, abort, hooks, extensions = options
    seen_operations.pop(id(prepared.operation), None)
    made = PreparedExecutionContext(
        core,
        dict(prepared.fragment_definitions),
        dict(prepared.fragments),
        "root",
        "ctx",
        prepared.operation,
        values,
        default_field_resolver,
        default_type_resolver,
        default_field_resolver,
        False,
        middleware,
        is_awaitable,
        is_async_iterable,
        hide_suggestions=hide,
        abort_signal=abort,
        hooks=hooks,
        operation_extensions=extensions,
    )
    seen_operations.pop(id(prepared.operation), None)
    created = PreparedExecutionContext.create(
        prepared,
        "root",
        "ctx",
        values,
        middleware,
        is_awaitable,
        is_async_iterable,
        hide,
        abort,
        hooks,
        extensions,
    )
    assert type(created) is type(made)
    assert list(vars(created)) == list(vars(made)) or set(vars(created)) == set(vars(made))
    assert _state(created) == _state(made)
    assert created.error_propagation is ("ErrorPropagation" not in query)


def test_build_creates_only_where_it_is_the_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[Any] = []
    original = PreparedExecutionContext.create.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, *args: Any) -> Any:
        created.append(cls)
        return original(cls, *args)

    monkeypatch.setattr(PreparedExecutionContext, "create", classmethod(counting))

    class OwnInit(PreparedExecutionContext):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.own = True

    document = parse("{ __typename }")

    def build(cls: Any, **overrides: Any) -> Any:
        arguments: dict[str, Any] = {
            "field_resolver": None,
            "middleware": MiddlewareManager(),
            "operation_extensions": None,
            **overrides,
        }
        return cls.build(FAST._schema, document, None, None, None, None, **arguments)

    assert type(build(PreparedExecutionContext)) is PreparedExecutionContext
    assert created == [PreparedExecutionContext]
    assert build(OwnInit).own
    build(PreparedExecutionContext, field_resolver=default_field_resolver)
    with pytest.raises(TypeError, match="other_argument"):  # the constructors' own error
        build(PreparedExecutionContext, other_argument=1)
    build(PreparedExecutionContext, middleware=[])
    assert created == [PreparedExecutionContext]
    result = build(PreparedExecutionContext).execute_operation()
    assert result.data == {"__typename": "Query"}
