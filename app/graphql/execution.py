"""Cheaper ways through graphql-core's executor for plain fields and plain objects.

A page of 50 events is ~550 fields, and most are plain attributes (`id`, `kind`, `body`,
`occurredAt`...) of the objects the resolvers return. For each, graphql-core's
`execute_field` builds a resolve info (a 16-field tuple), checks for arguments, calls
Strawberry's resolver, then walks `complete_value` (non-null, list, leaf...) before it
coerces the value; each object and list item adds a path, a `complete_value` walk and an
`execute_fields` loop: ~5 µs a field, most of a page's CPU.

Two short cuts, both taken only while nothing is unusual:

- Per field (`execute_field`): a Strawberry field without a resolver (a plain attribute,
  no arguments, no field extensions) of a scalar or enum type, with no middleware: the
  same Strawberry resolver and the same `coerce_output_value` graphql-core would call.

- Per object (`complete_object_value`) and per list (`complete_list_value`): when every
  field selected below a concrete object type (after collecting fields: aliases, fragment
  spreads and inline fragments are fine; no directive and no argument anywhere in the
  subtree) is `__typename`, a plain leaf field as above, or a plain attribute whose type is
  a concrete object type or a list (of lists...) of those or of leaves, recursively, a
  plan built once per (type, field nodes of the cached parsed document) and compiled to a
  Python function builds the response value directly: each response key read as
  Strawberry's resolver reads it and coerced with the same `coerce_output_value`, each
  object's `is_type_of` checked. A str for a String or ID, a bool for a Boolean, a 32-bit
  int for an Int are their own response value (what those coercers return for them); a
  member of a Strawberry enum is looked up in the names its coercer would find. An
  object or a leaf value of a class whose instances are never exceptions nor awaitables
  (`_is_plain_class`: the records, datetimes...) skips those two checks.

Also (at the end of this module) input objects are converted with their field names and
converters worked out once, instead of Strawberry's generic `convert_argument`, and fields
with a resolver function get a resolver converting their arguments the same way, instead
of Strawberry's wrapper (`install_fast_resolvers`).

Anything else (an exception, null for a non-null field, an awaitable, a value the type
refuses, a list that is not a plain list or tuple) is handed to graphql-core's own path for
that field or object, which resolves it again (plain attribute reads, so no side effect)
and reports the error with its path and null propagation exactly as before. Middleware
(extensions with a `resolve` hook) turns both short cuts off.
"""

import weakref
from asyncio import gather as asyncio_gather
from asyncio import get_running_loop, iscoroutine
from collections.abc import Callable, Sequence
from dataclasses import MISSING
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from functools import partial
from inspect import isawaitable
from operator import attrgetter
from types import CoroutineType, GeneratorType
from typing import Any
from uuid import UUID
from weakref import WeakValueDictionary

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfoHelpers,
    InlineFragmentNode,
    MiddlewareManager,
    OperationDefinitionNode,
    SelectionSetNode,
    Undefined,
    assert_valid_schema,
    default_field_resolver,
    default_type_resolver,
    is_leaf_type,
)
from graphql.execution.collect_fields import FieldDetails, FragmentDetails, collect_subfields
from graphql.execution.executor import CollectedErrors
from graphql.execution.get_variable_signature import get_variable_signature
from graphql.execution.values import VariableValues, VariableValueSource
from graphql.language.parser import MAX_NESTING_DEPTH
from graphql.pyutils import is_awaitable as default_is_awaitable
from graphql.pyutils.gather_with_cancel import gather_with_cancel
from graphql.pyutils.is_awaitable import is_async_iterable as default_is_async_iterable
from graphql.pyutils.ref_map import RefMap
from graphql.type.definition import is_required_input_field
from graphql.type.directives import GraphQLDisableErrorPropagationDirective
from graphql.type.scalars import serialize_boolean, serialize_id, serialize_int, serialize_string
from graphql.utilities.coerce_input_value import coerce_default_value, coerce_input_value
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.relay.types import GlobalID
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import CustomGraphQLEnumType, GraphQLCoreConverter
from strawberry.types.arguments import (
    InputContext,
    _is_leaf_type,
    _is_optional_leaf_type,
    convert_argument,
)
from strawberry.types.base import (
    StrawberryList,
    StrawberryMaybe,
    StrawberryObjectDefinition,
    StrawberryOptional,
    has_object_definition,
)
from strawberry.types.enum import has_enum_definition
from strawberry.types.field import StrawberryField
from strawberry.types.lazy_type import LazyType
from strawberry.types.unset import UNSET

# (parent type, field name) → (resolver, leaf type, non-null) for a field that may take the
# short cut, or None. Types are built once per schema, so this is bounded by the schema.
_Plan = tuple[Any, GraphQLLeafType, bool] | None
_plans: dict[tuple[GraphQLObjectType, str], _Plan] = {}


def _is_plain_resolver(resolve: Any) -> bool:
    """Strawberry's resolver of a field without a resolver function and without field
    extensions: a plain attribute read that ignores its info (`_get_basic_result`).

    Strawberry also marks a field with extensions (permission classes...) but no resolver
    function as `_is_default`; that resolver needs the info, so it is not plain.
    """
    return bool(getattr(resolve, "_is_default", False)) and (
        getattr(resolve, "__name__", None) == "_get_basic_result"
    )


