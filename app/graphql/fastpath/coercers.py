"""Variable coercers compiled per variable definition: what graphql-core's
`coerce_input_value` does for a value of one type, with the type walked once.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

from graphql import (
    GraphQLInputObjectType,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    Undefined,
)
from graphql.type.definition import is_required_input_field
from graphql.utilities.coerce_input_value import coerce_default_value, coerce_input_value

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
            except Exception:  # noqa: BLE001 - graphql-core's: invalid
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
