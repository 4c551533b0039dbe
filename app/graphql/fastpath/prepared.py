"""The prepared build: graphql-core's `Executor.build` with what depends on the document
alone (operation, fragments, variable signatures and coercers) worked out once per cached
parsed document, and the execution context made without its four `__init__`s. Variable
coercers are compiled per variable definition: what graphql-core's `coerce_input_value`
does for a value of one type, with the type walked once.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

from graphql import (
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    MiddlewareManager,
    OperationDefinitionNode,
    Undefined,
    assert_valid_schema,
    default_field_resolver,
    default_type_resolver,
)
from graphql.execution.collect_fields import FragmentDetails
from graphql.execution.executor import CollectedErrors
from graphql.execution.get_variable_signature import get_variable_signature
from graphql.execution.values import VariableValues, VariableValueSource
from graphql.language.parser import MAX_NESTING_DEPTH
from graphql.pyutils import is_awaitable as default_is_awaitable
from graphql.pyutils.is_awaitable import is_async_iterable as default_is_async_iterable
from graphql.pyutils.ref_map import RefMap
from graphql.type.definition import is_required_input_field
from graphql.type.directives import GraphQLDisableErrorPropagationDirective
from graphql.utilities.coerce_input_value import coerce_default_value, coerce_input_value

from app.graphql.fastpath.executor import (
    PLAN_CACHE_SIZE,
    PlannedExecutionContext,
    seen_operations,
    weak_async_helpers,
)

# `coercer` walks a variable's type once and returns a function doing what graphql-core's
# `coerce_input_value` does for a value of that type: non-null, null, leaves, lists given
# as Python lists, input objects (unknown and required fields, defaults, `out_name`,
# `out_type`). OneOf input objects, recursive input types and lists given another way are
# graphql-core's own function. Undefined (invalid) or an exception sends the whole request
# to graphql-core's `coerce_variable_values`, whose errors are reported.


def coercer(type_: Any, seen: tuple[Any, ...]) -> Callable[[Any], Any]:
    if isinstance(type_, GraphQLNonNull):
        inner = coercer(type_.of_type, seen)

        def non_null(value: Any) -> Any:
            if value is None or value is Undefined:
                return Undefined
            return inner(value)

        return non_null
    if isinstance(type_, GraphQLLeafType):
        coerce_leaf = type_.coerce_input_value

        def leaf(value: Any) -> Any:
            if value is None or value is Undefined:
                return None
            try:
                return coerce_leaf(value)
            except Exception:
                return Undefined

        return leaf
    if isinstance(type_, GraphQLList):
        item = coercer(type_.of_type, seen)

        def list_(value: Any) -> Any:
            if value is None or value is Undefined:
                return None
            if value.__class__ is not list:
                return coerce_input_value(value, type_)
            coerced: list[Any] = []
            append = coerced.append
            for item_value in value:
                coerced_item = item(item_value)
                if coerced_item is Undefined:
                    return Undefined
                append(coerced_item)
            return coerced

        return list_
    if isinstance(type_, GraphQLInputObjectType) and not type_.is_one_of and type_ not in seen:
        names = frozenset(type_.fields)
        fields = [
            (
                name,
                field.out_name or name,
                coercer(field.type, (*seen, type_)),
                is_required_input_field(field),
                field,
            )
            for name, field in type_.fields.items()
        ]
        out_type = type_.out_type

        def input_object(value: Any) -> Any:
            if value is None or value is Undefined:
                return None
            if not isinstance(value, dict):
                return Undefined
            for field_name, field_value in value.items():
                if field_value is not Undefined and field_name not in names:
                    return Undefined
            coerced: dict[str, Any] = {}
            for name, out_name, coerce_field, required, field in fields:
                field_value = value.get(name, Undefined)
                if field_value is Undefined:
                    if required:
                        return Undefined
                    default = coerce_default_value(field)
                    if default is not Undefined:
                        coerced[out_name] = default
                else:
                    coerced_field = coerce_field(field_value)
                    if coerced_field is Undefined:
                        return Undefined
                    coerced[out_name] = coerced_field
            return out_type(coerced)

        return input_object
    return partial(_core_coerce, type_=type_)


def _core_coerce(value: Any, type_: Any) -> Any:
    return coerce_input_value(value, type_)


def input_depth(type_: Any, seen: tuple[Any, ...]) -> float:
    """The most list and input-object levels a value of `type_` can nest (what graphql-core's
    `input_is_nested_too_deeply` counts); infinite for a recursive input type."""
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if isinstance(type_, GraphQLList):
        return 1 + input_depth(type_.of_type, seen)
    if isinstance(type_, GraphQLInputObjectType):
        if type_ in seen:
            return float("inf")
        inner = [input_depth(f.type, (*seen, type_)) for f in type_.fields.values()]
        return 1 + max(inner, default=0)
    return 0


# Off only to measure this short cut alone (bench); the switch is Settings.graphql_fast_path.
_enabled = True


class _Unsupported(Exception):
    pass


class Prepared:
    """What `Executor.build` works out from (schema, document, operation name) alone."""

    __slots__ = (
        "document",
        "error_propagation",
        "fragment_definitions",
        "fragments",
        "operation",
        "schema",
        "vars",
    )

    def __init__(self, schema: Any, document: Any, operation: Any, fragments: Any) -> None:
        self.schema, self.document, self.operation = schema, document, operation
        # As `Executor.__init__` works it out.
        self.error_propagation = not any(
            directive.name.value == GraphQLDisableErrorPropagationDirective.name
            for directive in operation.directives or ()
        )
        self.fragment_definitions = {name: f.definition for name, f in fragments.items()}
        self.fragments = fragments
        # (signature, has a default, non-null, shallow enough to skip the nesting check,
        # its value's coercer)
        self.vars: list[tuple[Any, bool, bool, bool, Callable[[Any], Any]]] = []
        for var_def in operation.variable_definitions or ():
            signature = get_variable_signature(schema, var_def)
            if isinstance(signature, GraphQLError):
                raise _Unsupported
            self.vars.append(
                (
                    signature,
                    bool(var_def.default_value),
                    isinstance(signature.type, GraphQLNonNull),
                    input_depth(signature.type, ()) <= MAX_NESTING_DEPTH,
                    coercer(signature.type, ()),
                )
            )

    def variable_values(self, inputs: dict[str, Any]) -> VariableValues | None:
        """graphql-core's `coerce_variable_values` when every value coerces and none is
        left to its default; else None (graphql-core's path, with its errors)."""
        sources: dict[str, VariableValueSource] = {}
        coerced: dict[str, Any] = {}
        for signature, has_default, non_null, shallow, coerce in self.vars:
            name = signature.name
            value = inputs.get(name, Undefined)
            if value is Undefined:
                if has_default or non_null:
                    return None
                sources[name] = VariableValueSource(signature)
                continue
            sources[name] = VariableValueSource(signature, value)
            if not shallow:
                return None
            try:
                coerced_value = coerce(value)
            except Exception:
                return None
            if coerced_value is Undefined:
                return None
            coerced[name] = coerced_value
        return VariableValues(sources, coerced)


def _ref_map() -> RefMap[Any, Any]:
    # `RefMap()`: its `__init__` (through MutableMapping's) leaves an empty `_map`.
    ref_map: RefMap[Any, Any] = RefMap.__new__(RefMap)
    ref_map._map = {}
    return ref_map


# (schema id, document id, operation name) → the Prepared, or None when graphql-core's own
# build must run (no such operation, fragment variables...). Entries keep the schema and
# document, so their ids are not reused while the entry lives.
_prepared: dict[tuple[int, int, str | None], tuple[Any, Any, Prepared | None]] = {}


def prepare(schema: Any, document: Any, operation_name: str | None) -> Prepared | None:
    key = (id(schema), id(document), operation_name)
    entry = _prepared.get(key)
    if entry is not None and entry[0] is schema and entry[1] is document:
        return entry[2]
    operation: Any = None
    fragments: dict[str, FragmentDetails] = {}
    prepared: Prepared | None = None
    try:
        for definition in document.definitions:
            if isinstance(definition, OperationDefinitionNode):
                if operation_name is None:
                    if operation is not None:
                        raise _Unsupported
                    operation = definition
                elif definition.name and definition.name.value == operation_name:
                    operation = definition
            elif isinstance(definition, FragmentDefinitionNode):
                if definition.variable_definitions:
                    raise _Unsupported
                fragments[definition.name.value] = FragmentDetails(definition, None)
        if operation is None:
            raise _Unsupported
        prepared = Prepared(schema, document, operation, fragments)
    except _Unsupported:
        prepared = None
    if len(_prepared) >= PLAN_CACHE_SIZE:
        _prepared.clear()
    _prepared[key] = (schema, document, prepared)
    return prepared


class PreparedExecutionContext(PlannedExecutionContext):
    """The planned execution context, built from the prepared document."""

    @classmethod
    def create(
        cls,
        prepared: Prepared,
        root_value: Any,
        context_value: Any,
        variable_values: VariableValues,
        middleware_manager: MiddlewareManager | None,
        is_awaitable: Any,
        is_async_iterable: Any,
        hide_suggestions: bool,
        abort_signal: Any,
        hooks: Any,
        operation_extensions: Any,
    ) -> "PreparedExecutionContext":
        """`cls(...)` as `build` calls it (default resolvers, no early execution), with the
        attributes the four `__init__`s set (graphql-core's `Executor` and
        `IncrementalExecutor`, Strawberry's, the planned one's) set here, with the same
        values (tests/graphql/test_prepared_build.py compares `vars()`)."""
        self = cls.__new__(cls)
        self.schema = prepared.schema
        self.fragment_definitions = dict(prepared.fragment_definitions)
        self.fragments = dict(prepared.fragments)
        self.root_value = root_value
        self.context_value = context_value
        operation = self.operation = prepared.operation
        self.variable_values = variable_values
        self.field_resolver = default_field_resolver
        self.type_resolver = default_type_resolver
        self.subscribe_field_resolver = default_field_resolver
        self.enable_early_execution = False
        self.hide_suggestions = hide_suggestions
        self.abort_signal = abort_signal
        self.hooks = hooks
        self.middleware_manager = middleware_manager
        self.error_propagation = prepared.error_propagation
        self.is_awaitable = is_awaitable or default_is_awaitable
        self.is_async_iterable = is_async_iterable or default_is_async_iterable
        self.collected_errors = CollectedErrors()
        self.pending_incremental_futures = set()
        self.background_futures = set()
        self.async_work_finished_hook_task = None
        self._relevant_sub_fields = {}
        self._stream_usages = _ref_map()
        # IncrementalExecutor's
        self.defer_usage_set = None
        self.groups = []
        self.tasks = []
        self.streams = []
        self._initial_execution_plans = _ref_map()
        self._deferred_execution_plans = _ref_map()
        # Strawberry's
        self.operation_extensions = operation_extensions
        # PlannedExecutionContext's
        self.async_helpers = weak_async_helpers(self)
        self._objects_short_cut = seen_operations.get(id(operation)) is operation
        if not self._objects_short_cut:
            seen_operations[id(operation)] = operation
        return self

    @classmethod
    def build(
        cls,
        schema: Any,
        document: Any,
        root_value: Any = None,
        context_value: Any = None,
        raw_variable_values: dict[str, Any] | None = None,
        operation_name: str | None = None,
        field_resolver: Any = None,
        type_resolver: Any = None,
        subscribe_field_resolver: Any = None,
        max_coercion_errors: int = 50,
        enable_early_execution: bool = False,
        middleware: Any = None,
        is_awaitable: Any = None,
        is_async_iterable: Any = None,
        hide_suggestions: bool = False,
        abort_signal: Any = None,
        hooks: Any = None,
        **custom_args: Any,
    ) -> Any:
        """graphql-core's `Executor.build` with the document's part prepared once; anything
        unusual (an error to report, a variable left to its default, fragment variables,
        middleware of another kind) is its own."""
        arguments = (
            schema,
            document,
            root_value,
            context_value,
            raw_variable_values,
            operation_name,
            field_resolver,
            type_resolver,
            subscribe_field_resolver,
            max_coercion_errors,
            enable_early_execution,
            middleware,
            is_awaitable,
            is_async_iterable,
        )
        options = {
            "hide_suggestions": hide_suggestions,
            "abort_signal": abort_signal,
            "hooks": hooks,
            **custom_args,
        }
        prepared = (
            prepare(schema, document, operation_name)
            if _enabled
            and (middleware is None or isinstance(middleware, list | tuple | MiddlewareManager))
            else None
        )
        variable_values = (
            None if prepared is None else prepared.variable_values(raw_variable_values or {})
        )
        if prepared is None or variable_values is None:
            return super().build(*arguments, **options)
        assert_valid_schema(schema)
        if (
            cls.__init__ is PlannedExecutionContext.__init__
            and field_resolver is None
            and type_resolver is None
            and subscribe_field_resolver is None
            and not enable_early_execution
            and isinstance(middleware, MiddlewareManager | None)
            and set(custom_args) <= {"operation_extensions"}
        ):
            return cls.create(
                prepared,
                root_value,
                context_value,
                variable_values,
                middleware,
                is_awaitable,
                is_async_iterable,
                hide_suggestions,
                abort_signal,
                hooks,
                custom_args.get("operation_extensions"),
            )
        return cls(
            schema,
            dict(prepared.fragment_definitions),
            dict(prepared.fragments),
            root_value,
            context_value,
            prepared.operation,
            variable_values,
            field_resolver or default_field_resolver,
            type_resolver or default_type_resolver,
            subscribe_field_resolver or default_field_resolver,
            enable_early_execution,
            # As graphql-core's: Strawberry gives a MiddlewareManager (of the extensions
            # with a `resolve` hook).
            middleware
            if middleware is None or isinstance(middleware, MiddlewareManager)
            else MiddlewareManager(*middleware),
            is_awaitable,
            is_async_iterable,
            **options,
        )