def _plan(field_def: GraphQLField | None) -> _Plan:
    if field_def is None or field_def.args or not _is_plain_resolver(field_def.resolve):
        return None
    field_type = field_def.type
    non_null = isinstance(field_type, GraphQLNonNull)
    leaf = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
    if not is_leaf_type(leaf):
        return None
    return field_def.resolve, leaf, non_null


class _Fallback(Exception):  # noqa: N818 - not an error: "take graphql-core's path"
    """Something unusual: complete this object or list with graphql-core's own path."""


# A compiled plan: a function that builds the response value of one object (source, info)
# or one list (items) straight from the source values, or raises (_Fallback, or whatever a
# read or a coercion raised) for graphql-core's own path to take over. Made by `_Compiler`
# from the selection, once per (type, field nodes); the functions are plain Python source
# (`exec`) so a page of objects costs a dict display per object and a few lines per field.
_Complete = Callable[..., Any]
_LEAF, _OBJECT, _LIST = 0, 1, 2


def _enum_names(leaf: Any) -> tuple[type, dict[Any, str]] | None:
    """For Strawberry's enum type, the member → name map its `coerce_output_value` works
    out by a loop over the values (the first name whose value equals the member's)."""
    coerce = getattr(type(leaf), "coerce_output_value", None)
    if coerce is not CustomGraphQLEnumType.coerce_output_value:
        return None
    cls = leaf.wrapped_cls
    if not (isinstance(cls, type) and issubclass(cls, Enum)) or _maybe_awaitable_class(cls):
        return None
    names: dict[Any, str] = {}
    for member in cls:
        for name, value in leaf.values.items():
            if member.value == value.value:
                names[member] = name
                break
    return cls, names


def _maybe_awaitable_class(cls: type) -> bool:
    return issubclass(cls, Exception | CoroutineType | GeneratorType) or hasattr(cls, "__await__")


def _ignore_class(cls: type) -> None:
    pass


# Classes whose instances are never an exception nor awaitable, whatever their value, for
# graphql-core's `is_awaitable` and Strawberry's `optimized_is_awaitable` (both: a
# coroutine, a generator-based coroutine, or anything `hasattr(value, "__await__")`):
# class → True, or False for a class that does not qualify. Learnt as values are seen
# (`_note_class`, after the full check passed once), bounded; the compiled functions test
# `plain.get(type(value)) is True` instead of `isinstance(value, Exception) or
# is_awaitable(value)` (two calls) for each object and each leaf that is not its own
# response value (a datetime...).
_plain_classes: dict[type, bool] = {}
_PLAIN_CLASSES_SIZE = 4096
# Built-in classes that qualify although their `__getattribute__` is their own slot.
_PLAIN_BUILTINS = frozenset({datetime, date, time, timedelta, Decimal, UUID, bool, float, int, str})


def _is_plain_class(cls: type) -> bool:
    """Whether every instance of exactly `cls` is neither an exception nor awaitable.

    The instances have no `__dict__` (no instance attribute `__await__`), the class reads
    attributes the default way (no `__getattr__`, no own `__getattribute__`, no
    `__class__` of its own), has no `__await__`, and is not an exception, coroutine or
    generator class.
    """
    if cls in _PLAIN_BUILTINS:
        return True
    if cls is type(None) or _maybe_awaitable_class(cls):
        return False
    return (
        cls.__dictoffset__ == 0
        and cls.__getattribute__ is object.__getattribute__  # type: ignore[comparison-overlap]
        and not hasattr(cls, "__getattr__")
        and all("__class__" not in vars(k) for k in cls.__mro__[:-1])
    )


def _note_class(cls: type) -> None:
    if len(_plain_classes) < _PLAIN_CLASSES_SIZE:
        _plain_classes[cls] = _is_plain_class(cls)


# The is_awaitable predicates `_is_plain_class` is right for.
_KNOWN_IS_AWAITABLE = (default_is_awaitable, optimized_is_awaitable)


# The test under which a leaf's value is its own response value (what the built-in
# scalars' coerce_output_value return for exactly these values).
_AS_IS = {
    serialize_string: "{v}.__class__ is str",
    serialize_id: "{v}.__class__ is str",
    serialize_boolean: "{v}.__class__ is bool",
    serialize_int: "({v}.__class__ is int and -2147483648 <= {v} <= 2147483647)",
}


