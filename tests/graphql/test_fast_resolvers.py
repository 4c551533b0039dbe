"""The argument-converting resolvers (app/graphql/fastpath/resolvers.py) answer as
Strawberry's own do, their input converters build what Strawberry's `convert_arguments`
builds, and they are installed on the fast schema alone: a stock schema of the same types
in the same process keeps Strawberry's resolvers and conversion."""

from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest
import strawberry
from strawberry.permission import BasePermission
from strawberry.relay import GlobalID
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types import Info
from strawberry.types.arguments import convert_arguments
from strawberry.types.base import StrawberryObjectDefinition

from app.graphql.fastpath import resolvers
from app.graphql.schema import build_schema
from app.services.records import EntrySource, Scope


def _resolver_names(schema: Any) -> dict[str, str]:
    return {
        f"{t.name}.{name}": getattr(f.resolve, "__name__", "")
        for t in schema._schema.type_map.values()
        if type(t).__name__ == "GraphQLObjectType" and not t.name.startswith("__")
        for name, f in t.fields.items()
    }


def test_the_application_fields_with_resolvers_take_them() -> None:
    fast = _resolver_names(build_schema(fast_path=True))
    slow = _resolver_names(build_schema(fast_path=False))
    for field in (
        "Query.memoryEvents",
        "Query.memoryEntries",
        "Query.memoryEvent",
        "Query.memoryContext",
        "Mutation.appendMemoryEvent",
        "Mutation.appendMemoryEvents",
        "MemoryEvent.compressedInto",
        "MemoryEntry.sourceEvents",
    ):
        assert fast[field] == "resolve_async", field
        assert slow[field] == "_async_resolver", field


def test_strawberry_hooks_it_relies_on() -> None:
    # If these go, install_fast_resolvers must be revisited, not silently skipped.
    assert GraphQLCoreConverter.DEFINITION_BACKREF == "strawberry-definition"
    assert callable(GraphQLCoreConverter._get_field_exception_handlers)


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


StrawberryColour = strawberry.enum(Colour)


@strawberry.input
class Inner:
    n: int
    tags: list[str] | None = None


@strawberry.input
class Outer:
    name: str
    colour: StrawberryColour | None = None  # type: ignore[valid-type]
    inner: Inner | None = None
    inners: list[Inner] | None = None


class Never(BasePermission):
    message = "no"

    def has_permission(self, source: Any, info: Info, **kwargs: Any) -> bool:
        return False


def _describe(value: Any) -> str:
    return repr(value)


def sync_args(
    info: Info, o: Outer | None = None, first: int | None = 5, colour: Colour | None = None
) -> str:
    assert info.field_name == "syncArgs"
    return _describe((o, first, colour))


async def async_args(
    os: list[Outer | None] | None = None, ids: list[strawberry.ID] | None = None
) -> str:
    return _describe((os, ids))


async def fails(o: Outer) -> str:
    raise ValueError(f"failed with {o.name}")


def with_root(root: "Thing", x: int = 1) -> str:
    return f"{root.name}:{x}"


def gid(id: GlobalID) -> str:
    return f"{id.type_name}/{id.node_id}"


def guarded() -> str:
    return "secret"


@strawberry.type
class Thing:
    name: str
    tagged: str = strawberry.field(resolver=with_root)

    @strawberry.field
    def method(self, y: int = 2) -> str:  # a `self` parameter: Strawberry's resolver
        return f"{self.name}/{y}"


def thing() -> Thing:
    return Thing(name="t")


@strawberry.type
class Query:
    sync_args: str = strawberry.field(resolver=sync_args)
    async_args: str = strawberry.field(resolver=async_args)
    fails: str | None = strawberry.field(resolver=fails)
    thing: Thing = strawberry.field(resolver=thing)
    gid: str = strawberry.field(resolver=gid)
    guarded: str | None = strawberry.field(resolver=guarded, permission_classes=[Never])


def _schema(fast: bool) -> strawberry.Schema:
    schema = strawberry.Schema(query=Query)
    if fast:
        assert resolvers.install(schema) == 5
    return schema


def test_which_fields_take_them() -> None:
    names = _resolver_names(_schema(True))
    for field in ("Query.syncArgs", "Query.asyncArgs", "Query.fails", "Thing.tagged"):
        assert names[field].startswith("resolve_"), field
    # A GlobalID argument, a permission class (a field extension), a `self` parameter.
    for field in ("Query.gid", "Query.guarded", "Thing.method"):
        assert not names[field].startswith("resolve_"), field


