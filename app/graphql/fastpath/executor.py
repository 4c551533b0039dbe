"""The executor short cut: plain fields and plain objects completed without graphql-core's
per-field machinery (resolve info, `complete_value` walk, path per item). Its plans say
which fields are plain attribute reads and compile, from a selection, the functions that
build an object's or a list's response value; its resolver helpers
(`info.async_helpers`) come without the executor's reference cycle, so a request's
executor and all it holds are freed at once, not by the collector.
"""

import weakref
from asyncio import gather as asyncio_gather
from asyncio import get_running_loop, iscoroutine
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from functools import partial
from operator import attrgetter
from types import CoroutineType, GeneratorType
from typing import Any
from uuid import UUID
from weakref import WeakValueDictionary

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfoHelpers,
    InlineFragmentNode,
    SelectionSetNode,
    Undefined,
    is_leaf_type,
)
from graphql.execution.collect_fields import FieldDetails, collect_subfields
from graphql.pyutils import is_awaitable as default_is_awaitable
from graphql.pyutils.gather_with_cancel import gather_with_cancel
from graphql.type.scalars import serialize_boolean, serialize_id, serialize_int, serialize_string
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import CustomGraphQLEnumType
from strawberry.types.field import StrawberryField


def weak_async_helpers(executor: Any) -> GraphQLResolveInfoHelpers:
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


# Work tracked after its executor went (see `weak_async_helpers`), kept until settled.
_settling: set[Any] = set()


# (parent type, field name) → (resolver, leaf type, non-null) for a field that may take the
# short cut, or None. Types are built once per schema, so this is bounded by the schema.
Plan = tuple[Any, GraphQLLeafType, bool] | None
field_plans: dict[tuple[Any, str], Plan] = {}


def is_plain_resolver(resolve: Any) -> bool:
    """Strawberry's resolver of a field without a resolver function and without field
    extensions: a plain attribute read that ignores its info (`_get_basic_result`).

    Strawberry also marks a field with extensions (permission classes...) but no resolver
    function as `_is_default`; that resolver needs the info, so it is not plain.
    """
    return bool(getattr(resolve, "_is_default", False)) and (
        getattr(resolve, "__name__", None) == "_get_basic_result"
    )


def field_plan(field_def: GraphQLField | None) -> Plan:
    if field_def is None or field_def.args or not is_plain_resolver(field_def.resolve):
        return None
    field_type = field_def.type
    non_null = isinstance(field_type, GraphQLNonNull)
    leaf = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
    if not is_leaf_type(leaf):
        return None
    return field_def.resolve, leaf, non_null


class Fallback(Exception):
    """Something unusual: complete this object or list with graphql-core's own path."""


# A compiled plan: a function that builds the response value of one object (source, info)
# or one list (items) straight from the source values, or raises (Fallback, or whatever a
# read or a coercion raised) for graphql-core's own path to take over. Made by `Compiler`
# from the selection, once per (type, field nodes); the functions are plain Python source
# (`exec`) so a page of objects costs a dict display per object and a few lines per field.
Complete = Callable[..., Any]
LEAF, OBJECT, LIST = 0, 1, 2


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


