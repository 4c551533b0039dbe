"""Plans of the executor short cut: which fields are plain attribute reads, and the Python
functions compiled from a selection that build an object's or a list's response value.

Used only by app/graphql/fastpath/executor.py; touches Strawberry's and graphql-core's
private names listed in docs/fast-paths.md (pinned in pyproject.toml).
"""

from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from functools import partial
from operator import attrgetter
from types import CoroutineType, GeneratorType
from typing import Any
from uuid import UUID

from graphql import (
    FieldNode,
    GraphQLField,
    GraphQLLeafType,
    GraphQLNonNull,
    Undefined,
    is_leaf_type,
)
from graphql.pyutils import is_awaitable as default_is_awaitable
from graphql.type.scalars import serialize_boolean, serialize_id, serialize_int, serialize_string
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.schema.schema_converter import CustomGraphQLEnumType
from strawberry.types.field import StrawberryField

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


class Fallback(Exception):  # noqa: N818 - not an error: "take graphql-core's path"
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
