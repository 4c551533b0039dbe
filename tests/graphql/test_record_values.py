"""The service's records are the values of the GraphQL types (app/graphql/types.py).

That holds while (1) none of those types checks its values' class (no `is_type_of`, which
Strawberry gives only to types implementing an interface), (2) every field without a
resolver function is read as an attribute of the value by its Python name, and (3) each
record has every such attribute. These tests fail when the schema or a record changes so
that one of them no longer holds.
"""

import dataclasses
from typing import Any

import pytest
from strawberry.types.base import get_object_definition

from app.graphql import types
from app.graphql.fastpath.executor import getter
from app.graphql.schema import build_schema
from app.services.records import Edge, Entry, Event, Page

# GraphQL type → (the Strawberry class, the record class whose instances are served).
SERVED_BY = {
    "MemoryEvent": (types.MemoryEvent, Event),
    "MemoryEntry": (types.MemoryEntry, Entry),
    "MemoryEventEdge": (types.MemoryEventEdge, Edge),
    "MemoryEntryEdge": (types.MemoryEntryEdge, Edge),
    "PageInfo": (types.PageInfo, Page),
}


def _attributes(record: type) -> set[str]:
    names = {f.name for f in dataclasses.fields(record)}
    return names | {n for n, v in vars(record).items() if isinstance(v, property)}


@pytest.mark.parametrize("name", sorted(SERVED_BY))
def test_record_serves_the_type(name: str) -> None:
    schema = build_schema()
    cls, record = SERVED_BY[name]
    gql_type = schema._schema.type_map[name]
    assert gql_type.is_type_of is None  # type: ignore[union-attr]
    definition = get_object_definition(cls, strict=True)
    assert not definition.interfaces
    attributes = _attributes(record)
    plain = [f for f in definition.fields if f.base_resolver is None]
    assert plain, name
    for field in plain:
        assert field.python_name in attributes, (name, field.python_name)
        # Read by Strawberry's default resolver as an attribute (fastpath.plans.getter).
        graphql_name = schema.config.name_converter.from_field(field)
        resolve = gql_type.fields[graphql_name].resolve  # type: ignore[union-attr]
        assert getter(resolve).__class__.__name__ == "attrgetter", (name, graphql_name)


def test_of_returns_the_record() -> None:
    event: Any = object()
    assert types.MemoryEvent.of(event) is event
    assert types.MemoryEntry.of(event) is event