class Compiler:
    """Writes the Python source of a plan's functions, then runs it (`exec`).

    Each name the source uses (getters, coercers, nested functions, enum maps) is bound
    in the namespace by `bind`; response keys are GraphQL names, written with repr.
    """

    def __init__(self, is_awaitable: Callable[[Any], bool]) -> None:
        known = is_awaitable in _KNOWN_IS_AWAITABLE
        self.namespace: dict[str, Any] = {
            "_Fallback": Fallback,
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
        exec("\n".join(self.lines), self.namespace)
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
        if kind == LEAF:
            self.leaf(v, non_null, detail, indent)
            return
        lines = self.lines
        lines.append(f"{indent}if {v} is None:")
        lines.append(f"{indent}    {'raise _Fallback' if non_null else 'pass'}")
        if kind == OBJECT:
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
        if kind == OBJECT and non_null:  # the object's function refuses None
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


def getter(resolve: Any) -> Callable[[Any], Any]:
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
# short cut). The nodes are those of the parse cache's documents (Strawberry's ParserCache),
# so a query sent again finds its plans; the cache is cleared when it reaches its bound.
PLAN_CACHE_SIZE = 1024
object_plans: dict[tuple[Any, ...], tuple[tuple[FieldNode, ...], Any]] = {}
list_plans: dict[tuple[Any, ...], tuple[tuple[FieldNode, ...], Any]] = {}


def strawberry_is_type_of(is_type_of: Any) -> bool:
    """Whether an is_type_of is the one Strawberry builds (isinstance; ignores the info)."""
    return getattr(is_type_of, "__qualname__", "").endswith("_get_is_type_of.<locals>.is_type_of")


# Operations executed before, by id (weakly: an entry goes with its operation, so an id is
# never another operation's): the object short cut is taken from an operation's second
# execution on. Compiling its plans costs about as much as executing it once through
# graphql-core, which a document sent only once (values written into the query text
# instead of variables) would pay for nothing.
seen_operations: "WeakValueDictionary[int, Any]" = WeakValueDictionary()


class PlannedExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context, with the short cuts for plain fields and objects."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # graphql-core keeps its resolver helpers (bound methods) on the executor: a cycle
        # that only the collector frees, with the request and all it holds.
        self.async_helpers = weak_async_helpers(self)
        operation = self.operation
        self._objects_short_cut = seen_operations.get(id(operation)) is operation
        if not self._objects_short_cut:
            seen_operations[id(operation)] = operation

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
            plan = field_plans[key]
        except KeyError:
            plan = field_plans[key] = field_plan(
                self.schema.get_field(parent_type, node.name.value)
            )
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
            except Exception:
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
            plan = self._plan_for(object_plans, return_type, field_details_list)
            if plan is not None:
                try:
                    return plan(result, info)
                except Exception:
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
            plan = self._plan_for(list_plans, return_type, field_details_list)
            if plan is not None:
                try:
                    return plan[2](result)
                except Exception:
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
        if len(cache) >= PLAN_CACHE_SIZE:
            cache.clear()
        # The arguments and directives of the field itself were dealt with by now (its
        # resolver had them, @include and @skip were evaluated), except @stream on a list.
        plan: Any = None
        if cache is object_plans:
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
    ) -> Complete | None:
        """The compiled function of `type_` for these field nodes, or None."""
        is_type_of = type_.is_type_of
        if is_type_of is not None and not strawberry_is_type_of(is_type_of):
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
            if field_def is None or field_def.args or not is_plain_resolver(field_def.resolve):
                return None
            type_plan = self._type_plan(field_def.type, sub_details)
            if type_plan is None:
                return None
            fields.append((response_key, (getter(field_def.resolve), *type_plan)))
        compiler = Compiler(self.is_awaitable)
        return compiler.build(compiler.object_function(is_type_of, fields))  # type: ignore[no-any-return]

    def _type_plan(
        self, type_: Any, field_details_list: Sequence[FieldDetails]
    ) -> tuple[int, bool, Any] | None:
        """(kind, non-null, detail) of a value of `type_`: the leaf type, the object's
        compiled function, or the list's compiled function; or None."""
        non_null = isinstance(type_, GraphQLNonNull)
        inner = type_.of_type if non_null else type_
        if is_leaf_type(inner):
            return LEAF, non_null, inner
        if isinstance(inner, GraphQLList):
            item = self._type_plan(inner.of_type, field_details_list)
            if item is None:
                return None
            compiler = Compiler(self.is_awaitable)
            return LIST, non_null, compiler.build(compiler.list_function(*item))
        if isinstance(inner, GraphQLObjectType):
            complete = self._object_plan(inner, field_details_list)
            return None if complete is None else (OBJECT, non_null, complete)
        return None  # interfaces and unions: graphql-core resolves the runtime type
