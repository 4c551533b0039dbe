"""The prepared build and the argument-converting resolvers (app/graphql/fastpath/prepared.py,
resolvers.py) change nothing a client sees.

The same sequence of operations (appends, batches, entries, pages, search, context; valid
and not: bad variables, missing ones, defaults, literals, user errors) runs through the
schema with the fast path on, against one tenant database, and through the stock schema,
against another: data and errors (as JSON text, ids numbered by first appearance) must be
identical, and the short cuts must really have been taken on the fast side.
"""

import json
import re
from typing import Any

import pytest
import strawberry
from strawberry.schema import schema_converter

from app.deps import Container
from app.graphql.fastpath import prepared
from app.graphql.request_context import Context
from app.graphql.schema import build_schema
from tests.conftest import make_tenant

AT = "2026-03-01T12:30:00+00:00"
FIELDS = "id scope scopeRef kind body source sourceRef occurredAt compressedAt"
APPEND = f"""mutation($i: AppendMemoryEventInput!) {{ appendMemoryEvent(input: $i) {{
  event {{ {FIELDS} }} replayed errors {{ field code message }} }} }}"""
APPENDS = """mutation($i: [AppendMemoryEventInput!]!) { appendMemoryEvents(input: $i) {
  events { id kind body } errors { field code message } } }"""
CREATE = """mutation($i: CreateMemoryEntryInput!) { createMemoryEntry(input: $i) {
  entry { id title summary tags importance source scope scopeRef version }
  errors { field code message } } }"""
UPDATE = """mutation($id: ID!, $i: UpdateMemoryEntryInput!) { updateMemoryEntry(id: $id,
  input: $i) { entry { title tags importance version } errors { field code message } } }"""
EVENTS = f"""query($f: MemoryEventFilter, $n: Int, $a: String) {{
  memoryEvents(filter: $f, first: $n, after: $a) {{ edges {{ node {{ {FIELDS} }} }}
  pageInfo {{ hasNextPage }} }} }}"""
ENTRIES = """query($f: MemoryEntryFilter, $n: Int) { memoryEntries(filter: $f, first: $n) {
  edges { node { id title tags importance } } pageInfo { hasNextPage } } }"""
CONTEXT = """query($s: MemoryScope!, $r: String, $q: String, $m: Int) {
  memoryContext(scope: $s, scopeRef: $r, query: $q, maxTokens: $m) {
    markdown tokens truncated entries { id title } events { id kind body } } }"""


def _event(n: int, **more: Any) -> dict[str, Any]:
    return {
        "scope": "ENTITY",
        "scopeRef": "acme",
        "kind": "decision",
        "body": f"Acme decided on budget {n} ✓",
        "source": "inbox",
        "sourceRef": f"m{n}",
        "occurredAt": AT,
        **more,
    }


