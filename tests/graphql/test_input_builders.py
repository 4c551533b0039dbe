"""Input objects built by `_InputBuilder` (app/graphql/execution.py) are what Strawberry's
own `convert_argument` builds: every argument of every Query and Mutation field, with
fields given, omitted, null, lists, enums, nested inputs, compared with the conversion
done after taking the builders away."""

from datetime import UTC, datetime
from typing import Any

import pytest
import strawberry
from strawberry.relay import GlobalID
from strawberry.types.arguments import convert_arguments
from strawberry.types.base import StrawberryObjectDefinition

from app.graphql import execution
from app.graphql.schema import build_schema
from app.services.records import EntrySource, Scope

AT = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)

# (type name of the field holding the arguments, field's python name, arguments as
# graphql-core coerces them: keyed by GraphQL names, with the schema's defaults filled in)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("Mutation", "append_memory_event", {"input": {
        "scope": Scope.ENTITY, "scopeRef": "ref1", "kind": "note", "body": "b",
        "source": "bench", "sourceRef": "r1", "occurredAt": AT, "idempotencyKey": "k"}}),
    ("Mutation", "append_memory_event", {"input": {
        "scope": Scope.INSTITUTIONAL, "scopeRef": None, "kind": "note", "body": "b",
        "source": None, "sourceRef": None, "occurredAt": None, "idempotencyKey": None}}),
    ("Mutation", "append_memory_event", {"input": {  # fields left out altogether
        "scope": Scope.ENTITY, "kind": "note", "body": "b"}}),
    ("Mutation", "append_memory_events", {"input": [
        {"scope": Scope.ENTITY, "kind": "a", "body": "b", "scopeRef": "r"},
        {"scope": Scope.PROJECT, "kind": "c", "body": "d", "occurredAt": AT}]}),
    ("Mutation", "append_memory_events", {"input": []}),
    ("Mutation", "create_memory_entry", {"input": {
        "scope": Scope.ENTITY, "scopeRef": "r", "title": "t", "summary": "s",
        "tags": ["a", "b"], "importance": 4, "source": EntrySource.CHAT}}),
    ("Mutation", "create_memory_entry", {"input": {
        "scope": Scope.ENTITY, "title": "t", "summary": "s", "tags": None,
        "importance": None, "source": None}}),
    ("Mutation", "create_memory_entry", {"input": {
        "scope": Scope.ENTITY, "title": "t", "summary": "s"}}),
    ("Mutation", "update_memory_entry", {"id": "e1", "input": {
        "title": "x", "summary": None, "tags": [], "importance": 2, "expectedVersion": 3}}),
    ("Mutation", "update_memory_entry", {"id": "e1", "input": {}}),
    ("Mutation", "run_compaction", {"input": {"dryRun": True}}),
    ("Mutation", "run_compaction", {"input": None}),
    ("Mutation", "run_compaction", {}),
    ("Query", "memory_entries", {"filter": {
        "scope": Scope.ENTITY, "scopeRef": "r", "tags": ["a"], "search": "q",
        "minImportance": 2, "sources": [EntrySource.CHAT, EntrySource.MANUAL]},
        "first": 5, "after": "c"}),
    ("Query", "memory_entries", {"filter": None, "first": None, "after": None}),
    ("Query", "memory_entries", {"filter": {"tags": None, "sources": []}}),
    ("Query", "memory_events", {"filter": {
        "scope": Scope.ENTITY, "scopeRef": "big1", "kinds": ["a", "b"],
        "occurredAfter": AT, "occurredBefore": AT, "compressed": False, "search": "s"},
        "first": 50, "after": None}),
    ("Query", "memory_events", {"filter": {"kinds": None, "compressed": None}}),
    ("Query", "memory_context", {"scope": Scope.ENTITY, "scopeRef": None, "query": "q",
                                 "maxTokens": 100, "includeInstitutional": False}),
]  # fmt: skip


def _convert(schema: strawberry.Schema, type_name: str, field: str, value: Any) -> Any:
    definition = schema.get_type_by_name(type_name)
    assert isinstance(definition, StrawberryObjectDefinition)
    arguments = next(f for f in definition.fields if f.python_name == field).arguments
    return convert_arguments(
        value, arguments, schema.schema_converter.scalar_registry, schema.config, None
    )


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
    return build_schema()