class _Compiler:
    """Writes the Python source of a plan's functions, then runs it (`exec`).

    Each name the source uses (getters, coercers, nested functions, enum maps) is bound
    in the namespace by `bind`; response keys are GraphQL names, written with repr.
    """

    def __init__(self, is_awaitable: Callable[[Any], bool]) -> None:
        known = is_awaitable in _KNOWN_IS_AWAITABLE
        self.namespace: dict[str, Any] = {
            "_Fallback": _Fallback,
            "Undefined": Undefined,
            "is_awaitable": is_awaitable,
            # With another predicate nothing is learnt: every value takes the full check.
            "plain": _plain_classes if known else {},
            "note_class": _note_class if known else _ignore_class,
            "Exception": Exception,
            "isinstance": isinstance,
            "list": list,
            "tuple": tuple,
        }
        self.lines: list[str] = []
        self.count = 0

    def bind(self, value: Any, prefix: str = "x") -> str:
        self.count += 1
        name = f"{prefix}{self.count}"
        self.namespace[name] = value
        return name

    def build(self, name: str) -> Any:
        exec("\n".join(self.lines), self.namespace)  # noqa: S102 - our own source
        return self.namespace[name]

    def leaf(self, v: str, non_null: bool, leaf: Any, indent: str) -> None:
        """Lines leaving the response value of leaf value `v` in `v`."""
        coerce = leaf.coerce_output_value
        enum = _enum_names(leaf)
        as_is = _AS_IS.get(coerce)
        first = "if"
        lines = self.lines
        if as_is is not None:
            lines.append(f"{indent}if {as_is.format(v=v)}:")
            lines.append(f"{indent}    pass")
            first = "elif"
        elif enum is not None:
            lines.append(f"{indent}if {v}.__class__ is {self.bind(enum[0], 'e')}:")
            lines.append(f"{indent}    {v} = {self.bind(enum[1], 'n')}[{v}]")
            first = "elif"
        c = self.bind(coerce, "c")
        if as_is is None and enum is None:  # a datetime...: known not to be awaitable
            lines.append(f"{indent}if plain.get(type({v})) is True:")
            lines.append(f"{indent}    {v} = {c}({v})")
            lines.append(f"{indent}    if {v} is None or {v} is Undefined:")
            lines.append(f"{indent}        raise _Fallback")
            first = "elif"
        lines.append(f"{indent}{first} {v} is None:")
        lines.append(f"{indent}    {'raise _Fallback' if non_null else 'pass'}")
        lines.append(f"{indent}else:")
        lines.append(f"{indent}    if isinstance({v}, Exception) or is_awaitable({v}):")
        lines.append(f"{indent}        raise _Fallback")
        lines.append(f"{indent}    if type({v}) not in plain:")
        lines.append(f"{indent}        note_class(type({v}))")
        lines.append(f"{indent}    {v} = {c}({v})")
        lines.append(f"{indent}    if {v} is None or {v} is Undefined:")
        lines.append(f"{indent}        raise _Fallback")

    def value(self, v: str, kind: int, non_null: bool, detail: Any, indent: str) -> None:
        """Lines leaving the response value of value `v` (of a field or a list item)."""
        if kind == _LEAF:
            self.leaf(v, non_null, detail, indent)
            return
        lines = self.lines
        lines.append(f"{indent}if {v} is None:")
        lines.append(f"{indent}    {'raise _Fallback' if non_null else 'pass'}")
        if kind == _OBJECT:
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    {v} = {self.bind(detail, 'o')}({v}, None)")
        else:
            lines.append(f"{indent}elif {v}.__class__ is list or {v}.__class__ is tuple:")
            lines.append(f"{indent}    {v} = {self.bind(detail, 'l')}({v})")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    raise _Fallback")

    def object_function(self, is_type_of: Any, fields: list[tuple[str, Any]]) -> str:
        """An object's function: fields are (response key, __typename's value or
        (getter, kind, non-null, detail))."""
        name = self.bind(None, "complete_object")
        lines = self.lines
        lines.append(f"def {name}(source, info):")
        lines.append("    if plain.get(type(source)) is not True:")
        lines.append("        if (source is None or isinstance(source, Exception)")
        lines.append("                or is_awaitable(source)):")
        lines.append("            raise _Fallback")
        lines.append("        if type(source) not in plain:")
        lines.append("            note_class(type(source))")
        if is_type_of is not None:
            lines.append(f"    if {self.bind(is_type_of, 't')}(source, info) is not True:")
            lines.append("        raise _Fallback")
        # The fields read by attribute name are read by one attrgetter of all their names
        # (in the same order, before any is coerced): one call instead of one per field.
        read_together = {
            index: names
            for index, (_key, field) in enumerate(fields)
            if not isinstance(field, str) and len(names := _attribute_names(field[0])) == 1
        }
        if len(read_together) > 1:
            together = [name for (name,) in read_together.values()]
            targets = ", ".join(f"v{index}" for index in read_together)
            lines.append(f"    {targets} = {self.bind(attrgetter(*together), 'g')}(source)")
        else:
            read_together = {}
        items = []
        for index, (key, field) in enumerate(fields):
            if isinstance(field, str):  # __typename
                items.append(f"{key!r}: {field!r}")
                continue
            get, kind, non_null, detail = field
            v = f"v{index}"
            if index not in read_together:
                lines.append(f"    {v} = {self.bind(get, 'g')}(source)")
            self.value(v, kind, non_null, detail, "    ")
            items.append(f"{key!r}: {v}")
        lines.append(f"    return {{{', '.join(items)}}}")
        return name

    def list_function(self, kind: int, non_null: bool, detail: Any) -> str:
        """A list's function, given its items' (kind, non-null, detail)."""
        name = self.bind(None, "complete_list")
        lines = self.lines
        lines.append(f"def {name}(items):")
        if kind == _OBJECT and non_null:  # the object's function refuses None
            lines.append(f"    return [{self.bind(detail, 'o')}(item, None) for item in items]")
            return name
        lines.append("    completed = []")
        lines.append("    append = completed.append")
        lines.append("    for item in items:")
        self.value("item", kind, non_null, detail, "        ")
        lines.append("        append(item)")
        lines.append("    return completed")
        return name


def _attribute_names(get: Any) -> tuple[str, ...]:
    """The names an attrgetter reads (its pickling arguments), or () for another getter."""
    if get.__class__ is not attrgetter:
        return ()
    names: tuple[Any, ...] = tuple(get.__reduce__()[1])
    return names if all(isinstance(name, str) for name in names) else ()


