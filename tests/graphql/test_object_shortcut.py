"""The executor short cut (app/graphql/fastpath/executor.py) changes nothing a client sees.

Every query runs twice: through the schema with the fast path on (with an execution
context that counts how many objects graphql-core's own path completed) and through the
schema with it off (stock Strawberry, graphql-core alone), on a real tenant database. The `data`
(compared as JSON text, so the order of the keys counts too) and the errors (message,
path, locations, extensions) must be identical, whatever the short cut did. The count
shows which path was taken: a selection the short cut should cover must be covered (else
these tests would compare graphql-core with itself), and one it must refuse (@include,
@skip, arguments, abstract types, middleware) must be refused.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

import pytest
import strawberry
from graphql import GraphQLResolveInfo, execute, parse
from strawberry.extensions import ParserCache, SchemaExtension
from strawberry.scalars import JSON
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.deps import Container
from app.graphql.extensions import CACHE_SIZE
from app.graphql.fastpath import executor
from app.graphql.fastpath.executor import PlannedExecutionContext
from app.graphql.request_context import Context
from app.graphql.schema import build_schema
from app.services import entries, events
from app.services.records import EntryIn, EntrySource, EventIn, Scope
from app.storage.tenants import TenantDb


class Counting(PlannedExecutionContext):
    """Counts the objects graphql-core's own path completes (`execute_fields` runs once
    for the operation's root and once for each object the short cut did not build)."""

    fields_executed = 0

    def execute_fields(self, *args: Any, **kwargs: Any) -> Any:
        Counting.fields_executed += 1
        return super().execute_fields(*args, **kwargs)


def _errors(result: Any) -> list[dict[str, Any]]:
    return [e.formatted for e in result.errors or []]


def _text(data: Any) -> str:
    return json.dumps(data, default=str)


@dataclass
class Diff:
    """The schema with the short cut and the same schema without it."""

    ours: strawberry.Schema
    theirs: strawberry.Schema
    make_context: Any = None

    async def run(self, query: str, **variables: Any) -> tuple[Any, int]:
        """(result, objects completed by graphql-core's own path) after checking that
        graphql-core alone answers exactly the same."""
        # Twice: the short cut is taken from an operation's second execution on.
        cold = await self.ours.execute(
            query, variable_values=variables, context_value=self._context()
        )
        Counting.fields_executed = 0
        ours = await self.ours.execute(
            query, variable_values=variables, context_value=self._context()
        )
        slow = Counting.fields_executed
        theirs = await self.theirs.execute(
            query, variable_values=variables, context_value=self._context()
        )
        for result in (cold, ours):
            assert _text(result.data) == _text(theirs.data)
            assert _errors(result) == _errors(theirs)
        return ours, slow

    def _context(self) -> Any:
        return None if self.make_context is None else self.make_context()


def _diff(schema_of: Any, make_context: Any = None, theirs_of: Any = None) -> Diff:
    ours, theirs = schema_of(), (theirs_of or schema_of)()
    ours.execution_context_class = Counting
    theirs.execution_context_class = StrawberryGraphQLCoreExecutionContext
    return Diff(ours, theirs, make_context)


# --- the application's schema, on a tenant database ---------------------------------------


