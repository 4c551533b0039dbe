"""`JetSchema.execute`'s straight-line path (app/graphql/operation.py) does what
Strawberry's own `Schema.execute` does with the schema's extensions runner.

Every case runs through the same schema twice, `lean` on and off (off: Strawberry's
`execute` with `JetExtensionsRunner`), and compares all a caller can see: the result's
class, data (as JSON text, key order included), errors (formatted: message, locations,
path, extensions) and extensions, or the exception raised (class, text, cause); what the
operation recorded for the metrics; which errors went through `_process_errors`, in
which order; and the execution context Strawberry left behind (its result and errors).
"""

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from app.deps import Container
from app.edge.observe import OPERATION_STATE_KEY
from app.graphql import operation
from app.graphql.context import Context
from app.graphql.schema import JetSchema, build_schema
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
    (APPEND, {"i": {"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}}, None,
     None, True),  # fmt: skip
    (APPEND, {"i": {"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}}, None,
     QUERY, True),  # fmt: skip
    (APPEND, {"i": {"scope": "ENTITY", "scopeRef": "x", "kind": "k", "body": "b"}}, None,
     None, False),  # fmt: skip
    ("{ a: __typename b: __typename c: __typename d: __typename e: __typename "
     "f: __typename g: __typename h: __typename i: __typename j: __typename "
     "k: __typename l: __typename m: __typename n: __typename o: __typename "
     "p: __typename q: __typename r: __typename s: __typename t: __typename "
     "u: __typename }", None, None, None, True),  # over the alias limit
]  # fmt: skip


def _seen(schema: JetSchema, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    processed: list[Any] = []
    original = schema._process_errors

    def process(errors: Any, execution_context: Any = None) -> None:
        processed.append([e.formatted for e in errors])
        original(errors, execution_context)

    monkeypatch.setattr(schema, "_process_errors", process)
    return processed


async def _outcome(
    schema: JetSchema, case: Any, container: Container, db: TenantDb | None
) -> dict[str, Any]:
    query, variables, name, allowed, _ = case
    request = SimpleNamespace(scope={"state": {}})
    ctx = Context(container=container, db=db, request_id="lean-req", request=request)  # type: ignore[arg-type]
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
    except Exception as exc:  # noqa: BLE001 - compared
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
    outcome["recorded"] = request.scope["state"].get(OPERATION_STATE_KEY)
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
        EventIn(scope=Scope.ENTITY, scope_ref="lean", kind="note", body=f"b{n}", source="t",
                source_ref=None, occurred_at=None, idempotency_key=None)
        for n in range(3)
    ]  # fmt: skip
    await events.append_events(db, batch, max_rows=100)
    return db


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
async def test_lean_execute_is_strawberrys(
    case: Any,
    container: Container,
    seeded: TenantDb,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = build_schema()
    assert isinstance(schema, JetSchema) and schema.lean
    processed = _seen(schema, monkeypatch)
    db = seeded if case[4] else None
    with caplog.at_level(logging.ERROR, logger="app.graphql.schema"):
        lean = await _outcome(schema, case, container, db)
        lean_log = [(r.getMessage(), r.exc_info and type(r.exc_info[1])) for r in caplog.records]
        lean_processed = list(processed)
        caplog.clear()
        processed.clear()
        schema.lean = False
        general = await _outcome(schema, case, container, db)
        general_log = [(r.getMessage(), r.exc_info and type(r.exc_info[1])) for r in caplog.records]
    assert lean == general
    assert lean_processed == processed
    assert lean_log == general_log


async def test_unexpected_errors_are_masked_both_ways(container: Container) -> None:
    """The masked case above really is one (so the comparison covers masking)."""
    schema = build_schema()
    query, variables, name, allowed, _ = CASES[17]
    ctx = Context(container=container, db=None, request_id="lean-req")  # type: ignore[arg-type]
    for lean in (True, False):
        schema.lean = lean
        result = await schema.execute(query, variable_values=variables, context_value=ctx)
        assert result.errors is not None
        assert [e.formatted["message"] for e in result.errors] == ["Internal server error"]


class Noting(SchemaExtension):
    def on_operation(self) -> Any:
        yield


def test_lean_only_where_it_is_strawberrys() -> None:
    assert build_schema().lean
    assert build_schema(introspection=False).lean
    schema = build_schema()
    with_extension = JetSchema(
        query=schema.query,
        mutation=schema.mutation,
        extensions=[Noting],
        execution_context_class=schema.execution_context_class,
        policy=schema.policy,
    )
    assert not with_extension.lean

    class Handled(JetSchema):
        async def _handle_execution_result(self, *args: Any, **kwargs: Any) -> Any:
            return await super()._handle_execution_result(*args, **kwargs)

    handled = Handled(
        query=schema.query,
        mutation=schema.mutation,
        execution_context_class=schema.execution_context_class,
        policy=schema.policy,
    )
    assert not handled.lean
    plain_context = JetSchema(query=schema.query, mutation=schema.mutation, policy=schema.policy)
    assert not operation.lean_execution(plain_context, JetSchema.create_extensions_runner)