def _getter(resolve: Any) -> Callable[[Any], Any]:
    """What Strawberry's plain resolver does with its source, as one call.

    `_get_basic_result(source, info)` is `field.get_result(source, None, [], {})`, which is
    `field.default_resolver(source, field.python_name)` for a field without a resolver
    function: with the default `getattr`, an attrgetter of the same name (two Python calls
    fewer per field). Another default resolver is called through Strawberry's resolver.
    """
    for cell in getattr(resolve, "__closure__", None) or ():
        field = cell.cell_contents
        if isinstance(field, StrawberryField):
            if field.is_basic_field and field.default_resolver is getattr:
                return attrgetter(field.python_name)
            break
    return partial(resolve, info=None)


# (type, ids of the field nodes) → (the field nodes, kept alive so their ids are not
# reused while the entry lives; the plan, or None when the selection cannot take the
# short cut). The nodes are those of the parse cache's documents (app/graphql/extensions.py),
# so a query sent again finds its plans; the cache is cleared when it reaches its bound.
_PLAN_CACHE_SIZE = 1024
_object_plans: dict[tuple[Any, ...], tuple[tuple[FieldNode, ...], Any]] = {}
_list_plans: dict[tuple[Any, ...], tuple[tuple[FieldNode, ...], Any]] = {}


def _strawberry_is_type_of(is_type_of: Any) -> bool:
    """Whether an is_type_of is the one Strawberry builds (isinstance; ignores the info)."""
    return getattr(is_type_of, "__qualname__", "").endswith("_get_is_type_of.<locals>.is_type_of")


# Operations executed before, by id (weakly: an entry goes with its operation, so an id is
# never another operation's): the object short cut is taken from an operation's second
# execution on. Compiling its plans costs about as much as executing it once through
# graphql-core, which a document sent only once (values written into the query text
# instead of variables) would pay for nothing.
_seen_operations: "WeakValueDictionary[int, Any]" = WeakValueDictionary()


def _weak_async_helpers(executor: Any) -> GraphQLResolveInfoHelpers:
    """`GraphQLResolveInfoHelpers(gather=executor.gather_async_work,
    track=executor.track_async_work)`, graphql-core's, without a strong reference back.

    While the executor lives (all through its execution) each call is the executor's own.
    After, nothing waits for tracked work any more: a helper called then (by a resolver
    that kept its info) does what those methods do without tracking: `gather` is
    `gather_with_cancel`, `track` settles the awaitables among the values in the
    background (or closes pending coroutines when no event loop runs).
    """
    ref = weakref.ref(executor)

    def gather(values: Sequence[Any]) -> Any:
        alive = ref()
        return gather_with_cancel(*values) if alive is None else alive.gather_async_work(values)

    def track(values: Sequence[Any]) -> None:
        alive = ref()
        if alive is not None:
            alive.track_async_work(values)
            return
        awaitables = [value for value in values if default_is_awaitable(value)]
        if not awaitables:
            return
        try:
            get_running_loop()
        except RuntimeError:
            for awaitable in awaitables:
                if iscoroutine(awaitable):
                    awaitable.close()
            return
        _settling.add(future := asyncio_gather(*awaitables, return_exceptions=True))
        future.add_done_callback(_settling.discard)

    return GraphQLResolveInfoHelpers(gather=gather, track=track)


# Work tracked after its executor went (see `_weak_async_helpers`), kept until settled.
_settling: set[Any] = set()


# -- the operation's preparation ---------------------------------------------------------
#
# graphql-core's `Executor.build` looks up the operation and the fragments of the document
# and works out each variable's signature (`type_from_ast`) on every request, then checks
# each variable's value is not nested too deeply before coercing it: ~8 µs of an append.
# `_Prepared` keeps what depends on the document alone (per cached parsed document, as
# the plans are), and the nesting check is skipped for a type too shallow to fail it.


class _Prepared:
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
                    _input_depth(signature.type, ()) <= MAX_NESTING_DEPTH,
                    _coercer(signature.type, ()),
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
            except Exception:  # noqa: BLE001 - graphql-core's path raises or reports it
                return None
            if coerced_value is Undefined:
                return None
            coerced[name] = coerced_value
        return VariableValues(sources, coerced)


# -- variable values ----------------------------------------------------------------------
#
# graphql-core's `coerce_input_value` walks a variable's type generically for every value:
# for an AppendMemoryEventInput, 11 recursive calls each testing non-null, list, input
# object and leaf (~9% of an append's CPU in process, cProfile). `_coercer` does that walk
# once per variable definition (with the prepared document) and returns a function doing
# what `coerce_input_value` does for a value of that type: non-null, null, leaves (the
# type's own `coerce_input_value`, an error making the value invalid), lists given as
# Python lists, input objects (unknown fields, required fields, defaults through
# graphql-core's memoised `coerce_default_value`, `out_name`, `out_type`). What it does
# not do is graphql-core's own function: OneOf input objects, a recursive input type,
# a list given as another iterable or a single value. Its answer is only used when it is
# a value: Undefined (invalid) or an exception sends the whole request to graphql-core's
# `coerce_variable_values`, whose errors are reported (tests/graphql/test_coercers.py
# holds both equal over the schema's input types and generated values).