@pytest.fixture
async def app_diff(container: Container, db: TenantDb) -> AsyncIterator[Diff]:
    at = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    old = datetime.now(UTC) - timedelta(days=120)
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
                occurred_at=at + timedelta(hours=i),
                idempotency_key=None,
            )
            for i in range(4)
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
        ]
        + [
            EventIn(
                scope=Scope.ENTITY,
                scope_ref="ent_old",
                kind="decision",
                body=f"Decision {i} on the budget.",
                occurred_at=old + timedelta(hours=i),
            )
            for i in range(3)
        ],
        max_rows=100,
    )
    for i in range(3):
        await entries.create_entry(
            db,
            EntryIn(
                scope=Scope.ENTITY,
                scope_ref="ent_acme",
                title=f"Budget {i}",
                summary="The Q3 budget was approved",
                tags=["budget", f"t{i}"],
                importance=2 + i,
                source=EntrySource.MANUAL,
            ),
        )
    diff = _diff(
        lambda: build_schema(fast_path=True),
        lambda: Context(container=container, db=db, request_id="r1"),
        lambda: build_schema(fast_path=False),
    )
    # One compaction: an entry with sourceEvents, events with compressedInto, a run.
    compacted = await diff.ours.execute(
        "mutation { runCompaction { run { id } errors { code } } }",
        context_value=diff.make_context(),
    )
    assert compacted.data and compacted.data["runCompaction"]["errors"] == []
    yield diff


EVENT = "id scope scopeRef kind body source sourceRef occurredAt recordedAt compressedAt"
ENTRY = "id scope scopeRef title summary tags importance source createdAt updatedAt version"

# Selections the short cut builds whole: graphql-core's own path runs only for the root.
COVERED = [
    # bench/asgi.py's events and search pages
    "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
    " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
    " compressedAt } } pageInfo { hasNextPage endCursor } } }",
    "query($s: MemoryEntryFilter!) { memoryEntries(filter: $s, first: 20) { edges {"
    " score node { id scope scopeRef title summary tags importance updatedAt } }"
    " pageInfo { hasNextPage endCursor } } }",
    # every field, __typename at every level, aliases (also of the same field twice)
    f"{{ memoryEvents {{ __typename edges {{ __typename cursor c2: cursor node {{ __typename"
    f" {EVENT} i: id b: body }} n: node {{ id }} }} p: pageInfo {{ __typename hasNextPage"
    f" endCursor }} }} }}",
    f"{{ memoryEntries {{ edges {{ score cursor node {{ {ENTRY} t: tags }} }}"
    f" pageInfo {{ hasNextPage endCursor }} }} }}",
    # named fragments, a fragment spread twice, inline fragments with and without a type,
    # fields merged from several selections of the same response key
    "query { memoryEvents(first: 3) { ...Conn edges { node { ...Ev ... on MemoryEvent { kind }"
    " ... { body } } } edges { node { ...Ev id } } } }"
    " fragment Conn on MemoryEventConnection { pageInfo { ...Page } edges { cursor } }"
    " fragment Page on PageInfo { endCursor hasNextPage }"
    " fragment Ev on MemoryEvent { id scopeRef ...Deeper }"
    " fragment Deeper on MemoryEvent { occurredAt ...Page2 }"
    " fragment Page2 on MemoryEvent { compressedAt }",
    # search, and a page that is empty
    '{ memoryEntries(filter: {search: "q3 budget approved"}) { edges { score node { id title'
    " } } } }",
    '{ memoryEvents(filter: {scopeRef: "nobody"}) { edges { cursor } pageInfo { endCursor'
    " hasNextPage } } }",
    # lists of objects and of leaves outside a connection
    f'{{ memoryContext(scope: ENTITY, scopeRef: "ent_acme") {{ markdown tokens truncated'
    f" entries {{ {ENTRY} }} events {{ {EVENT} }} }} }}",
    "{ compactionRuns { edges { cursor node { id status trigger dryRun startedAt finishedAt"
    " cutoff bucketsConsidered bucketsCompacted bucketsSkipped periods eventsCompressed"
    " promptTokens completionTokens budgetExceeded summariser problems } } } }",
]


@pytest.mark.parametrize("query", COVERED)
async def test_covered_selections_answer_as_graphql_core_does(app_diff: Diff, query: str) -> None:
    result, slow = await app_diff.run(
        query, f={"scope": "ENTITY", "scopeRef": "ent_acme"}, s={"search": "budget"}
    )
    assert result.errors is None
    assert slow == 1  # only the root: the short cut built every object


