"""The variable coercers compiled per variable definition (app/graphql/fastpath/prepared.py)
answer what graphql-core's `coerce_input_value` answers: the same value (types, key order and
`out_name`s included) or Undefined, for every input type of the schema and of a test
schema with what they leave to graphql-core (OneOf, recursion, defaults, out names,
custom out types), over generated values, valid and not."""

import random
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest
from graphql import (
    GraphQLArgument,
    GraphQLDefaultInput,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    Undefined,
    build_schema,
    is_input_type,
)
from graphql.utilities.coerce_input_value import coerce_input_value

from app.graphql.fastpath.prepared import coercer
from app.graphql.schema import schema

Tree = GraphQLInputObjectType(
    "Tree",
    lambda: {
        "label": GraphQLInputField(GraphQLString),
        "children": GraphQLInputField(GraphQLList(GraphQLNonNull(Tree))),
    },
)
Renamed = GraphQLInputObjectType(
    "Renamed",
    {
        "a": GraphQLInputField(GraphQLNonNull(GraphQLInt), out_name="a_out"),
        "b": GraphQLInputField(GraphQLString, default=GraphQLDefaultInput("dflt")),
        "c": GraphQLInputField(GraphQLList(GraphQLInt), default=GraphQLDefaultInput([1, 2])),
        "d": GraphQLInputField(GraphQLNonNull(GraphQLString), default=GraphQLDefaultInput("x")),
        "tree": GraphQLInputField(Tree),
    },
    out_type=lambda value: ("out", tuple(value.items())),
)
Colour = GraphQLEnumType("Colour", {"RED": "red", "BLUE": 2})
Choice = GraphQLInputObjectType(
    "Choice",
    {"x": GraphQLInputField(GraphQLInt), "y": GraphQLInputField(Colour)},
    is_one_of=True,
)
SDL = build_schema(
    """
    enum E { A B }
    input Inner { n: Int!, tags: [String!] = ["d"], e: [E] }
    input Outer { name: String!, inner: Inner, inners: [[Inner!]], f: Float, b: Boolean, id: ID }
    type Query { f(o: Outer): Int }
    """
)
_own = GraphQLSchema(
    GraphQLObjectType(
        "Query",
        {
            "f": GraphQLField(
                GraphQLInt, {"r": GraphQLArgument(Renamed), "c": GraphQLArgument(Choice)}
            )
        },
    )
)


def _input_types() -> list[Any]:
    types = [t for t in schema._schema.type_map.values() if is_input_type(t)]
    types += [SDL.type_map["Outer"], SDL.type_map["Inner"], Renamed, Tree, Choice, Colour]
    wrapped = []
    for t in types:
        wrapped += [t, GraphQLNonNull(t), GraphQLList(t), GraphQLNonNull(GraphQLList(t))]
    return [t for t in wrapped if not t.__class__.__name__.startswith("__")]


SCALARS: list[Any] = [
    None,
    Undefined,
    "",
    "s",
    "ENTITY",
    "TEAM",
    "MANUAL",
    "COMPACTOR",
    "A",
    "RED",
    "BLUE",
    "red",
    0,
    1,
    -1,
    2**31,
    -(2**31) - 1,
    2**40,
    1.0,
    1.5,
    float("nan"),
    True,
    False,
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00+02:00",
    "not a date",
    "12",
    12.0,
    datetime(2026, 1, 1, tzinfo=UTC),
    b"bytes",
    ("t",),
    {"k"},
]


VALID: dict[str, list[Any]] = {
    "String": ["", "s", "ünï ✓", "ENTITY"],
    "ID": ["id1", "42", 42],
    "Int": [0, 3, -7, 2**31 - 1],
    "Float": [0.5, 2, -1e10],
    "Boolean": [True, False],
    "DateTime": ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+02:00", "2026-01-01"],
}


def _value(rng: random.Random, type_: Any, depth: int = 0) -> Any:
    """A value for `type_`, often right, sometimes wrong anywhere."""
    if rng.random() < 0.03 or depth > 4:
        return rng.choice(SCALARS)
    if isinstance(type_, GraphQLNonNull):
        return _value(rng, type_.of_type, depth)
    if isinstance(type_, GraphQLList):
        if rng.random() < 0.15:
            return _value(rng, type_.of_type, depth + 1)  # a single value as a list
        items = [_value(rng, type_.of_type, depth + 1) for _ in range(rng.randrange(4))]
        return tuple(items) if rng.random() < 0.1 else items
    if isinstance(type_, GraphQLInputObjectType):
        value: dict[Any, Any] = {}
        for name, field in type_.fields.items():
            if rng.random() < 0.7:
                value[name] = _value(rng, field.type, depth + 1)
        if rng.random() < 0.1:
            value["unknown"] = 1
        if rng.random() < 0.1:
            value["unknownUndefined"] = Undefined
        if rng.random() < 0.3:
            items = list(value.items())
            rng.shuffle(items)
            value = dict(items)
        return value
    if isinstance(type_, GraphQLEnumType):
        return rng.choice([*type_.values, *type_.values, *type_.values, "NOPE", 1])
    valid = VALID.get(type_.name)
    if valid is not None and rng.random() < 0.9:
        return rng.choice(valid)
    return rng.choice(SCALARS)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a is b or a == b)


@pytest.mark.parametrize("type_", _input_types(), ids=str)
def test_coercer_is_coerce_input_value(type_: Any) -> None:
    coerce = coercer(type_, ())
    rng = random.Random(str(type_))
    answered = 0
    for _ in range(400):
        value = _value(rng, type_)
        try:
            expected: Any = ("value", coerce_input_value(value, type_))
        except Exception as exc:
            expected = ("raised", type(exc), str(exc))
        try:
            got: Any = ("value", coerce(value))
        except Exception as exc:
            got = ("raised", type(exc), str(exc))
        assert _same(got, expected), (type_, value)
        answered += got[0] == "value" and got[1] is not Undefined
    assert answered > 20  # the generator makes valid values too


def test_what_graphql_core_keeps() -> None:
    # OneOf input objects, recursive types and other iterables are graphql-core's.
    assert isinstance(coercer(Choice, ()), partial)
    tree = coercer(Tree, ())
    assert tree({"children": [{"label": "a"}]}) == coerce_input_value(
        {"children": [{"label": "a"}]}, Tree
    )
