"""The lean execute short cut: Strawberry's `Schema.execute` for a `PolicySchema` with no
extensions, no directives and no incremental delivery, as straight-line code.

Stock `execute` builds, per operation, an extensions list, a middleware manager, four
stage context managers whose only work is the policy runner's hooks, then goes through
`_prepare_operation_async`, `_execute_operation`, graphql-core's `execute` and
`experimental_execute_incrementally` (each checking what such a schema cannot change) and
`_handle_execution_result`, and asks the execution context for the operation's name and
type (a walk of the document each time) six times. `execute_lean` does the same steps in
the same order with the same hooks (the runner's `_start`, `_parse`, `_validate`,
`_finish`; `Schema._process_errors`), working out the operation's name and type once.
Anything else takes Strawberry's `execute` (`lean_execution` decides).
"""

from collections.abc import Iterable
from typing import Any

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import GraphQLError
from graphql.execution.executor import UNEXPECTED_MULTIPLE_PAYLOADS
from graphql.execution.middleware import MiddlewareManager
from graphql.execution.types import ExperimentalIncrementalExecutionResults
from strawberry.exceptions import MissingQueryError
from strawberry.execution import optimized_is_awaitable
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.schema.schema import DEFAULT_ALLOWED_OPERATION_TYPES, Schema, _coerce_error
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from app.graphql.extensions import mask, note_operation
from app.graphql.fastpath.prepared import PreparedExecutionContext
from app.graphql.fastpath.runner import OperationPolicy, cached_parse, cached_validate

# Switched off by the equivalence tests to run the same schema through Strawberry's execute.
enabled = True

# The methods of Strawberry's `Schema` whose work `execute_lean` does inline: a schema
# class overriding any of them keeps Strawberry's `execute`.
_INLINED = (
    "get_extensions",
    "_create_execution_context",
    "_get_middleware_manager",
    "_get_custom_context_kwargs",
    "_get_execute_function",
    "_prepare_operation_async",
    "_execute_operation",
    "_handle_execution_result",
)


def lean_execution(schema: Any, runner_factory: Any) -> bool:
    """Whether `execute_lean` does exactly what Strawberry's `execute` does for `schema`,
    given `runner_factory`, the `create_extensions_runner` that makes a plain
    `PolicyExtensionsRunner` (the schema class's own must be it)."""
    core, cls = schema._schema, type(schema)
    return (
        not schema.extensions
        and not schema.directives
        and not schema.config.enable_experimental_incremental_execution
        and isinstance(schema.execution_context_class, type)
        and issubclass(schema.execution_context_class, PreparedExecutionContext)
        and core.get_directive("defer") is None
        and core.get_directive("stream") is None
        and cls.create_extensions_runner is runner_factory
        and all(getattr(cls, name) is getattr(Schema, name) for name in _INLINED)
    )