async def test_the_short_cut_really_answers(app_diff: Diff) -> None:
    result, _ = await app_diff.run(COVERED[2])
    page = result.data["memoryEvents"]
    assert page["__typename"] == "MemoryEventConnection"
    assert len(page["edges"]) == 8 and page["p"]["__typename"] == "PageInfo"
    edge = page["edges"][0]
    assert list(edge) == ["__typename", "cursor", "c2", "node", "n"]
    assert edge["c2"] == edge["cursor"] and edge["n"] == {"id": edge["node"]["id"]}
    node = edge["node"]
    assert node["i"] == node["id"] and node["b"] == node["body"]
    assert [e["node"]["scope"] for e in page["edges"]].count("INSTITUTIONAL") == 1
    institutional = next(e["node"] for e in page["edges"] if e["node"]["scopeRef"] is None)
    assert institutional["source"] is None and institutional["compressedAt"] is None


# Selections the short cut must leave (in part) to graphql-core.
REFUSED = [
    # a field with a resolver below: compressedInto, sourceEvents, entriesCreated
    f"{{ memoryEvents {{ edges {{ node {{ {EVENT} compressedInto {{ {ENTRY} }} }} }} }} }}",
    f"{{ memoryEntries {{ edges {{ node {{ {ENTRY} sourceEvents(first: 2) {{ edges {{ cursor"
    f" node {{ {EVENT} compressedInto {{ id }} }} }} pageInfo {{ hasNextPage }} }} }} }} }} }}",
    "{ compactionRuns { edges { node { id entriesCreated { id title tags } } } } }",
    # directives, whatever they say
    "query($yes: Boolean!, $no: Boolean!) { memoryEvents { edges { node { id"
    " body @include(if: $yes) kind @include(if: $no) source @skip(if: $yes)"
    " scopeRef @skip(if: $no) } } } }",
    "query($yes: Boolean!, $no: Boolean!) { memoryEvents { edges { node { id"
    " ... @include(if: $no) { body } ...Ev @skip(if: $yes) } } } }"
    " fragment Ev on MemoryEvent { kind }",
    "query($yes: Boolean!) { memoryEvents { edges @include(if: $yes) { cursor } pageInfo {"
    " hasNextPage @skip(if: $yes) endCursor } } }",
]


@pytest.mark.parametrize("query", REFUSED)
async def test_refused_selections_answer_as_graphql_core_does(app_diff: Diff, query: str) -> None:
    result, slow = await app_diff.run(query, yes=True, no=False)
    assert result.errors is None
    assert slow > 1


async def test_query_errors_and_nulls_answer_as_graphql_core_does(app_diff: Diff) -> None:
    for query in [
        '{ memoryEvents(after: "nonsense") { edges { cursor } } }',
        "{ memoryEvents(first: -1) { edges { cursor } } }",
        "{ memoryEntries(filter: {minImportance: 9}) { edges { cursor } } }",
        '{ memoryEvent(id: "nope") { id } memoryEntry(id: "nope") { id } }',
        "{ memoryContext(scope: ENTITY, maxTokens: -5) { markdown } }",
    ]:
        await app_diff.run(query)
    page, _ = await app_diff.run("{ memoryEvents { edges { node { id } } } }")
    some = page.data["memoryEvents"]["edges"][0]["node"]["id"]
    one, slow = await app_diff.run(
        f"query($id: ID!) {{ memoryEvent(id: $id) {{ {EVENT} }}"
        " e: memoryEvent(id: $id) { id } }",
        id=some,
    )
    assert one.data["memoryEvent"]["id"] == some and slow == 1