QUERIES = [
    ("{ syncArgs }", None),
    ("{ syncArgs(first: null, colour: BLUE) }", None),
    (
        '{ syncArgs(o: {name: "n", colour: RED, inner: {n: 1}, inners: [{n: 2, tags: ["a"]}]}) }',
        None,
    ),
    ("query($o: Outer) { syncArgs(o: $o) }", {"o": {"name": "v", "inner": None}}),
    ("query($o: Outer) { syncArgs(o: $o) }", {}),
    (
        'query($os: [Outer]) { asyncArgs(os: $os, ids: ["1", "2"]) }',
        {"os": [{"name": "a", "inners": [{"n": 1, "tags": None}]}, None]},
    ),
    ("{ asyncArgs(os: null) }", None),
    ('{ fails(o: {name: "x"}) a: syncArgs }', None),
    ("{ thing { name tagged t2: tagged(x: 5) method } }", None),
    ('{ gid(id: "VGhpbmc6MQ==") }', None),
    ('{ gid(id: "nonsense") }', None),
    ("{ guarded }", None),
]


@pytest.mark.parametrize(("query", "variables"), QUERIES)
async def test_answers_as_strawberry_does(query: str, variables: Any) -> None:
    ours = await _schema(True).execute(query, variable_values=variables)
    theirs = await _schema(False).execute(query, variable_values=variables)
    assert ours.data == theirs.data
    assert [e.formatted for e in ours.errors or []] == [e.formatted for e in theirs.errors or []]
    if "gid" not in query and "guarded" not in query and "fails" not in query:
        assert ours.errors is None, ours.errors


AT = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)

# (type name of the field holding the arguments, field's python name, arguments as
# graphql-core coerces them: keyed by GraphQL names, with the schema's defaults filled in)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "Mutation",
        "append_memory_event",
        {
            "input": {
                "scope": Scope.ENTITY,
                "scopeRef": "ref1",
                "kind": "note",
                "body": "b",
                "source": "bench",
                "sourceRef": "r1",
                "occurredAt": AT,
                "idempotencyKey": "k",
            }
        },
    ),
    (
        "Mutation",
        "append_memory_event",
        {
            "input": {
                "scope": Scope.INSTITUTIONAL,
                "scopeRef": None,
                "kind": "note",
                "body": "b",
                "source": None,
                "sourceRef": None,
                "occurredAt": None,
                "idempotencyKey": None,
            }
        },
    ),
    (
        "Mutation",
        "append_memory_event",
        {
            "input": {  # fields left out altogether
                "scope": Scope.ENTITY,
                "kind": "note",
                "body": "b",
            }
        },
    ),
    (
        "Mutation",
        "append_memory_events",
        {
            "input": [
                {"scope": Scope.ENTITY, "kind": "a", "body": "b", "scopeRef": "r"},
                {"scope": Scope.PROJECT, "kind": "c", "body": "d", "occurredAt": AT},
            ]
        },
    ),
    ("Mutation", "append_memory_events", {"input": []}),
    (
        "Mutation",
        "create_memory_entry",
        {
            "input": {
                "scope": Scope.ENTITY,
                "scopeRef": "r",
                "title": "t",
                "summary": "s",
                "tags": ["a", "b"],
                "importance": 4,
                "source": EntrySource.CHAT,
            }
        },
    ),
    (
        "Mutation",
        "create_memory_entry",
        {
            "input": {
                "scope": Scope.ENTITY,
                "title": "t",
                "summary": "s",
                "tags": None,
                "importance": None,
                "source": None,
            }
        },
    ),
    (
        "Mutation",
        "create_memory_entry",
        {"input": {"scope": Scope.ENTITY, "title": "t", "summary": "s"}},
    ),
    (
        "Mutation",
        "update_memory_entry",
        {
            "id": "e1",
            "input": {
                "title": "x",
                "summary": None,
                "tags": [],
                "importance": 2,
                "expectedVersion": 3,
            },
        },
    ),
    ("Mutation", "update_memory_entry", {"id": "e1", "input": {}}),
    ("Mutation", "run_compaction", {"input": {"dryRun": True}}),
    ("Mutation", "run_compaction", {"input": None}),
    ("Mutation", "run_compaction", {}),
    (
        "Query",
        "memory_entries",
        {
            "filter": {
                "scope": Scope.ENTITY,
                "scopeRef": "r",
                "tags": ["a"],
                "search": "q",
                "minImportance": 2,
                "sources": [EntrySource.CHAT, EntrySource.MANUAL],
            },
            "first": 5,
            "after": "c",
        },
    ),
    ("Query", "memory_entries", {"filter": None, "first": None, "after": None}),
    ("Query", "memory_entries", {"filter": {"tags": None, "sources": []}}),
    (
        "Query",
        "memory_events",
        {
            "filter": {
                "scope": Scope.ENTITY,
                "scopeRef": "big1",
                "kinds": ["a", "b"],
                "occurredAfter": AT,
                "occurredBefore": AT,
                "compressed": False,
                "search": "s",
            },
            "first": 50,
            "after": None,
        },
    ),
    ("Query", "memory_events", {"filter": {"kinds": None, "compressed": None}}),
    (
        "Query",
        "memory_context",
        {
            "scope": Scope.ENTITY,
            "scopeRef": None,
            "query": "q",
            "maxTokens": 100,
            "includeInstitutional": False,
        },
    ),
]