async def execute_lean(  # noqa: PLR0913, PLR0917, C901
    schema: Any,
    policy: OperationPolicy,
    query: str | None,
    variable_values: dict[str, Any] | None = None,
    context_value: Any | None = None,
    root_value: Any | None = None,
    operation_name: str | None = None,
    allowed_operation_types: Iterable[OperationType] | None = None,
    operation_extensions: dict[str, Any] | None = None,
) -> ExecutionResult:
    """Strawberry's `Schema.execute` with the policy runner and nothing else."""
    if allowed_operation_types is None:
        allowed_operation_types = DEFAULT_ALLOWED_OPERATION_TYPES
    ec = schema._create_execution_context(
        query=query,
        allowed_operation_types=allowed_operation_types,
        variable_values=variable_values,
        context_value=context_value,
        root_value=root_value,
        operation_name=operation_name,
        operation_extensions=operation_extensions,
    )
    pre_execution = False
    try:
        # The operation stage: the runner's `_start`.
        ec.parse_options["max_tokens"] = policy.max_tokens
        ec.validation_rules = ec.validation_rules + policy.validation_rules
        recorded: tuple[str | None, str] | None = None
        try:
            result: Any = None
            if not ec.query and ec.graphql_document is None:
                raise MissingQueryError
            # Parsing, the runner's `_parse`: outside Strawberry's try around the parse,
            # so a syntax error leaves by the operation's `except Exception` below.
            ec.graphql_document = cached_parse(ec.query, **ec.parse_options)
            # From here the document is set: the operation's name and type are worked out
            # once, as `operation_of` would find them.
            name = ec.operation_name
            try:
                operation_type = ec.operation_type
            except RuntimeError as error:
                recorded = (name, "unknown")
                raise CannotGetOperationTypeError(name) from error
            recorded = (name, str(operation_type.value))
            if operation_type not in ec.allowed_operations:
                raise InvalidOperationTypeError(operation_type)
            # Validation, the runner's `_validate`.
            ec.pre_execution_errors = cached_validate(
                schema._schema, ec.graphql_document, ec.validation_rules
            )
            if ec.pre_execution_errors:
                result = PreExecutionError(data=None, errors=ec.pre_execution_errors)
                pre_execution = True
                # `_handle_execution_result`, inside the operation as Strawberry calls it.
                ec.pre_execution_errors = result.errors
                schema._process_errors(result.errors, ec)
                result.extensions = {**ec.extensions_results}
                ec.result = result
            else:
                # `_execute_operation`.
                if not ec.result:
                    result = await _execute(schema, ec, name, operation_extensions)
                    ec.result = result
                else:
                    result = ec.result
                if isinstance(result, GraphQLExecutionResult) and result.errors:
                    ec.pre_execution_errors = result.errors
                    schema._process_errors(result.errors, ec)
        except BaseException:
            note_operation(ec, recorded)  # the runner's `_finish(failed=True)`
            raise
        _finish(ec, policy, recorded)
    except (MissingQueryError, CannotGetOperationTypeError, InvalidOperationTypeError):
        raise
    except Exception as exc:  # noqa: BLE001 - Strawberry's: an error result
        result = PreExecutionError(data=None, errors=[_coerce_error(exc)])
        ec.pre_execution_errors = result.errors
        schema._process_errors(result.errors, ec)
        result.extensions = {**ec.extensions_results}
        ec.result = result
        return result  # type: ignore[no-any-return]
    if pre_execution:
        return result  # type: ignore[no-any-return]
    # `_handle_execution_result(..., skip_process_errors=True)`.
    if result.errors:
        ec.pre_execution_errors = result.errors
    if isinstance(result, GraphQLExecutionResult):
        result = ExecutionResult(data=result.data, errors=result.errors)
    result.extensions = {**ec.extensions_results}
    ec.result = result
    return result  # type: ignore[no-any-return]


def _finish(ec: Any, policy: OperationPolicy, recorded: tuple[str | None, str] | None) -> None:
    """The runner's `_finish(failed=False)`: note the operation, mask what is unexpected."""
    note_operation(ec, recorded)
    result = ec.result
    errors = getattr(result, "errors", None)
    if errors:
        should_mask, request_id = policy.should_mask_error, getattr(ec.context, "request_id", None)
        result.errors = [mask(e, request_id) if should_mask(e) else e for e in errors]


async def _execute(schema: Any, ec: Any, name: str | None, operation_extensions: Any) -> Any:
    """graphql-core's `execute(...)` as Strawberry calls it, for a schema without @defer
    and @stream (so `execute`'s own check of them cannot fail): the executor's `build`
    and `execute_operation`, and `execute`'s refusal of an incremental result."""
    executor = schema.execution_context_class.build(
        schema._schema,
        ec.graphql_document,
        ec.root_value,
        ec.context,
        ec.variables,
        name,  # ec.operation_name
        None,
        None,
        None,
        50,
        False,
        MiddlewareManager(),  # Strawberry's, of the extensions with `resolve`: none
        optimized_is_awaitable,
        None,
        hide_suggestions=False,
        abort_signal=None,
        hooks=None,
        operation_extensions=operation_extensions,
    )
    if isinstance(executor, list):
        return GraphQLExecutionResult(None, errors=executor)
    result = executor.execute_operation()
    if isinstance(result, GraphQLExecutionResult):
        return result
    if isinstance(result, ExperimentalIncrementalExecutionResults):
        raise GraphQLError(UNEXPECTED_MULTIPLE_PAYLOADS)
    result = await result
    if isinstance(result, GraphQLExecutionResult):
        return result
    raise GraphQLError(UNEXPECTED_MULTIPLE_PAYLOADS)