async def test_mutation_payloads_answer_as_graphql_core_does(app_diff: Diff) -> None:
    payload = f"event {{ {EVENT} }} replayed errors {{ __typename field code message }}"
    append = (
        f"mutation($i: AppendMemoryEventInput!) {{ appendMemoryEvent(input: $i) {{ {payload} }} }}"
    )
    bad = {"scope": "ENTITY", "scopeRef": "ent_acme", "kind": "", "body": ""}
    refused, slow = await app_diff.run(append, i=bad)
    # a mutation's root fields run one after another (not execute_fields): 0 is all built
    assert refused.data["appendMemoryEvent"]["errors"] and slow == 0
    keyed = {
        "scope": "ENTITY",
        "scopeRef": "ent_acme",
        "kind": "note",
        "body": "x",
        "idempotencyKey": "k1",
    }
    stored = await app_diff.ours.execute(
        append, variable_values={"i": keyed}, context_value=app_diff.make_context()
    )
    assert stored.data and stored.data["appendMemoryEvent"]["replayed"] is False
    replayed, slow = await app_diff.run(append, i=keyed)
    assert replayed.data["appendMemoryEvent"]["replayed"] is True and slow == 0
    many = (
        "mutation($i: [AppendMemoryEventInput!]!) { appendMemoryEvents(input: $i) {"
        " events { id body } errors { field code message } } }"
    )
    await app_diff.run(many, i=[keyed, bad])
    create = (
        "mutation($i: CreateMemoryEntryInput!) { createMemoryEntry(input: $i) {"
        f" entry {{ {ENTRY} }} errors {{ field code message }} }} }}"
    )
    await app_diff.run(
        create,
        i={"scope": "ENTITY", "scopeRef": "x", "title": "t", "summary": "s", "importance": 9},
    )
    update = (
        "mutation($id: ID!, $i: UpdateMemoryEntryInput!) { updateMemoryEntry(id: $id, input: $i)"
        f" {{ entry {{ {ENTRY} }} errors {{ field code message }} }} }}"
    )
    await app_diff.run(update, id="nope", i={"title": "x"})
    listed, _ = await app_diff.run("{ memoryEntries { edges { node { id version } } } }")
    entry = listed.data["memoryEntries"]["edges"][0]["node"]
    stale, _ = await app_diff.run(update, id=entry["id"], i={"title": "y", "expectedVersion": 99})
    assert stale.data["updateMemoryEntry"]["errors"]
    await app_diff.run(
        'mutation { deleteMemoryEntry(id: "nope") { deletedId errors { field code message } } }'
    )


# --- values graphql-core refuses, null propagation, types the short cut cannot plan --------


class Colour(Enum):
    RED = "red"


StrawberryColour = strawberry.enum(Colour)


@strawberry.type
class Leaf:
    name: str
    nickname: str | None
    colour: StrawberryColour  # type: ignore[valid-type]
    when: datetime
    count: int
    tags: list[str]
    grid: list[list[int | None]] | None
    extra: JSON | None  # a scalar that takes any value as it is
    flag: bool = True


@strawberry.type
class Box:
    label: str
    leaf: Leaf
    maybe: Leaf | None
    leaves: list[Leaf | None]
    strict: list[Leaf]


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Pet(Named):
    legs: int


@strawberry.type
class Rock(Named):
    weight: float


@dataclass
class FakePet:
    """Has a Pet's fields, but is no Pet: Pet's is_type_of refuses it."""

    name: str
    legs: int


class Exploding:
    """An object whose attribute read raises (a Leaf by its fields)."""

    nickname = None
    colour = Colour.RED
    when = datetime(2026, 1, 1)
    count = 1
    tags: list[str] = []
    grid = None
    extra = None
    flag = False

    @property
    def name(self) -> str:
        raise ValueError("boom")


