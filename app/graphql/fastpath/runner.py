"""The extensions runner short cut: the schema's per-operation work (token limit, extra
validation rules, parse and validation caches, masking, noting the operation) done at the
same points as Strawberry's extensions would, without building extension objects and
their hook context managers for every request.

Replaces, on the fast path, what app/graphql/extensions.py's `operation_extensions`
gives the stock schema (MaxTokensLimiter, AddValidationRules, ParserCache,
ValidationCache, MaskUnexpected, NoteOperation), with the same outcome.
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

from app.graphql.document_cost import document_cost_errors
from app.graphql.extensions import CACHE_SIZE, mask, note_operation

# Module level, shared by every request (as ParserCache's and ValidationCache's are).
# lru_cache does not cache exceptions: a document that fails to parse is parsed again.
cached_parse = lru_cache(maxsize=CACHE_SIZE)(parse)

# Validation results by (schema, document, rules). Not an lru_cache of validate_document
# (ValidationCache's): its key hashes the document, and a document's hash walks every
# node of it on every request. The documents are the parse cache's, so the same query
# finds the same document object: keyed by its id, with the document (and the schema)
# kept in the entry so that the id cannot be reused while the entry lives.
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


class PolicyExtensionsRunner(SchemaExtensionsRunner):
    """Strawberry's extensions runner with the schema's own per-operation work built in.

    What MaxTokensLimiter, AddValidationRules, ParserCache, ValidationCache and MaskErrors
    did as extensions (and MaskUnexpected, NoteOperation), done at the same points of the
    operation, without building extension objects and hook context managers (inspect,
    contextlib, update_wrapper) for every request. Extensions given to the schema, if
    any, still run inside each stage.
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
        note_operation(ec)
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