OPERATIONS: list[tuple[str, dict[str, Any] | None]] = [
    (APPEND, {"i": _event(1)}),
    (APPEND, {"i": _event(2, idempotencyKey="k2")}),
    (APPEND, {"i": _event(2, idempotencyKey="k2")}),  # replayed
    (APPEND, {"i": {"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}}),
    (APPEND, {"i": {"scope": "NOPE", "kind": "k", "body": "b"}}),  # not coercible
    (APPEND, {"i": {"scope": "ENTITY", "kind": "k", "body": "b", "extra": 1}}),
    (APPEND, {}),  # required, missing
    (APPEND, None),
    (APPEND, {"i": {"scope": "ENTITY", "scopeRef": "acme", "kind": "k", "body": "x" * 70000}}),
    (
        'mutation { appendMemoryEvent(input: {scope: PROJECT, scopeRef: "p", kind: "note", '
        'body: "literal", occurredAt: "2026-03-02T00:00:00Z"}) { event { kind body scope '
        "occurredAt } errors { field } } }",
        None,
    ),
    (APPENDS, {"i": [_event(n) for n in range(3, 6)]}),
    (APPENDS, {"i": [_event(6), {"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}]}),
    (APPENDS, {"i": []}),
    (
        CREATE,
        {
            "i": {
                "scope": "ENTITY",
                "scopeRef": "acme",
                "title": "Budget",
                "summary": "Acme's budget",
                "tags": ["budget", "acme"],
                "importance": 4,
            }
        },
    ),
    (
        CREATE,
        {
            "i": {
                "scope": "ENTITY",
                "scopeRef": "acme",
                "title": "Defaults",
                "summary": "left to the defaults",
            }
        },
    ),
    (CREATE, {"i": {"scope": "ENTITY", "title": "t", "summary": "s", "importance": 9}}),
    (UPDATE, {"id": "ent_nope", "i": {"title": "x"}}),
    (EVENTS, {"f": {"scope": "ENTITY", "scopeRef": "acme"}, "n": 3}),
    (EVENTS, {"f": {"scope": "ENTITY", "scopeRef": "acme", "kinds": ["decision"]}}),
    (EVENTS, {"f": {"search": "budget"}, "n": 5}),
    (EVENTS, {"f": None, "n": None}),
    (EVENTS, {"f": {"occurredAfter": "not a date"}}),
    (EVENTS, {"n": -1}),
    (EVENTS, {"a": "not a cursor"}),
    (ENTRIES, {"f": {"search": "budget acme"}}),
    (ENTRIES, {"f": {"tags": ["budget"], "minImportance": 2}, "n": 1}),
    (ENTRIES, {"f": {"sources": ["MANUAL", "NOPE"]}}),
    (CONTEXT, {"s": "ENTITY", "r": "acme", "q": "budget", "m": 500}),
    (CONTEXT, {"s": "ENTITY", "r": "acme", "m": None}),
    ('{ memoryEvent(id: "evt_nope") { id } memoryEntry(id: "ent_nope") { id } }', None),
]

_ID = re.compile(r"\b[a-z]{3}_[0-9a-z]{26}\b")


def _normalised(results: list[Any]) -> list[str]:
    """The results as JSON text, each id replaced by its order of first appearance."""
    ids: dict[str, str] = {}
    text = json.dumps(
        [(r.data, [e.formatted for e in r.errors or []]) for r in results], ensure_ascii=False
    )
    text = _ID.sub(lambda m: ids.setdefault(m.group(), f"ID{len(ids)}"), text)
    return [json.dumps(item) for item in json.loads(text)]


async def _run_all(schema: strawberry.Schema, container: Container, name: str) -> list[str]:
    tenant = await make_tenant(container, name)
    results = []
    async with container.tenants.lease(tenant.id) as db:
        for query, variables in OPERATIONS:
            for _ in range(2 if query is EVENTS else 1):  # the second from the caches
                ctx = Context(container=container, db=db, request_id="eq")
                results.append(
                    await schema.execute(query, variable_values=variables, context_value=ctx)
                )
    return _normalised(results)


async def test_fast_and_stock_schemas_answer_alike(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Any] = []
    create = prepared.PreparedExecutionContext.create.__func__  # type: ignore[attr-defined]

    def counted_create(cls: Any, *args: Any) -> Any:
        built.append(cls)
        return create(cls, *args)

    monkeypatch.setattr(prepared.PreparedExecutionContext, "create", classmethod(counted_create))
    converted: list[Any] = []
    convert = schema_converter.convert_arguments

    def counted_convert(*args: Any, **kwargs: Any) -> Any:
        converted.append(args)
        return convert(*args, **kwargs)

    monkeypatch.setattr(schema_converter, "convert_arguments", counted_convert)
    fast = await _run_all(build_schema(fast_path=True), container, "fast")
    assert len(built) > len(OPERATIONS) // 2  # the prepared build was taken...
    assert not converted  # ...and no field of the fast schema converted with Strawberry
    built.clear()
    stock = await _run_all(build_schema(fast_path=False), container, "stock")
    assert not built and converted
    assert len(fast) == len(stock)
    for n, (ours, theirs) in enumerate(zip(fast, stock, strict=True)):
        assert ours == theirs, n
    # The sequence covers both answers and errors.
    assert any('"errors": []' in r for r in fast) and any('"message"' in r for r in fast)