class Later:
    """An awaitable attribute value (graphql-core awaits it; the short cut must not
    build a response from it). Its coroutine is made only when awaited."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        async def value() -> Any:
            return self.value

        return value().__await__()


@dataclass(slots=True)
class SlotLeaf:
    """A Leaf by its fields, of a class without instance dicts: known not awaitable."""

    name: str = "slot"
    nickname: str | None = None
    colour: Colour = Colour.RED
    when: datetime = datetime(2026, 1, 1)
    count: int = 1
    tags: list[str] = field(default_factory=lambda: ["t"])
    grid: Any = None
    extra: Any = None
    flag: bool = True


class SlotLater:
    """Awaitable, without an instance dict."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        async def value() -> Any:
            return self.value

        return value().__await__()


class SlotError(ValueError):
    __slots__ = ()


class LaterDate(datetime):
    """A datetime that is also awaitable (to another datetime)."""

    def __await__(self) -> Any:
        async def value() -> Any:
            return datetime(2027, 1, 1)

        return value().__await__()


class Odd:
    """A Leaf by its fields whose instances differ: one has an `__await__` of its own,
    which graphql-core's is_awaitable sees (and then fails to await)."""

    nickname = None
    colour = Colour.RED
    when = datetime(2026, 1, 1)
    count = 1
    tags: list[str] = []
    grid = None
    extra = None
    flag = False

    def __init__(self, name: str, awaitable: bool = False) -> None:
        self.name = name
        if awaitable:
            self.__await__ = lambda: iter(())


def leaf(**changes: Any) -> Any:
    fields: dict[str, Any] = {
        "name": "a",
        "nickname": None,
        "colour": Colour.RED,
        "when": datetime(2026, 1, 1),
        "count": 1,
        "tags": ["x", "y"],
        "grid": [[1, None], [], [3]],
        "extra": {"k": [1]},
    }
    fields.update(changes)
    return Leaf(**fields)


def box(case: str) -> Any:
    good = {
        "label": "l",
        "leaf": leaf(),
        "maybe": None,
        "leaves": [leaf(), None],
        "strict": [leaf(name="s")],
    }
    changed: dict[str, Any] = {
        "good": {},
        "null_leaf_name": {"leaf": leaf(name=None)},
        "null_nullable": {"leaf": leaf(nickname=None, grid=None), "maybe": None},
        "null_in_strict_list": {"strict": [leaf(), None]},
        "null_in_list": {"leaves": [None, leaf(), None]},
        "null_in_leaf_list": {"leaf": leaf(tags=["a", None])},
        "null_in_grid": {"leaf": leaf(grid=[[None], None])},
        "raises": {"leaf": Exploding()},
        "raises_in_list": {"leaves": [leaf(), Exploding()]},
        "bad_enum": {"maybe": leaf(colour="blue")},
        "bad_date": {"leaves": [leaf(when="x")]},
        "big_int": {"leaf": leaf(count=2**40)},
        "bad_tag": {"leaf": leaf(tags=["a", object()])},
        "awaitable": {"leaf": leaf(nickname=Later("n"), tags=[Later("t")])},
        "awaitable_object": {"maybe": Later(leaf(name="later"))},
        "not_a_list": {"leaves": 5},
        "generator": {"leaves": (x for x in [leaf(name="g")])},
        "exception_value": {"maybe": ValueError("a value, not raised")},
        "exception_leaf": {"leaf": leaf(nickname=ValueError("nick"))},
        "null_label": {"label": None},
        "null_object": {"leaf": None},
        "null_object_list": {"strict": None},
        "awaitable_null": {"maybe": Later(None)},
        "awaitable_json": {"leaf": leaf(extra=Later(5))},
        "exception_json": {"leaf": leaf(extra=ValueError("json"))},
        "int_flag": {"leaf": leaf(flag=1), "leaves": [leaf(flag=0), leaf(flag=2.5)]},
        "slotted": {"leaf": SlotLeaf(tags=["s"]), "leaves": [SlotLeaf(), None, leaf()]},
        "awaitable_slotted": {"maybe": SlotLater(SlotLeaf()), "leaves": [SlotLater(None)]},
        "exception_date": {"leaf": leaf(when=SlotError("x")), "maybe": SlotError("m")},
        "awaitable_date": {"leaf": leaf(when=LaterDate(2026, 1, 1))},
        "awaitable_json_slotted": {"leaf": leaf(extra=SlotLater(5))},
        "instance_await": {"leaves": [Odd("a"), Odd("b", awaitable=True), Odd("c")]},
    }[case]
    return Box(**{**good, **changed})


