"""execution.install_fast_resolvers: resolvers of fields with a resolver function answer as
Strawberry's own do (the application's schema is compared field by field in
test_object_shortcut.py, whose `app_diff` keeps Strawberry's resolvers on one side)."""

from enum import Enum
from typing import Any

import pytest
import strawberry
from strawberry.permission import BasePermission
from strawberry.relay import GlobalID
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types import Info

from app.graphql.execution import install_fast_resolvers, install_input_builders
from app.graphql.schema import build_schema


def _resolver_names(schema: Any) -> dict[str, str]:
    return {
        f"{t.name}.{name}": getattr(f.resolve, "__name__", "")
        for t in schema._schema.type_map.values()
        if type(t).__name__ == "GraphQLObjectType" and not t.name.startswith("__")
        for name, f in t.fields.items()
    }


def test_the_application_fields_with_resolvers_take_them() -> None:
    fast = _resolver_names(build_schema())
    slow = _resolver_names(build_schema(fast_resolvers=False))
    for field in (
        "Query.memoryEvents", "Query.memoryEntries", "Query.memoryEvent", "Query.memoryContext",
        "Mutation.appendMemoryEvent", "Mutation.appendMemoryEvents", "MemoryEvent.compressedInto",
        "MemoryEntry.sourceEvents",
    ):  # fmt: skip
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
    install_input_builders(schema)
    if fast:
        install_fast_resolvers(schema)
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
    ('{ syncArgs(o: {name: "n", colour: RED, inner: {n: 1}, inners: [{n: 2, tags: ["a"]}]}) }',
     None),
    ("query($o: Outer) { syncArgs(o: $o) }", {"o": {"name": "v", "inner": None}}),
    ("query($o: Outer) { syncArgs(o: $o) }", {}),
    ("query($os: [Outer]) { asyncArgs(os: $os, ids: [\"1\", \"2\"]) }",
     {"os": [{"name": "a", "inners": [{"n": 1, "tags": None}]}, None]}),
    ("{ asyncArgs(os: null) }", None),
    ('{ fails(o: {name: "x"}) a: syncArgs }', None),
    ("{ thing { name tagged t2: tagged(x: 5) method } }", None),
    ('{ gid(id: "VGhpbmc6MQ==") }', None),
    ('{ gid(id: "nonsense") }', None),
    ("{ guarded }", None),
]  # fmt: skip


@pytest.mark.parametrize(("query", "variables"), QUERIES)
async def test_answers_as_strawberry_does(query: str, variables: Any) -> None:
    ours = await _schema(True).execute(query, variable_values=variables)
    theirs = await _schema(False).execute(query, variable_values=variables)
    assert ours.data == theirs.data
    assert [e.formatted for e in ours.errors or []] == [e.formatted for e in theirs.errors or []]
    if "gid" not in query and "guarded" not in query and "fails" not in query:
        assert ours.errors is None, ours.errors
