"""The fast path's extensions runner (app/graphql/fastpath/runner.py) does what stock
Strawberry does with the schema's extensions (app/graphql/extensions.py).

Every case runs two ways on a real tenant database: the fast schema (the policy runner)
and the stock schema (the fast path off). All a caller can see must be equal: the
result's class, data (as JSON text, key order included), errors (formatted: message,
locations, path, extensions) and extensions, or the exception raised (class, text,
cause); the operation noted for the metrics; which errors went through
`_process_errors`, in which order; what was logged; and the parse options and
validation rules the execution context was left with.
"""

import json
import logging
from typing import Any

import pytest
from strawberry.types.graphql import OperationType

from app.deps import Container
from app.graphql.fastpath import PolicySchema
from app.graphql.request_context import Context
from app.graphql.schema import build_schema
from app.services import events
from app.services.records import EventIn, Scope
from app.storage.tenants import TenantDb

EVENTS = """query($f: MemoryEventFilter!, $n: Int) { memoryEvents(filter: $f, first: $n) {
  edges { cursor node { id scope scopeRef kind body occurredAt compressedAt } }
  pageInfo { hasNextPage endCursor } } }"""
APPEND = """mutation Add($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i) {
  event { id } replayed errors { field code message } } }"""
QUERY, MUTATION = {OperationType.QUERY}, None

