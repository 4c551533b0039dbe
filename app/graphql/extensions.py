"""The schema's per-operation work (token limit, parse and validation caches, extra
validation rules, masking of unexpected errors, the operation's metrics label), built into
the extensions runner instead of five Strawberry extensions.

Strawberry builds every extension anew for each operation and wraps each of its hooks in
a context manager per stage (inspect, contextlib, functools.update_wrapper): with
MaxTokensLimiter, AddValidationRules, ParserCache, ValidationCache and MaskErrors that
bookkeeping cost more than the `{ __typename }` operation itself. `JetExtensionsRunner`
(returned by `JetSchema.create_extensions_runner`) does the same work at the same points:

- operation start: the token limit for the parser, the depth/alias rules for validation;
- parsing: the parse cache (graphql-core's `parse`, keyed by query text and options);
- validation: the validation cache (keyed by schema, document and rules);
- operation end: masks unexpected errors (with the request id; what MaskErrors did) and
  records the operation's name and type for the HTTP metrics (`record_operation`).
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import ASTValidationRule, GraphQLError, parse
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.schema.schema import validate_document
from strawberry.types import ExecutionContext

from app.edge.observe import OPERATION_STATE_KEY, operation_type
from app.edge.unavailable import graphql_extensions
from app.graphql.document_cost import document_cost_errors
from app.storage.unavailable import TenantUnavailable

CACHE_SIZE = 1024
MASKED_MESSAGE = "Internal server error"

# Module level, shared by every request (as ParserCache's and ValidationCache's are).
# lru_cache does not cache exceptions: a document that fails to parse is parsed again.
cached_parse = lru_cache(maxsize=CACHE_SIZE)(parse)

# Validation results by (schema, document, rules). Not an lru_cache of validate_document:
# its key would hash the document, and a document's hash walks every node of it (~25 µs
# for a small mutation, on every request). The documents are the parse cache's, so the
# same query finds the same document object: keyed by its id, with the document (and the
# schema) kept in the entry so that the id cannot be reused while the entry lives.
_validated: dict[tuple[int, int, tuple[Any, ...]], tuple[Any, Any, list[GraphQLError]]] = {}


def cached_validate(
    schema: Any, document: Any, rules: tuple[type[ASTValidationRule], ...]
) -> list[GraphQLError]:
    key = (id(schema), id(document), rules)
    entry = _validated.get(key)
    if entry is not None and entry[0] is schema and entry[1] is document:
        return entry[2]
    # Bounded first: graphql-core's rules can cost exponential time on a small document.
    errors = document_cost_errors(document) or validate_document(schema, document, rules)
    if len(_validated) >= CACHE_SIZE:
        del _validated[next(iter(_validated))]  # the oldest
    _validated[key] = (schema, document, errors)
    return errors


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


def record_operation(
    execution_context: Any, operation: tuple[str | None, str] | None = None
) -> None:
    """Put the operation's (name, type) in the request's ASGI scope for HttpMetrics.

    `operation`: what `operation_of` would answer, when the caller has worked it out.
    """
    request = getattr(execution_context.context, "request", None)
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        scope.setdefault("state", {})[OPERATION_STATE_KEY] = (
            operation_of(execution_context) if operation is None else operation
        )


@dataclass(frozen=True, slots=True)
class OperationPolicy:
    """What every operation of the schema gets: token limit, extra rules, masking."""

    max_tokens: int
    validation_rules: tuple[type[ASTValidationRule], ...]
    should_mask_error: Callable[[GraphQLError], bool]


class _Stage:
    """One stage of an operation (operation, parsing, validation, executing) as a sync and
    async context manager: `enter` before the stage, `leave(failed)` after it, around
    strawberry's own stage for the schema's extensions, when it has any."""

    __slots__ = ("enter", "inner", "leave")

    def __init__(
        self,
        enter: Callable[[], None] | None,
        leave: Callable[[bool], None] | None,
        inner: Any,
    ) -> None:
        self.enter, self.leave, self.inner = enter, leave, inner

    def __enter__(self) -> None:
        if self.enter is not None:
            self.enter()
        if self.inner is not None:
            self.inner.__enter__()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        suppressed = False
        try:
            if self.inner is not None:
                suppressed = bool(self.inner.__exit__(exc_type, exc, tb))
        finally:
            if self.leave is not None:
                self.leave(exc_type is not None and not suppressed)
        return suppressed

    async def __aenter__(self) -> None:
        if self.enter is not None:
            self.enter()
        if self.inner is not None:
            await self.inner.__aenter__()

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        suppressed = False
        try:
            if self.inner is not None:
                suppressed = bool(await self.inner.__aexit__(exc_type, exc, tb))
        finally:
            if self.leave is not None:
                self.leave(exc_type is not None and not suppressed)
        return suppressed


class JetExtensionsRunner(SchemaExtensionsRunner):
    """Strawberry's extensions runner with the schema's own per-operation work built in.

    What MaxTokensLimiter, AddValidationRules, ParserCache, ValidationCache and MaskErrors
    did as extensions, done at the same points of the operation, without building
    extension objects and hook context managers (inspect, contextlib, update_wrapper) for
    every request: that bookkeeping cost more than a `{ __typename }` operation. Extensions
    given to the schema, if any, still run inside each stage.
    """

    def __init__(
        self,
        execution_context: ExecutionContext,
        extensions: list[SchemaExtension] | None,
        policy: OperationPolicy,
    ) -> None:
        super().__init__(execution_context, extensions)
        self.policy = policy

    def _inner(self, stage: Callable[[], Any]) -> Any:
        return stage() if self.extensions else None

    def operation(self) -> Any:
        return _Stage(self._start, self._finish, self._inner(super().operation))

    def parsing(self) -> Any:
        return _Stage(self._parse, None, self._inner(super().parsing))

    def validation(self) -> Any:
        return _Stage(self._validate, None, self._inner(super().validation))

    def executing(self) -> Any:
        return _Stage(None, None, self._inner(super().executing))

    def _start(self) -> None:
        ec = self.execution_context
        ec.parse_options["max_tokens"] = self.policy.max_tokens
        ec.validation_rules = ec.validation_rules + self.policy.validation_rules

    def _parse(self) -> None:
        ec = self.execution_context
        ec.graphql_document = cached_parse(ec.query, **ec.parse_options)

    def _validate(self) -> None:
        ec = self.execution_context
        ec.pre_execution_errors = cached_validate(
            ec.schema._schema, ec.graphql_document, ec.validation_rules
        )

    def _finish(self, failed: bool) -> None:
        ec = self.execution_context
        record_operation(ec)
        if failed:
            return
        # Schema.process_errors has logged the originals by now; the client sees these.
        result = ec.result
        errors = getattr(result, "errors", None)
        if errors:
            should_mask, request_id = (
                self.policy.should_mask_error,
                getattr(ec.context, "request_id", None),
            )
            result.errors = [  # type: ignore[union-attr]
                mask(e, request_id) if should_mask(e) else e for e in errors
            ]