def _arguments(schema: strawberry.Schema, type_name: str, field: str) -> Any:
    definition = schema.get_type_by_name(type_name)
    assert isinstance(definition, StrawberryObjectDefinition)
    return next(f for f in definition.fields if f.python_name == field).arguments


def _convert(schema: strawberry.Schema, type_name: str, field: str, value: Any) -> Any:
    """Strawberry's own conversion of a field's arguments."""
    arguments = _arguments(schema, type_name, field)
    return convert_arguments(
        value, arguments, schema.schema_converter.scalar_registry, schema.config, None
    )


def _ours(schema: strawberry.Schema, type_name: str, field: str, value: Any) -> Any:
    """The same with the converters of `resolvers.Converters`."""
    converters = resolvers.Converters(schema)
    converted: dict[str, Any] = {}
    for argument in _arguments(schema, type_name, field):
        name = schema.config.name_converter.from_argument(argument)
        if name in value:
            convert = converters.converter(argument.type)
            converted[argument.python_name] = (
                value[name] if convert is None else convert(value[name])
            )
    return converted


def _lists(value: Any) -> list[int]:
    """ids of the lists in a value, converted or not (a converted value must hold copies,
    not the input's own lists: graphql-core shares a default list between requests)."""
    if isinstance(value, list):
        return [id(value)] + [i for item in value for i in _lists(item)]
    if isinstance(value, dict):
        return [i for item in value.values() for i in _lists(item)]
    if hasattr(value, "__dataclass_fields__"):
        return [i for item in vars(value).values() for i in _lists(item)]
    return []


@pytest.fixture(scope="module")
def schema() -> strawberry.Schema:
    return build_schema(fast_path=True)


def test_the_schemas_input_types_have_converters(schema: strawberry.Schema) -> None:
    converters = resolvers.Converters(schema)
    names = set()
    for concrete in schema.schema_converter.type_map.values():
        definition = concrete.definition
        if isinstance(definition, StrawberryObjectDefinition) and definition.is_input:
            assert converters.converter(definition.origin) is not None
            names.add(definition.name)
    assert names == {
        "AppendMemoryEventInput",
        "CreateMemoryEntryInput",
        "UpdateMemoryEntryInput",
        "MemoryEntryFilter",
        "MemoryEventFilter",
        "RunCompactionInput",
        "RestoreMemoryEntryInput",
        "CreateWebhookEndpointInput",
        "UpdateWebhookEndpointInput",
    }
    # Strawberry's type definitions are left as they were.
    assert all(
        getattr(concrete.definition, "from_input", None) is None
        for concrete in schema.schema_converter.type_map.values()
    )


@pytest.mark.parametrize(("type_name", "field", "value"), CASES)
def test_converters_convert_as_strawberry_does(
    schema: strawberry.Schema, type_name: str, field: str, value: dict[str, Any]
) -> None:
    ours = _ours(schema, type_name, field, value)
    theirs = _convert(schema, type_name, field, value)
    assert repr(ours) == repr(theirs)
    assert ours == theirs
    assert {k: type(v) for k, v in ours.items()} == {k: type(v) for k, v in theirs.items()}
    assert not set(_lists(ours)) & set(_lists(value))


def test_another_config_gets_its_own_names(schema: strawberry.Schema) -> None:
    # The converters are the schema's: another schema may give the same types other names.
    from strawberry.schema.config import StrawberryConfig

    from app.graphql.schema import Mutation

    other = strawberry.Schema(
        query=build_schema(fast_path=True).query,  # type: ignore[attr-defined]
        mutation=Mutation,
        config=StrawberryConfig(auto_camel_case=False),
    )
    value = {"input": {"scope": Scope.ENTITY, "scope_ref": "r", "kind": "k", "body": "b"}}
    converted = _ours(other, "Mutation", "append_memory_event", value)
    assert converted["input"].scope_ref == "r"
    assert _ours(schema, "Mutation", "append_memory_event", value)["input"].scope_ref is None