def test_the_schemas_input_types_have_builders(schema: strawberry.Schema) -> None:
    names = {
        concrete.definition.name
        for concrete in schema.schema_converter.type_map.values()
        if isinstance(concrete.definition, StrawberryObjectDefinition)
        and isinstance(concrete.definition.from_input, execution._InputBuilder)
    }
    assert names == {
        "AppendMemoryEventInput", "CreateMemoryEntryInput", "UpdateMemoryEntryInput",
        "MemoryEntryFilter", "MemoryEventFilter", "RunCompactionInput",
    }  # fmt: skip


@pytest.mark.parametrize(("type_name", "field", "value"), CASES)
def test_builders_convert_as_strawberry_does(
    schema: strawberry.Schema,
    monkeypatch: pytest.MonkeyPatch,
    type_name: str,
    field: str,
    value: dict[str, Any],
) -> None:
    ours = _convert(schema, type_name, field, value)
    for concrete in schema.schema_converter.type_map.values():
        if isinstance(concrete.definition, StrawberryObjectDefinition):
            monkeypatch.setattr(concrete.definition, "from_input", None)
    theirs = _convert(schema, type_name, field, value)
    assert repr(ours) == repr(theirs)
    assert ours == theirs
    assert {k: type(v) for k, v in ours.items()} == {k: type(v) for k, v in theirs.items()}
    assert not set(_lists(ours)) & set(_lists(value))


def test_another_config_gets_its_own_names(schema: strawberry.Schema) -> None:
    # The builders are on the types, which another schema may use with other names.
    from strawberry.schema.config import StrawberryConfig

    from app.graphql.schema import Mutation

    other = strawberry.Schema(
        query=build_schema().query,  # type: ignore[attr-defined]
        mutation=Mutation,
        config=StrawberryConfig(auto_camel_case=False),
    )
    value = {"input": {"scope": Scope.ENTITY, "scope_ref": "r", "kind": "k", "body": "b"}}
    converted = _convert(other, "Mutation", "append_memory_event", value)
    assert converted["input"].scope_ref == "r"
    assert _convert(schema, "Mutation", "append_memory_event", value)["input"].scope_ref is None


@strawberry.input
class Inner:
    a: int
    b: str | None  # no default: None when left out
    tags: list[str] | None = None


@strawberry.input
class Outer:
    name: str | None
    inner: Inner | None = None
    inners: list[Inner | None] | None = None
    grid: list[list[int]] | None = None
    deep: list[list[Inner]] | None = None


@strawberry.input
class WithId:
    id: GlobalID | None = None
    inner: Inner | None = None


@strawberry.input
class WithMaybe:
    m: strawberry.Maybe[str]


@strawberry.type
class Shapes:
    @strawberry.field
    def outer(self, value: Outer, more: list[Outer] | None = None) -> int:
        return 0

    @strawberry.field
    def with_id(self, value: WithId) -> int:
        return 0

    @strawberry.field
    def with_maybe(self, value: WithMaybe | None = None) -> int:
        return 0


INNER = {"a": 1, "b": "x", "tags": ["t"]}
SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("outer", {"value": {"name": "n", "inner": INNER, "inners": [INNER, None, {"a": 2}],
                         "grid": [[1, 2], []], "deep": [[INNER], []]}}),
    ("outer", {"value": {}, "more": [{"inner": None, "inners": None}, {"name": None}]}),
    ("outer", {"value": {"inner": {"a": 3}}, "more": None}),
    ("with_id", {"value": {"id": "VHlwZTox", "inner": INNER}}),
    ("with_id", {"value": {}}),
    ("with_maybe", {"value": {"m": "x"}}),
    ("with_maybe", {}),
]  # fmt: skip


@pytest.mark.parametrize(("field", "value"), SHAPES)
def test_nested_inputs_lists_and_types_left_to_strawberry(
    monkeypatch: pytest.MonkeyPatch, field: str, value: dict[str, Any]
) -> None:
    schema = strawberry.Schema(Shapes)
    execution.install_input_builders(schema)
    builders = {
        concrete.definition.name
        for concrete in schema.schema_converter.type_map.values()
        if isinstance(concrete.definition, StrawberryObjectDefinition)
        and isinstance(concrete.definition.from_input, execution._InputBuilder)
    }
    assert builders == {"Inner", "Outer", "WithId"}  # WithMaybe keeps Strawberry's path
    ours = _convert(schema, "Shapes", field, value)
    for concrete in schema.schema_converter.type_map.values():
        if isinstance(concrete.definition, StrawberryObjectDefinition):
            monkeypatch.setattr(concrete.definition, "from_input", None)
    theirs = _convert(schema, "Shapes", field, value)
    assert repr(ours) == repr(theirs)
    assert ours == theirs
    assert not set(_lists(ours)) & set(_lists(value))
