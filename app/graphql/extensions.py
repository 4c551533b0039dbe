"""The schema's per-operation extensions: Strawberry's own (token limit, extra validation
rules, parse and validation caches) and two on its documented hooks, masking unexpected
errors with a code and the request id, and noting the operation for the edge's metrics.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from graphql import ASTValidationRule, GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
)

from app.graphql.document_cost import document_cost_errors

CACHE_SIZE = 1024
MASKED_MESSAGE = "Internal server error"


def mask(error: GraphQLError, request_id: str | None) -> GraphQLError:
    """What MaskErrors.anonymise_error returns, plus a code and the request id to quote.

    Its `__cause__` is the original, for the HTTP edge, which names a tenant database
    that cannot serve instead (app/edge/graphql_http/view.py).
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
    masked.__cause__ = error.original_error
    return masked


class MaskUnexpected(MaskErrors):
    """MaskErrors whose masked error carries `code` and the request id (`mask`)."""

    def __init__(self, should_mask_error: Callable[[GraphQLError], bool]) -> None:
        super().__init__(should_mask_error=should_mask_error, error_message=MASKED_MESSAGE)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        return mask(error, getattr(self.execution_context.context, "request_id", None))


def operation_of(execution_context: Any) -> tuple[str | None, str] | None:
    """(name, type) of the operation an execution context ran (or tried to run), or None
    when its document did not parse (the edge reads the query's tokens then).

    The name is the one the request gave, else the document's first operation's (so a
    named operation sent without operationName is labelled by its name).
    """
    if execution_context.graphql_document is None:
        return None
    name: str | None = execution_context.operation_name
    try:
        return name, str(execution_context.operation_type.value)
    except Exception:
        return name, "unknown"


def note_operation(execution_context: Any) -> None:
    """Leave the operation's (name, type) in the context's `operation` for the edge's
    metrics labels."""
    context = execution_context.context
    if hasattr(context, "operation"):
        context.operation = operation_of(execution_context)


class NoteOperation(SchemaExtension):
    """`note_operation` at the end of every operation, even one that fails."""

    def on_operation(self) -> Iterator[None]:
        try:
            yield
        finally:
            note_operation(self.execution_context)


class BoundedValidationCache(ValidationCache):
    """Strawberry's validation cache, refusing a document over the cost bounds before
    graphql-core's rules walk it (they can cost exponential time on a small document)."""

    def on_validate(self) -> Iterator[None]:
        document = self.execution_context.graphql_document
        errors = document_cost_errors(document) if document is not None else []
        if errors:
            self.execution_context.pre_execution_errors = errors
            yield
        else:
            yield from super().on_validate()


def operation_extensions(
    *,
    max_tokens: int,
    validation_rules: Sequence[type[ASTValidationRule]],
    should_mask_error: Callable[[GraphQLError], bool],
) -> list[Callable[[], SchemaExtension]]:
    """Factories of the extensions each operation gets (a fresh set per request)."""
    rules = list(validation_rules)
    return [
        lambda: MaxTokensLimiter(max_token_count=max_tokens),
        lambda: AddValidationRules(rules),
        lambda: ParserCache(maxsize=CACHE_SIZE),
        lambda: BoundedValidationCache(maxsize=CACHE_SIZE),
        lambda: MaskUnexpected(should_mask_error),
        NoteOperation,
    ]