def _coercer(type_: Any, seen: tuple[Any, ...]) -> Callable[[Any], Any]:
    if isinstance(type_, GraphQLNonNull):
        inner = _coercer(type_.of_type, seen)

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
            except Exception:  # noqa: BLE001 - graphql-core's: invalid
                return Undefined

        return leaf
    if isinstance(type_, GraphQLList):
        item = _coercer(type_.of_type, seen)

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
                _coercer(field.type, (*seen, type_)),
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


def _ref_map() -> RefMap[Any, Any]:
    # `RefMap()`: its `__init__` (through MutableMapping's) leaves an empty `_map`.
    ref_map: RefMap[Any, Any] = RefMap.__new__(RefMap)
    ref_map._map = {}
    return ref_map


def _input_depth(type_: Any, seen: tuple[Any, ...]) -> float:
    """The most list and input-object levels a value of `type_` can nest (what graphql-core's
    `input_is_nested_too_deeply` counts); infinite for a recursive input type."""
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if isinstance(type_, GraphQLList):
        return 1 + _input_depth(type_.of_type, seen)
    if isinstance(type_, GraphQLInputObjectType):
        if type_ in seen:
            return float("inf")
        inner = [_input_depth(f.type, (*seen, type_)) for f in type_.fields.values()]
        return 1 + max(inner, default=0)
    return 0


# (schema id, document id, operation name) → the _Prepared, or None when graphql-core's
# own build must run (no such operation, fragment variables...). Entries keep the schema
# and document, so their ids are not reused while the entry lives.
_prepared: dict[tuple[int, int, str | None], tuple[Any, Any, _Prepared | None]] = {}


def _prepare(schema: Any, document: Any, operation_name: str | None) -> _Prepared | None:
    key = (id(schema), id(document), operation_name)
    entry = _prepared.get(key)
    if entry is not None and entry[0] is schema and entry[1] is document:
        return entry[2]
    operation: Any = None
    fragments: dict[str, FragmentDetails] = {}
    prepared: _Prepared | None = None
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
        prepared = _Prepared(schema, document, operation, fragments)
    except _Unsupported:
        prepared = None
    if len(_prepared) >= _PLAN_CACHE_SIZE:
        _prepared.clear()
    _prepared[key] = (schema, document, prepared)
    return prepared


class JetExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context, with the short cuts for plain fields and objects."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # graphql-core's helpers for resolvers (`info.async_helpers`) are bound methods of
        # the executor, kept on the executor: a reference cycle, so every request's
        # executor, with its context (the request, the response...) and all it holds,
        # was freed only by the cyclic garbage collector (~40 objects a request, and the
        # collections they trigger). The same helpers, reaching the executor weakly.
        self.async_helpers = _weak_async_helpers(self)
        operation = self.operation
        self._objects_short_cut = _seen_operations.get(id(operation)) is operation
        if not self._objects_short_cut:
            _seen_operations[id(operation)] = operation

    @classmethod
    def _create(
        cls,
        prepared: "_Prepared",
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
    ) -> "JetExecutionContext":
        """`cls(...)` as `build` calls it (default resolvers, no early execution), with
        the attributes set here instead of through four `__init__`s: graphql-core's
        `Executor` and `IncrementalExecutor`, Strawberry's (operation_extensions) and
        ours. ~5 µs of a `{ __typename }` operation went into that chain (keyword
        arguments passed on twice, the resolver helpers made and replaced, three
        RefMaps through MutableMapping's `__init__`, the error-propagation directive
        looked for in the operation, which `_Prepared` knows). The same attributes with
        the same values (tests/graphql/test_prepared_build.py compares `vars()`)."""
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
        # ours (as __init__ above)
        self.async_helpers = _weak_async_helpers(self)
        self._objects_short_cut = _seen_operations.get(id(operation)) is operation
        if not self._objects_short_cut:
            _seen_operations[id(operation)] = operation
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
        """graphql-core's `Executor.build` with the document's part prepared once
        (`_Prepared`); anything unusual (an error to report, a variable left to its
        default, fragment variables, middleware of another kind) is its own."""
        arguments = (
            schema, document, root_value, context_value, raw_variable_values, operation_name,
            field_resolver, type_resolver, subscribe_field_resolver, max_coercion_errors,
            enable_early_execution, middleware, is_awaitable, is_async_iterable,
        )  # fmt: skip
        options = {
            "hide_suggestions": hide_suggestions,
            "abort_signal": abort_signal,
            "hooks": hooks,
            **custom_args,
        }
        prepared = (
            _prepare(schema, document, operation_name)
            if middleware is None or isinstance(middleware, list | tuple | MiddlewareManager)
            else None
        )
        variable_values = (
            None if prepared is None else prepared.variable_values(raw_variable_values or {})
        )
        if prepared is None or variable_values is None:
            return super().build(*arguments, **options)
        assert_valid_schema(schema)
        if (
            cls.__init__ is JetExecutionContext.__init__
            and field_resolver is None
            and type_resolver is None
            and subscribe_field_resolver is None
            and not enable_early_execution
            and isinstance(middleware, MiddlewareManager | None)
            and set(custom_args) <= {"operation_extensions"}
        ):
            return cls._create(
                prepared, root_value, context_value, variable_values, middleware,
                is_awaitable, is_async_iterable, hide_suggestions, abort_signal, hooks,
                custom_args.get("operation_extensions"),
            )  # fmt: skip
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
            # with a `resolve` hook: none here).
            middleware
            if middleware is None or isinstance(middleware, MiddlewareManager)
            else MiddlewareManager(*middleware),
            is_awaitable,
            is_async_iterable,
            **options,
        )

    def _shortcuts_on(self) -> bool:
        manager = self.middleware_manager
        return manager is None or manager._middleware_resolvers is None

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Any,
        position_context: Any,
    ) -> Any:
        node = field_details_list[0].node
        key = (parent_type, node.name.value)
        try:
            plan = _plans[key]
        except KeyError:
            plan = _plans[key] = _plan(self.schema.get_field(parent_type, node.name.value))
        if plan is not None and not node.arguments and self._shortcuts_on():
            resolve, leaf, non_null = plan
            try:
                value = resolve(source, None)  # Strawberry's plain resolver ignores info
                if value is None:
                    if not non_null:
                        return None
                elif not isinstance(value, Exception) and not self.is_awaitable(value):
                    coerced = leaf.coerce_output_value(value)
                    if coerced is not None and coerced is not Undefined:
                        return coerced
            except Exception:  # noqa: S110 - graphql-core's path below reports it
                pass
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )

    # -- the object and list short cut -------------------------------------------------

    def complete_object_value(
        self,
        return_type: GraphQLObjectType,
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        if self._objects_short_cut and position_context is None and self._shortcuts_on():
            plan = self._plan_for(_object_plans, return_type, field_details_list)
            if plan is not None:
                try:
                    return plan(result, info)
                except Exception:  # noqa: S110 - graphql-core's path below reports it
                    pass
        return super().complete_object_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def complete_list_value(
        self,
        return_type: GraphQLList[GraphQLOutputType],
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        if (
            self._objects_short_cut
            and position_context is None
            and (result.__class__ is list or result.__class__ is tuple)
            and self._shortcuts_on()
        ):
            plan = self._plan_for(_list_plans, return_type, field_details_list)
            if plan is not None:
                try:
                    return plan[2](result)
                except Exception:  # noqa: S110 - graphql-core's path below reports it
                    pass
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def _plan_for(
        self,
        cache: dict[tuple[Any, ...], tuple[tuple[FieldNode, ...], Any]],
        type_: Any,
        field_details_list: Sequence[FieldDetails],
    ) -> Any:
        """The cached plan of `type_` for these field nodes, or None."""
        for details in field_details_list:
            # Per execution, not per node: a @defer further up, or fragment variables.
            if details.defer_usage is not None or details.fragment_variable_values is not None:
                return None
        nodes = tuple(details.node for details in field_details_list)
        # The compiled functions call this executor class's is_awaitable.
        key = (type_, self.is_awaitable, *map(id, nodes))
        try:
            return cache[key][1]
        except KeyError:
            pass
        if len(cache) >= _PLAN_CACHE_SIZE:
            cache.clear()
        # The arguments and directives of the field itself were dealt with by now (its
        # resolver had them, @include and @skip were evaluated), except @stream on a list.
        plan: Any = None
        if cache is _object_plans:
            plan = self._object_plan(type_, field_details_list)
        elif all(not node.directives for node in nodes):
            plan = self._type_plan(type_, field_details_list)
        cache[key] = (nodes, plan)
        return plan

    def _plain_selections(self, selection_set: SelectionSetNode | None, seen: set[str]) -> bool:
        """No directive and no argument in a selection set (through its fragments), nor
        anything the plan does not know (fragment variables, unknown fragments)."""
        if selection_set is None:
            return True
        for selection in selection_set.selections:
            if selection.directives:
                return False
            if isinstance(selection, FieldNode):
                if selection.arguments:
                    return False
            elif isinstance(selection, InlineFragmentNode):
                if not self._plain_selections(selection.selection_set, seen):
                    return False
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name in seen:
                    continue
                seen.add(name)
                fragment = self.fragments.get(name)
                if (
                    fragment is None
                    or fragment.variable_signatures
                    or fragment.definition.directives
                    or fragment.definition.variable_definitions
                    or not self._plain_selections(fragment.definition.selection_set, seen)
                ):
                    return False
            else:
                return False
        return True

    def _object_plan(
        self, type_: GraphQLObjectType, field_details_list: Sequence[FieldDetails]
    ) -> _Complete | None:
        """The compiled function of `type_` for these field nodes, or None."""
        is_type_of = type_.is_type_of
        if is_type_of is not None and not _strawberry_is_type_of(is_type_of):
            return None
        for details in field_details_list:
            if (
                details.defer_usage is not None
                or details.fragment_variable_values is not None
                or not self._plain_selections(details.node.selection_set, set())
            ):
                return None
        grouped, new_defer_usages, forbidden = collect_subfields(
            self.schema,
            self.fragments,
            self.variable_values,
            self.operation,
            type_,
            list(field_details_list),
            self.hide_suggestions,
        )
        if new_defer_usages or forbidden or not grouped:
            return None
        fields: list[tuple[str, Any]] = []
        for response_key, sub_details in grouped.items():
            nodes = [details.node for details in sub_details]
            if any(node.arguments or node.directives for node in nodes):
                return None
            name = nodes[0].name.value
            if name == "__typename":
                fields.append((response_key, type_.name))
                continue
            field_def = type_.fields.get(name)
            if field_def is None or field_def.args or not _is_plain_resolver(field_def.resolve):
                return None
            type_plan = self._type_plan(field_def.type, sub_details)
            if type_plan is None:
                return None
            fields.append((response_key, (_getter(field_def.resolve), *type_plan)))
        compiler = _Compiler(self.is_awaitable)
        return compiler.build(compiler.object_function(is_type_of, fields))  # type: ignore[no-any-return]

    def _type_plan(
        self, type_: Any, field_details_list: Sequence[FieldDetails]
    ) -> tuple[int, bool, Any] | None:
        """(kind, non-null, detail) of a value of `type_`: the leaf type, the object's
        compiled function, or the list's compiled function; or None."""
        non_null = isinstance(type_, GraphQLNonNull)
        inner = type_.of_type if non_null else type_
        if is_leaf_type(inner):
            return _LEAF, non_null, inner
        if isinstance(inner, GraphQLList):
            item = self._type_plan(inner.of_type, field_details_list)
            if item is None:
                return None
            compiler = _Compiler(self.is_awaitable)
            return _LIST, non_null, compiler.build(compiler.list_function(*item))
        if isinstance(inner, GraphQLObjectType):
            complete = self._object_plan(inner, field_details_list)
            return None if complete is None else (_OBJECT, non_null, complete)
        return None  # interfaces and unions: graphql-core resolves the runtime type


# -- input objects --------------------------------------------------------------------------
#
# Strawberry converts each argument's input object (`AppendMemoryEventInput`, a filter...)
# with `convert_argument`, generic code that for every field of every request converts its
# name, resolves its type annotation and walks a chain of isinstance checks: ~60 µs for
# one AppendMemoryEventInput. Its documented hook for input types that build their own
# value, `StrawberryObjectDefinition.from_input`, is given an `_InputBuilder`: the same
# conversion with the names and each field's converter worked out once per schema config.


class _Unsupported(Exception):  # noqa: N818 - "leave this type to Strawberry's code"
    pass


# A converter of one field's input value: None when the value is kept as it is.
_Convert = Callable[[Any, Any], Any] | None


def _has_maybe(definition: Any) -> bool:
    # A `Maybe` field's nulls are checked by a validation rule that skips types with a
    # `from_input` (they are expected to check them): such types keep Strawberry's path.
    return any(isinstance(field.type, StrawberryMaybe) for field in definition.fields)


class _InputBuilder:
    """`from_input` of an input type: what Strawberry's `convert_argument` does for it.

    For each (config, scalar registry) it sees, the input field names (the config's name
    converter), the fields defaulting to None, and a converter per field's type are
    worked out once: a leaf (scalar or enum, but a GlobalID) is kept, a list of leaves is
    copied, a list of other values is converted item by item, an input type is built by
    its own `_InputBuilder`. A type with anything else (a GlobalID, a nested type with
    another `from_input`...) is converted by a copy of Strawberry's own code for input
    types without a `from_input` (`_generic`).
    """

    def __init__(self, definition: Any) -> None:
        self.definition = definition
        self._plans: dict[tuple[int, int], tuple[Any, Any, Any]] = {}

    def __call__(self, cls: type, value: Any, context: Any) -> Any:
        key = (id(context.config), id(context.scalar_registry))
        try:
            _config, _registry, plan = self._plans[key]
        except KeyError:
            try:
                plan = self._plan(context.config, context.scalar_registry)
            except _Unsupported:
                plan = None
            # The config and registry are kept, so their ids are not reused.
            self._plans[key] = (context.config, context.scalar_registry, plan)
        if plan is None:
            return self._generic(cls, value, context)
        defaults, fields = plan
        kwargs = dict(defaults)
        for graphql_name, python_name, convert in fields:
            if graphql_name in value:
                field_value = value[graphql_name]
                kwargs[python_name] = (
                    field_value if convert is None else convert(field_value, context)
                )
        return cls(**kwargs)

    def _plan(self, config: Any, registry: Any) -> tuple[Any, Any]:
        definition = self.definition
        defaults = {
            field.python_name: None
            for field in definition.fields
            if field.default_value is MISSING and field.default_factory is MISSING
        }
        fields = tuple(
            (
                config.name_converter.from_field(field),
                field.python_name,
                _converter(field.resolve_type(type_definition=definition), registry),
            )
            for field in definition.fields
        )
        return defaults, fields

    def _generic(self, cls: type, value: Any, context: Any) -> Any:
        """Strawberry's `convert_argument` for an input type without a `from_input`."""
        definition, config = self.definition, context.config
        kwargs: dict[str, Any] = {
            field.python_name: None
            for field in definition.fields
            if field.default_value is MISSING and field.default_factory is MISSING
        }
        for field in definition.fields:
            graphql_name = config.name_converter.from_field(field)
            if graphql_name in value:
                kwargs[field.python_name] = convert_argument(
                    value[graphql_name],
                    field.resolve_type(type_definition=definition),
                    context.scalar_registry,
                    config,
                    context.info,
                    path=(*context.path, graphql_name),
                )
        return cls(**kwargs)


def _converter(type_: Any, registry: Any) -> _Convert:
    """What `convert_argument` does with a value of `type_`, as a function (or None: the
    value as it is), or _Unsupported."""
    if isinstance(type_, StrawberryMaybe):
        raise _Unsupported
    if isinstance(type_, StrawberryOptional):  # None stays None, as below
        return _converter(type_.of_type, registry)
    if isinstance(type_, StrawberryList):
        item = type_.of_type
        if _is_leaf_type(item, registry, skip_classes=(GlobalID,)) or _is_optional_leaf_type(
            item, registry, skip_classes=(GlobalID,)
        ):
            return _copy_list
        convert_item = _converter(item, registry)
        if convert_item is None:  # pragma: no cover - leaves are copied above
            return _copy_list

        def convert_list(value: Any, context: Any) -> Any:
            if value is None or value is UNSET:
                return value
            return [None if item is None else convert_item(item, context) for item in value]

        return convert_list
    if type_ is GlobalID:
        raise _Unsupported
    if _is_leaf_type(type_, registry):
        return None
    if isinstance(type_, LazyType):
        return _converter(type_.resolve_type(), registry)
    if has_enum_definition(type_):
        return None  # an enum definition is a leaf: the value as it is
    if has_object_definition(type_):
        builder = type_.__strawberry_definition__.from_input
        if not isinstance(builder, _InputBuilder):
            raise _Unsupported
        input_type = type_

        def convert_input(value: Any, context: Any) -> Any:
            if value is None or value is UNSET:
                return value
            return builder(input_type, value, context)

        return convert_input
    raise _Unsupported


def _copy_list(value: Any, context: Any) -> Any:
    # Copied: graphql-core gives every request that omits it the same default list.
    return value if value is None or value is UNSET else list(value)


def install_input_builders(schema: Any) -> None:
    """Give the schema's input types without a `from_input` (and without `Maybe` fields)
    an `_InputBuilder`. Converts exactly as Strawberry would; called by build_schema."""
    for concrete in schema.schema_converter.type_map.values():
        definition = concrete.definition
        if (
            isinstance(definition, StrawberryObjectDefinition)
            and definition.is_input
            and definition.from_input is None
            and not _has_maybe(definition)
        ):
            definition.from_input = _InputBuilder(definition)


# -- resolvers of fields with a resolver function ---------------------------------------------
#
# Strawberry's resolver of a field with a resolver function (`from_resolver`: an Info, then
# `get_arguments` → `convert_arguments`, the field extensions' chain (a functools.reduce of
# partials, even without extensions), `field.get_result`, `await_maybe`) costs ~30 µs for
# `memoryEvents(filter:, first:)`, most of it `convert_argument`'s generic walk of each
# argument's type. `install_fast_resolvers` gives the GraphQL field of each such Strawberry
# field that has nothing unusual (no field extensions, so no permission classes; no
# exception handler for it; no `self` parameter; arguments `_converter` knows) a resolver
# doing the same: the same Info, each argument converted by its converter worked out once
# (as `_InputBuilder` does for input fields), the root/parent and info parameters, then
# the resolver function, awaited in a coroutine when it is async (as Strawberry's is).


def _fast_resolver(field: StrawberryField, resolve: Any, schema: Any) -> Any:
    """A resolver doing what Strawberry's `resolve` does for `field`, or None."""
    converter = schema.schema_converter
    resolver = field.base_resolver
    if (
        resolver is None
        or field.extensions
        or field.is_subscription
        or getattr(resolve, "__name__", None) not in ("_resolver", "_async_resolver")
        or getattr(resolve, "_is_default", True) is not False
        or resolver.self_parameter is not None
        or not callable(resolver.wrapped_func)
    ):
        return None
    # Strawberry's own check, at build time (a private method: pinned by a test).
    if converter._get_field_exception_handlers(field):
        return None
    config, registry = schema.config, converter.scalar_registry
    try:
        arguments = tuple(
            (
                config.name_converter.from_argument(argument),
                argument.python_name,
                _converter(argument.type, registry),
            )
            for argument in field.arguments
        )
    except _Unsupported:
        return None
    passed = tuple(
        parameter.name
        for parameter in (resolver.root_parameter, resolver.parent_parameter)
        if parameter is not None
    )
    info_name = None if resolver.info_parameter is None else resolver.info_parameter.name
    function, info_class = resolver.wrapped_func, config.info_class

    def call(source: Any, info: Any, args: dict[str, Any]) -> Any:
        strawberry_info = info_class(_raw_info=info, _field=field)
        kwargs: dict[str, Any] = {}
        for graphql_name, python_name, convert in arguments:
            if graphql_name in args:
                value = args[graphql_name]
                if convert is not None:
                    value = convert(
                        value, InputContext(strawberry_info, config, registry, (graphql_name,))
                    )
                kwargs[python_name] = value
        for name in passed:
            kwargs[name] = source
        if info_name is not None:
            kwargs[info_name] = strawberry_info
        return function(**kwargs)

    if field.is_async:

        async def resolve_async(_source: Any, info: Any, **args: Any) -> Any:
            result = call(_source, info, args)
            return (await result) if isawaitable(result) else result

        resolve_async._is_default = False  # type: ignore[attr-defined]
        return resolve_async

    def resolve_sync(_source: Any, info: Any, **args: Any) -> Any:
        return call(_source, info, args)

    resolve_sync._is_default = False  # type: ignore[attr-defined]
    return resolve_sync


def install_fast_resolvers(schema: Any) -> None:
    """Give the GraphQL fields of Strawberry fields with a resolver function the resolver
    of `_fast_resolver`, where it applies. Called by build_schema."""
    for gql_type in schema._schema.type_map.values():
        if not isinstance(gql_type, GraphQLObjectType) or gql_type.name.startswith("__"):
            continue
        for gql_field in gql_type.fields.values():
            field = (gql_field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
            if isinstance(field, StrawberryField):
                fast = _fast_resolver(field, gql_field.resolve, schema)
                if fast is not None:
                    gql_field.resolve = fast