CASES = [
    "good",
    "null_leaf_name",
    "null_nullable",
    "null_in_strict_list",
    "null_in_list",
    "null_in_leaf_list",
    "null_in_grid",
    "raises",
    "raises_in_list",
    "bad_enum",
    "bad_date",
    "big_int",
    "bad_tag",
    "awaitable",
    "awaitable_object",
    "not_a_list",
    "generator",
    "exception_value",
    "exception_leaf",
    "null_label",
    "null_object",
    "null_object_list",
    "awaitable_null",
    "awaitable_json",
    "exception_json",
    "int_flag",
    "slotted",
    "awaitable_slotted",
    "exception_date",
    "awaitable_date",
    "awaitable_json_slotted",
    "instance_await",
]


@strawberry.type
class Query:
    @strawberry.field
    def boxes(self, case: str) -> list[Box | None]:
        return [box("good"), box(case), box("good")]

    @strawberry.field
    def box(self, case: str) -> Box | None:
        return box(case)

    @strawberry.field
    def strict_box(self, case: str) -> Box:
        return box(case)

    @strawberry.field
    async def later_box(self, case: str) -> Box | None:
        await asyncio.sleep(0)
        return box(case)

    @strawberry.field
    def pets(self) -> list[Pet]:
        return [Pet(name="rex", legs=4)]

    @strawberry.field
    def wrong_pet(self) -> Pet | None:
        return FakePet(name="fake", legs=3)  # type: ignore[return-value]

    @strawberry.field
    def named(self) -> list[Named]:
        return [Pet(name="rex", legs=4), Rock(name="r", weight=1.5)]


BOX = """
query($c: String!) {
  boxes(case: $c) { ...B }
  box(case: $c) { __typename ...B alias: label }
  laterBox(case: $c) { l: label leaves { name } }
  typenames: box(case: $c) { maybe { __typename } strict { __typename } }
}
fragment B on Box {
  __typename label leaf { ...L } maybe { ...L } leaves { ...L } strict { name }
  l2: leaf { n: name c: count } m2: maybe { __typename }
}
fragment L on Leaf { __typename name nickname colour when count tags grid extra flag }
"""


def _test_schema(**kwargs: Any) -> strawberry.Schema:
    # With the parse cache: the same query text, the same document (and so its plans).
    extensions = [lambda: ParserCache(maxsize=CACHE_SIZE), *kwargs.pop("extensions", ())]
    return strawberry.Schema(query=Query, types=[Rock], extensions=extensions, **kwargs)


@pytest.fixture(scope="module")
def test_diff() -> Diff:
    return _diff(_test_schema)


def test_plain_classes() -> None:
    """Classes whose instances the compiled plans take as neither exceptions nor
    awaitables without asking (plans._is_plain_class)."""
    from app.services.records import Edge, Event

    class Spoof:
        __slots__ = ()
        __class__ = ValueError  # type: ignore[assignment]

    class Getattr:
        __slots__ = ()

        def __getattr__(self, name: str) -> Any:
            return None

    for cls in (Event, Edge, SlotLeaf, datetime, str, int):
        assert executor._is_plain_class(cls), cls
    for cls in (
        type(None),
        SlotLater,
        SlotError,
        ValueError,
        LaterDate,
        Odd,
        Leaf,
        Later,
        Spoof,
        Getattr,
        type(x for x in ()),
    ):
        assert not executor._is_plain_class(cls), cls


