"""JetExecutionContext.build (the document's part prepared once, execution._Prepared) builds
what graphql-core's own `Executor.build` builds, and leaves it every unusual case."""

import re
from typing import Any

import pytest
from graphql import MiddlewareManager, build_schema, parse
from graphql.execution.executor import Executor

from app.graphql import execution
from app.graphql.execution import JetExecutionContext

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
        SCHEMA, document, None, None, variables, name, None, None, None, 50, False, None,
        None, None, hide_suggestions=False, abort_signal=None, hooks=None,
    )  # fmt: skip


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
    theirs = _build(CORE_BUILD.__get__(JetExecutionContext), document, name, variables)
    calls = core_builds
    for _ in range(2):  # prepared, then from the cache
        calls.clear()
        ours = _build(JetExecutionContext.build, document, name, variables)
        assert _summary(ours) == _summary(theirs)
        assert isinstance(ours, list) or type(ours) is JetExecutionContext
        assert (not calls) is prepared


def test_middleware_as_a_list_is_managed() -> None:
    document = parse("{ echo }")

    def middleware(next_: Any, root: Any, info: Any, **args: Any) -> Any:
        return next_(root, info, **args)

    ours = JetExecutionContext.build(SCHEMA, document, middleware=[middleware])
    assert not isinstance(ours, list)
    assert ours.middleware_manager is not None
    assert ours.middleware_manager.middlewares == (middleware,)


def test_a_middleware_manager_is_kept() -> None:
    manager = MiddlewareManager()  # what Strawberry passes, per request
    ours = JetExecutionContext.build(SCHEMA, parse("{ echo }"), middleware=manager)
    assert not isinstance(ours, list)
    assert ours.middleware_manager is manager


async def test_the_application_takes_it(core_builds: list[Any]) -> None:
    """Through Strawberry's Schema.execute (the variables coerced, no graphql-core build)."""
    from app.graphql.schema import build_schema

    schema = build_schema()
    calls = core_builds
    query = "query($f: MemoryEventFilter!) { memoryEvents(filter: $f) { edges { cursor } } }"
    # No context: the resolver fails (no database), after the executor was built.
    result = await schema.execute(query, variable_values={"f": {"scope": "BOGUS"}})
    assert result.errors and "BOGUS" in result.errors[0].message and len(calls) == 1
    calls.clear()
    result = await schema.execute(query, variable_values={"f": {"scope": "ENTITY"}})
    assert result.errors and result.errors[0].path == ["memoryEvents"] and not calls


def test_input_depth() -> None:
    assert (
        execution._input_depth(SCHEMA.get_type("Outer"), ()) == 4
    )  # inners: [Inner], tags: [String!]
    assert execution._input_depth(SCHEMA.get_type("Tree"), ()) == float("inf")
    assert isinstance(execution._prepare(SCHEMA, parse("{ echo }"), None), execution._Prepared)
    assert execution._prepare(SCHEMA, parse("{ echo }"), "X") is None