# (query, variables, operation name, allowed operation types, with a database)
CASES: list[tuple[Any, Any, Any, Any, bool]] = [
    ("{ __typename }", None, None, None, True),
    ("query Q { __typename }", None, None, None, True),
    ("query Q { __typename }", None, "Q", None, True),
    ("query Q { __typename } query R { __typename }", None, "R", None, True),
    ("query Q { __typename } query R { __typename }", None, None, None, True),  # which one?
    ("query Q { __typename }", None, "Nope", None, True),  # no such operation
    ("{ __typename", None, None, None, True),  # does not parse
    ("{ nope }", None, None, None, True),  # does not validate
    ("{ __schema { queryType { name } } }", None, None, None, True),
    ("", None, None, None, True),  # no query
    (None, None, None, None, True),
    ("mutation { __typename }", None, None, QUERY, True),  # not allowed (GET)
    ("{ __typename }", None, None, QUERY, True),
    (EVENTS, {"f": {"scope": "ENTITY", "scopeRef": "lean"}, "n": 2}, None, None, True),
    (EVENTS, {"f": {"scope": "ENTITY", "scopeRef": "lean"}, "n": -1}, None, None, True),
    (EVENTS, {"f": {"scope": "NOPE", "scopeRef": "lean"}}, None, None, True),  # variables
    (EVENTS, {}, None, None, True),
    (EVENTS, {"f": {"scope": "ENTITY", "scopeRef": "x"}}, None, None, False),  # masked
    (
        APPEND,
        {"i": {"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}},
        None,
        None,
        True,
    ),
    (
        APPEND,
        {"i": {"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}},
        None,
        QUERY,
        True,
    ),
    (
        APPEND,
        {"i": {"scope": "ENTITY", "scopeRef": "x", "kind": "k", "body": "b"}},
        None,
        None,
        False,
    ),
    (
        "{ a: __typename b: __typename c: __typename d: __typename e: __typename "
        "f: __typename g: __typename h: __typename i: __typename j: __typename "
        "k: __typename l: __typename m: __typename n: __typename o: __typename "
        "p: __typename q: __typename r: __typename s: __typename t: __typename "
        "u: __typename }",
        None,
        None,
        None,
        True,
    ),  # over the alias limit
]


def _seen(schema: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    processed: list[Any] = []
    original = schema._process_errors

    def process(errors: Any, execution_context: Any = None) -> None:
        processed.append([e.formatted for e in errors])
        original(errors, execution_context)

    monkeypatch.setattr(schema, "_process_errors", process)
    return processed


async def _outcome(
    schema: Any, case: Any, container: Container, db: TenantDb | None
) -> dict[str, Any]:
    query, variables, name, allowed, _ = case
    ctx = Context(container=container, db=db, request_id="fast-req")
    contexts: list[Any] = []
    create = schema._create_execution_context

    def keep(**kwargs: Any) -> Any:
        contexts.append(create(**kwargs))
        return contexts[-1]

    schema._create_execution_context = keep  # type: ignore[method-assign]
    try:
        result = await schema.execute(
            query,
            variable_values=variables,
            context_value=ctx,
            operation_name=name,
            allowed_operation_types=allowed,
        )
    except Exception as exc:
        outcome: dict[str, Any] = {
            "raised": (type(exc), str(exc), type(exc.__cause__), str(exc.__cause__))
        }
    else:
        outcome = {
            "class": type(result),
            "data": json.dumps(result.data),
            "errors": [e.formatted for e in result.errors or []],
            "extensions": result.extensions,
        }
    finally:
        del schema._create_execution_context
    (ec,) = contexts
    outcome["recorded"] = ctx.operation
    outcome["context"] = (
        type(ec.result),
        [e.formatted for e in ec.pre_execution_errors or []],
        ec.parse_options,
        ec.validation_rules,
        ec.graphql_document is not None,
    )
    return outcome


@pytest.fixture
async def seeded(db: TenantDb) -> TenantDb:
    batch = [
        EventIn(
            scope=Scope.ENTITY,
            scope_ref="lean",
            kind="note",
            body=f"b{n}",
            source="t",
            source_ref=None,
            occurred_at=None,
            idempotency_key=None,
        )
        for n in range(3)
    ]
    await events.append_events(db, batch, max_rows=100)
    return db


async def _run(
    schema: Any, case: Any, container: Container, db: Any, monkeypatch: Any, caplog: Any
) -> tuple[Any, Any, Any]:
    processed = _seen(schema, monkeypatch)
    with caplog.at_level(logging.ERROR, logger="app.graphql.schema"):
        outcome = await _outcome(schema, case, container, db)
        log = [(r.getMessage(), r.exc_info and type(r.exc_info[1])) for r in caplog.records]
        caplog.clear()
    return outcome, list(processed), log


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
async def test_fast_operations_are_strawberrys(
    case: Any,
    container: Container,
    seeded: TenantDb,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = seeded if case[4] else None
    fast_schema = build_schema(fast_path=True)
    assert isinstance(fast_schema, PolicySchema)
    stock_schema = build_schema(fast_path=False)
    assert not isinstance(stock_schema, PolicySchema)
    fast = await _run(fast_schema, case, container, db, monkeypatch, caplog)
    stock = await _run(stock_schema, case, container, db, monkeypatch, caplog)
    for key in ("raised", "class", "data", "errors", "extensions", "recorded"):
        assert fast[0].get(key) == stock[0].get(key), key
    # The rules are each schema's own classes (the limiters build them): names compared.
    fast_context, stock_context = fast[0]["context"], stock[0]["context"]
    assert fast_context[:3] == stock_context[:3] and fast_context[4] == stock_context[4]
    assert [r.__name__ for r in fast_context[3]] == [r.__name__ for r in stock_context[3]]
    assert fast[1:] == stock[1:]


async def test_unexpected_errors_are_masked_both_ways(container: Container) -> None:
    """The masked case above really is one (so the comparison covers masking)."""
    query, variables, name, allowed, _ = CASES[17]
    ctx = Context(container=container, db=None, request_id="fast-req")
    for schema in (build_schema(fast_path=True), build_schema(fast_path=False)):
        result = await schema.execute(query, variable_values=variables, context_value=ctx)
        assert result.errors is not None
        assert [e.formatted for e in result.errors] == [
            {
                "message": "Internal server error",
                "locations": [{"line": 1, "column": 42}],
                "path": ["memoryEvents"],
                "extensions": {"code": "INTERNAL_SERVER_ERROR", "requestId": "fast-req"},
            }
        ]