@pytest.mark.parametrize("case", CASES)
async def test_unusual_values_answer_as_graphql_core_does(test_diff: Diff, case: str) -> None:
    result, slow = await test_diff.run(BOX, c=case)
    if case in ("good", "null_nullable", "null_in_list", "int_flag", "slotted"):
        assert result.errors is None and slow == 1  # the short cut built it all
    else:
        assert slow > 1  # graphql-core's own path completed (and reported) it
    if case in (
        "awaitable",
        "awaitable_object",
        "generator",
        "awaitable_null",
        "awaitable_json",
        "awaitable_slotted",
        "awaitable_date",
        "awaitable_json_slotted",
    ):
        assert result.errors is None


@pytest.mark.parametrize("case", ["good", "null_leaf_name", "null_in_strict_list", "raises"])
async def test_null_propagates_to_the_root_as_graphql_core_does(test_diff: Diff, case: str) -> None:
    result, _ = await test_diff.run(
        "query($c: String!) { strictBox(case: $c) { leaf { name } strict { name } } }", c=case
    )
    assert (result.data is None) == (case != "good")


async def test_types_with_is_type_of_and_abstract_types(test_diff: Diff) -> None:
    pets, slow = await test_diff.run("{ pets { __typename name legs } }")
    assert pets.data == {"pets": [{"__typename": "Pet", "name": "rex", "legs": 4}]}
    assert slow == 1  # Pet's is_type_of (it implements Named) is checked by the short cut
    wrong, _ = await test_diff.run("{ wrongPet { name legs } }")
    assert wrong.errors and "Expected value of type 'Pet'" in wrong.errors[0].message
    named, slow = await test_diff.run(
        "{ named { __typename name ... on Pet { legs } ... on Rock { weight } } }"
    )
    # graphql-core resolves the runtime type of each item, the short cut builds the objects
    assert named.errors is None and slow == 1


async def test_middleware_turns_the_short_cut_off() -> None:
    class Shout(SchemaExtension):
        def resolve(self, _next: Any, root: Any, info: GraphQLResolveInfo, **kw: Any) -> Any:
            value = _next(root, info, **kw)
            return value.upper() if isinstance(value, str) else value

    def schema() -> strawberry.Schema:
        return _test_schema(extensions=[Shout])

    result, _ = await _diff(schema).run('query { box(case: "good") { label leaf { name tags } } }')
    assert result.data == {"box": {"label": "L", "leaf": {"name": "A", "tags": ["x", "y"]}}}


async def test_an_operation_is_planned_at_its_second_execution(test_diff: Diff) -> None:
    query = 'query { box(case: "good") { label leaf { name } } }'
    document = parse(query)
    counts = []
    for _ in range(3):
        Counting.fields_executed = 0
        result = execute(test_diff.ours._schema, document, executor_class=Counting)
        assert result.data == {"box": {"label": "l", "leaf": {"name": "a"}}}
        counts.append(Counting.fields_executed)
    assert counts == [3, 1, 1]  # root, Box, Leaf; then the root only
    # The same text parsed again is another operation: graphql-core's path first.
    Counting.fields_executed = 0
    execute(test_diff.ours._schema, parse(query), executor_class=Counting)
    assert Counting.fields_executed == 3


def test_plans_are_bounded_and_kept_with_their_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.graphql.fastpath import executor

    monkeypatch.setattr(executor, "PLAN_CACHE_SIZE", 3)
    monkeypatch.setattr(executor, "object_plans", {})
    schema = _test_schema(execution_context_class=PlannedExecutionContext)
    for i in range(10):
        for _ in range(2):  # planned at the second execution
            result = schema.execute_sync(f'{{ box(case: "good") {{ a{i}: label }} }}')
            assert result.data == {"box": {f"a{i}": "l"}}
        assert 1 <= len(executor.object_plans) <= 3
    for (type_, _is_awaitable, *ids), (nodes, _plan) in executor.object_plans.items():
        assert type_.name == "Box" and ids == [id(node) for node in nodes]
