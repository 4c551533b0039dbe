"""Argument-converting resolvers: the resolvers of one schema's fields with a resolver
function replaced by ones converting their arguments with names and converters worked out
once for that schema, instead of Strawberry's generic `convert_argument` per request.

Installed on the graphql-core fields of one schema (`install`); Strawberry's shared type
definitions (`from_input`, `StrawberryField`) are read, never changed, so a stock schema
of the same types in the same process keeps Strawberry's own resolvers.
"""

from collections.abc import Callable
from dataclasses import MISSING
from inspect import isawaitable
from typing import Any

import strawberry
from graphql import GraphQLObjectType
from strawberry.relay.types import GlobalID
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.arguments import _is_leaf_type, _is_optional_leaf_type
from strawberry.types.base import (
    StrawberryList,
    StrawberryMaybe,
    StrawberryOptional,
    has_object_definition,
)
from strawberry.types.enum import has_enum_definition
from strawberry.types.field import StrawberryField
from strawberry.types.lazy_type import LazyType
from strawberry.types.unset import UNSET

# Off only to measure this short cut alone (bench), read when a schema is built; the switch
# is Settings.graphql_fast_path.
_enabled = True

# A converter of one input value: None when the value is kept as it is.
Convert = Callable[[Any], Any] | None


class _Unsupported(Exception):
    pass


class _InputBuilder:
    """What `convert_argument` does for a value of one input type (no `from_input` of its
    own, no `Maybe` field): the fields defaulting to None, each field's name and converter
    worked out once."""

    def __init__(self, cls: type, defaults: dict[str, None]) -> None:
        self.cls = cls
        self.defaults = defaults
        self.fields: tuple[tuple[str, str, Convert], ...] = ()

    def __call__(self, value: Any) -> Any:
        if value is None or value is UNSET:
            return value
        kwargs: dict[str, Any] = dict(self.defaults)
        for graphql_name, python_name, convert in self.fields:
            if graphql_name in value:
                field_value = value[graphql_name]
                kwargs[python_name] = field_value if convert is None else convert(field_value)
        return self.cls(**kwargs)


class Converters:
    """The converters of one schema's argument types (its config and scalar registry)."""

    def __init__(self, schema: strawberry.Schema) -> None:
        self.config = schema.config
        self.registry = schema.schema_converter.scalar_registry
        self._builders: dict[type, _InputBuilder | None] = {}
        self._building: set[type] = set()

    def converter(self, type_: Any) -> Convert:
        """What `convert_argument` does with a value of `type_`, as a function (None: the
        value as it is), or _Unsupported (a GlobalID, a `Maybe`, a `from_input`...)."""
        registry = self.registry
        if isinstance(type_, StrawberryMaybe):
            raise _Unsupported
        if isinstance(type_, StrawberryOptional):  # None stays None, as below
            return self.converter(type_.of_type)
        if isinstance(type_, StrawberryList):
            item = type_.of_type
            if _is_leaf_type(item, registry, skip_classes=(GlobalID,)) or _is_optional_leaf_type(
                item, registry, skip_classes=(GlobalID,)
            ):
                return _copy_list
            convert_item = self.converter(item)
            if convert_item is None:  # pragma: no cover - leaves are copied above
                return _copy_list
            return _list_converter(convert_item)
        if type_ is GlobalID:
            raise _Unsupported
        if _is_leaf_type(type_, registry):
            return None
        if isinstance(type_, LazyType):
            return self.converter(type_.resolve_type())
        if has_enum_definition(type_):
            return None  # an enum definition is a leaf: the value as it is
        if has_object_definition(type_):
            return self._builder(type_)
        raise _Unsupported

    def _builder(self, cls: type) -> _InputBuilder:
        if cls in self._builders:
            builder = self._builders[cls]
            if builder is None:
                raise _Unsupported
            return builder
        definition = cls.__strawberry_definition__  # type: ignore[attr-defined]
        if (
            not definition.is_input
            or definition.from_input is not None
            or cls in self._building  # a recursive input type: Strawberry's code
            # A `Maybe` field's nulls are checked by a validation rule that skips types
            # with a `from_input`; Strawberry's own conversion keeps its error.
            or any(isinstance(field.type, StrawberryMaybe) for field in definition.fields)
        ):
            raise _Unsupported
        self._building.add(cls)
        try:
            builder = _InputBuilder(
                cls,
                {
                    field.python_name: None
                    for field in definition.fields
                    if field.default_value is MISSING and field.default_factory is MISSING
                },
            )
            builder.fields = tuple(
                (
                    self.config.name_converter.from_field(field),
                    field.python_name,
                    self.converter(field.resolve_type(type_definition=definition)),
                )
                for field in definition.fields
            )
        except _Unsupported:
            self._builders[cls] = None
            raise
        finally:
            self._building.discard(cls)
        self._builders[cls] = builder
        return builder


def _list_converter(convert_item: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert_list(value: Any) -> Any:
        if value is None or value is UNSET:
            return value
        return [None if item is None else convert_item(item) for item in value]

    return convert_list


def _copy_list(value: Any) -> Any:
    # Copied: graphql-core gives every request that omits it the same default list.
    return value if value is None or value is UNSET else list(value)


# Strawberry's resolver of a field with a resolver function (`from_resolver`: an Info, then
# `get_arguments` → `convert_arguments`, the field extensions' chain, `field.get_result`,
# `await_maybe`). `fast_resolver` does the same for a field with nothing unusual (no field
# extensions, so no permission classes; no exception handler; no `self` parameter;
# arguments `Converters` knows): the same Info, each argument converted by its converter,
# the root/parent and info parameters, then the function, awaited when it is async.


def fast_resolver(
    field: StrawberryField, resolve: Any, schema: strawberry.Schema, converters: Converters
) -> Any:
    """A resolver doing what Strawberry's `resolve` does for `field`, or None."""
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
    if schema.schema_converter._get_field_exception_handlers(field):
        return None
    config = schema.config
    try:
        arguments = tuple(
            (
                config.name_converter.from_argument(argument),
                argument.python_name,
                converters.converter(argument.type),
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
        kwargs: dict[str, Any] = {}
        for graphql_name, python_name, convert in arguments:
            if graphql_name in args:
                value = args[graphql_name]
                kwargs[python_name] = value if convert is None else convert(value)
        for name in passed:
            kwargs[name] = source
        if info_name is not None:
            kwargs[info_name] = info_class(_raw_info=info, _field=field)
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


def install(schema: strawberry.Schema) -> int:
    """Give the graphql-core fields of this schema whose Strawberry field has a resolver
    function the resolver of `fast_resolver`, where it applies; how many were given one."""
    if not _enabled:
        return 0
    converters = Converters(schema)
    installed = 0
    for gql_type in schema._schema.type_map.values():
        if not isinstance(gql_type, GraphQLObjectType) or gql_type.name.startswith("__"):
            continue
        for gql_field in gql_type.fields.values():
            field = (gql_field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
            if isinstance(field, StrawberryField):
                fast = fast_resolver(field, gql_field.resolve, schema, converters)
                if fast is not None:
                    gql_field.resolve = fast
                    installed += 1
    return installed