@strawberry.input
class ShapeInner:
    a: int
    b: str | None  # no default: None when left out
    tags: list[str] | None = None


@strawberry.input
class ShapeOuter:
    name: str | None
    inner: ShapeInner | None = None
    inners: list[ShapeInner | None] | None = None
    grid: list[list[int]] | None = None
    deep: list[list[ShapeInner]] | None = None


@strawberry.input
class WithId:
    id: GlobalID | None = None
    inner: ShapeInner | None = None


@strawberry.input
class WithMaybe:
    m: strawberry.Maybe[str]


def outer(value: ShapeOuter, more: list[ShapeOuter] | None = None) -> int:
    return 0


def with_id(value: WithId) -> int:
    return 0


def with_maybe(value: WithMaybe | None = None) -> int:
    return 0


@strawberry.type
class Shapes:
    outer: int = strawberry.field(resolver=outer)
    with_id: int = strawberry.field(resolver=with_id)
    with_maybe: int = strawberry.field(resolver=with_maybe)


INNER = {"a": 1, "b": "x", "tags": ["t"]}
SHAPES: list[tuple[str, dict[str, Any]]] = [
    (
        "outer",
        {
            "value": {
                "name": "n",
                "inner": INNER,
                "inners": [INNER, None, {"a": 2}],
                "grid": [[1, 2], []],
                "deep": [[INNER], []],
            }
        },
    ),
    ("outer", {"value": {}, "more": [{"inner": None, "inners": None}, {"name": None}]}),
    ("outer", {"value": {"inner": {"a": 3}}, "more": None}),
    ("with_id", {"value": {"id": "VHlwZTox", "inner": INNER}}),
    ("with_id", {"value": {}}),
    ("with_maybe", {"value": {"m": "x"}}),
    ("with_maybe", {}),
]


@pytest.mark.parametrize(("field", "value"), SHAPES)
def test_nested_inputs_lists_and_types_left_to_strawberry(
    field: str, value: dict[str, Any]
) -> None:
    schema = strawberry.Schema(Shapes)
    # A GlobalID or a Maybe field keeps Strawberry's conversion (and resolver).
    names = {
        name: getattr(f.resolve, "__name__", "")
        for name, f in schema._schema.type_map["Shapes"].fields.items()
    }
    resolvers.install(schema)
    fast = {
        name: getattr(f.resolve, "__name__", "")
        for name, f in schema._schema.type_map["Shapes"].fields.items()
    }
    assert fast == {**names, "outer": "resolve_sync"}, fast
    assert names["withId"] == names["withMaybe"] == "_resolver"
    if field != "outer":
        return
    ours = _ours(schema, "Shapes", field, value)
    theirs = _convert(schema, "Shapes", field, value)
    assert repr(ours) == repr(theirs)
    assert ours == theirs
    assert not set(_lists(ours)) & set(_lists(value))


async def test_the_stock_schema_in_the_same_process_keeps_strawberrys_resolvers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from strawberry.schema import schema_converter

    first_fast = build_schema(fast_path=True)
    stock = build_schema(fast_path=False)
    fast = build_schema(fast_path=True)  # built after the stock one as well
    stock_names = _resolver_names(stock)
    assert stock_names["Mutation.appendMemoryEvent"] == "_async_resolver"
    assert not [n for n in stock_names.values() if n.startswith("resolve_")]
    assert _resolver_names(fast) == _resolver_names(first_fast)
    calls: list[Any] = []
    original = schema_converter.convert_arguments

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(schema_converter, "convert_arguments", counted)
    query = "query($f: MemoryEventFilter!) { memoryEvents(filter: $f) { edges { cursor } } }"
    variables = {"f": {"scope": "ENTITY", "scopeRef": "x"}}
    # No context: the resolver fails (no database) after its arguments were converted.
    theirs = await stock.execute(query, variable_values=variables)
    assert len(calls) == 1  # Strawberry's own resolver converted them
    ours = await fast.execute(query, variable_values=variables)
    assert len(calls) == 1  # the fast schema's resolver did, without Strawberry's code
    assert theirs.data == ours.data
    assert [e.formatted for e in theirs.errors or []] == [e.formatted for e in ours.errors or []]
