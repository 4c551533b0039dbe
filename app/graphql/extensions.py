"""The schema's per-operation work, as one Strawberry extension instead of five.

Strawberry builds every extension anew for each operation and wraps each of its hooks in
a context manager (inspect, contextlib, functools.update_wrapper per hook, per request):
with MaxTokensLimiter, AddValidationRules, ParserCache, ValidationCache and MaskErrors
that bookkeeping cost more than the `{ __typename }` operation itself. `JetOperation`
does what those five did, with the same caches and results, in three hooks:

- on_operation: the token limit for the parser and the depth/alias rules for validation;
  after the operation, masks unexpected errors (with the request id) and records the
  operation's name and type for the HTTP metrics (`record_operation`).
- on_parse: the parse cache (graphql-core's `parse`, keyed by query text and options).
- on_validate: the validation cache (keyed by schema, document and rules; the rule
  tuple is built once per schema, so it hits).
"""

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from graphql import ASTValidationRule, GraphQLError, parse
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

from app.edge.observe import OPERATION_STATE_KEY, operation_type
from app.edge.unavailable import graphql_extensions
from app.storage.unavailable import TenantUnavailable

CACHE_SIZE = 1024
MASKED_MESSAGE = "Internal server error"

# Module level, shared by every request (as ParserCache's and ValidationCache's are).
# lru_cache does not cache exceptions: a document that fails to parse is parsed again.
cached_parse = lru_cache(maxsize=CACHE_SIZE)(parse)
cached_validate = lru_cache(maxsize=CACHE_SIZE)(validate_document)


def mask(error: GraphQLError, request_id: str | None) -> GraphQLError:
    """What MaskErrors.anonymise_error returns, plus a code and the request id to quote.

    A tenant database that is locked, corrupt or full is named, not masked.
    """
    masked = GraphQLError(
        message=MASKED_MESSAGE,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
    )
    masked.extensions = {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id}
    if isinstance(error.original_error, TenantUnavailable):
        masked.message = error.original_error.message
        masked.extensions = graphql_extensions(error.original_error, request_id)
    return masked


def operation_of(execution_context: Any) -> tuple[str | None, str]:
    """(name, type) of the operation an execution context ran (or tried to run).

    The name is the one the request gave, else the document's first operation's (so a
    named operation sent without operationName is labelled by its name). A document that
    did not parse is read token by token (app/edge/observe.py's `operation_type`).
    """
    name: str | None = execution_context.operation_name
    if execution_context.graphql_document is None:
        query = execution_context.query
        return name, operation_type(query, name) if isinstance(query, str) else "unknown"
    try:
        return name, str(execution_context.operation_type.value)
    except Exception:  # no such operation, or several without a name: not executed
        return name, "unknown"


def record_operation(execution_context: Any) -> None:
    """Put the operation's (name, type) in the request's ASGI scope for HttpMetrics."""
    request = getattr(execution_context.context, "request", None)
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        scope.setdefault("state", {})[OPERATION_STATE_KEY] = operation_of(execution_context)


class JetOperation(SchemaExtension):
    """Token limit, cached parse, extra validation rules, cached validation, masking."""

    def __init__(
        self,
        *,
        max_tokens: int,
        validation_rules: tuple[type[ASTValidationRule], ...],
        should_mask_error: Callable[[GraphQLError], bool],
    ) -> None:
        self.max_tokens = max_tokens
        self.validation_rules = validation_rules
        self.should_mask_error = should_mask_error

    def on_operation(self) -> Iterator[None]:
        ec = self.execution_context
        ec.parse_options["max_tokens"] = self.max_tokens
        ec.validation_rules = ec.validation_rules + self.validation_rules
        try:
            yield
        finally:
            record_operation(ec)
        # Schema.process_errors has logged the originals by now; the client sees these.
        result = ec.result
        errors = getattr(result, "errors", None)
        if errors:
            request_id = getattr(ec.context, "request_id", None)
            result.errors = [  # type: ignore[union-attr]
                mask(e, request_id) if self.should_mask_error(e) else e for e in errors
            ]

    def on_parse(self) -> Iterator[None]:
        ec = self.execution_context
        ec.graphql_document = cached_parse(ec.query, **ec.parse_options)
        yield

    def on_validate(self) -> Iterator[None]:
        ec = self.execution_context
        ec.pre_execution_errors = cached_validate(
            ec.schema._schema, ec.graphql_document, ec.validation_rules
        )
        yield
