"""The executor short cut: plain fields and plain objects completed without graphql-core's
per-field machinery (resolve info, `complete_value` walk, path per item).

A page of 50 events is ~550 fields, most of them plain attributes of the records the
resolvers return; graphql-core spends a resolve info, an argument check, Strawberry's
resolver and a `complete_value` walk on each. Two short cuts, taken only while nothing is
unusual:

- Per field (`execute_field`): a Strawberry field without a resolver (no arguments, no
  field extensions) of a scalar or enum type, with no middleware: the same Strawberry
  resolver and the same `coerce_output_value` graphql-core would call.
- Per object and per list (`complete_object_value`, `complete_list_value`): when every
  field selected below a concrete object type is `__typename`, a plain leaf as above, or
  a plain attribute of an object or list type (recursively, no directive and no argument
  anywhere), a function compiled once per (type, field nodes) builds the response value
  directly (app/graphql/fastpath/plans.py), from an operation's second execution on.

Its resolver helpers reach it weakly (app/graphql/fastpath/async_helpers.py).

Anything else (an exception, null for a non-null field, an awaitable, a value the type
refuses) goes to graphql-core's own path for that field or object, which resolves it again
(plain attribute reads, no side effect) and reports the error exactly as before.
"""

from collections.abc import Sequence
from typing import Any
from weakref import WeakValueDictionary

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    InlineFragmentNode,
    SelectionSetNode,
    Undefined,
    is_leaf_type,
)
from graphql.execution.collect_fields import FieldDetails, collect_subfields
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.graphql.fastpath.async_helpers import weak_async_helpers
from app.graphql.fastpath.plans import (
    LEAF,
    LIST,
    OBJECT,
    PLAN_CACHE_SIZE,
    Compiler,
    Complete,
    field_plan,
    field_plans,
    getter,
    is_plain_resolver,
    list_plans,
    object_plans,
    strawberry_is_type_of,
)

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
            plan = self._plan_for(object_plans, return_type, field_details_list)
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
            plan = self._plan_for(list_plans, return_type, field_details_list)
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
