"""The subscription event short cut: each event of a subscription whose one root field
selects only plain leaf fields (`memoryChanged { id type time }`) is answered as one dict
built from the event, instead of graphql-core's per-event copy of the executor
(`Executor.build_per_event_executor`) and its execution of the whole operation
(`execute_subscription_event`). Anything the dict cannot say exactly as graphql-core
would (a null in a non-null field, a value the scalar refuses, an object of another
type) takes graphql-core's path for that event, errors and all.
"""

from dataclasses import dataclass
from typing import Any

from graphql import (
    ExecutionResult,
    FieldNode,
    GraphQLNonNull,
    GraphQLObjectType,
    OperationDefinitionNode,
    OperationType,
    Undefined,
)
from strawberry.schema.schema_converter import GraphQLCoreConverter

from app.graphql.fastpath.plans import (
    PLAN_CACHE_SIZE,
    field_plan,
    getter,
    strawberry_is_type_of,
)

# Off only to compare the two paths (tests, bench); the switch is Settings.graphql_fast_path.
enabled = True

TYPENAME = "__typename"


@dataclass(frozen=True, slots=True)
class EventPlan:
    root_key: str  # the root field's response key (its alias, or memoryChanged)
    type_name: str
    is_type_of: Any  # Strawberry's isinstance check, or None
    # (response key, getter, leaf type, non-null); a None getter is __typename.
    fields: tuple[tuple[str, Any, Any, bool], ...]

    def render(self, payload: Any, is_awaitable: Any) -> dict[str, Any] | None:
        """The event's data as graphql-core would complete it, or None: take its path."""
        if payload is None or (self.is_type_of is not None and not self.is_type_of(payload, None)):
            return None
        out: dict[str, Any] = {}
        try:
            for key, get, leaf, non_null in self.fields:
                if get is None:
                    out[key] = self.type_name
                    continue
                value = get(payload)
                if value is None:
                    if non_null:
                        return None
                    out[key] = None
                    continue
                if isinstance(value, Exception) or is_awaitable(value):
                    return None
                coerced = leaf.coerce_output_value(value)
                if coerced is None or coerced is Undefined:
                    return None
                out[key] = coerced
        except Exception:  # noqa: BLE001 - graphql-core's path reports it, located
            return None
        return {self.root_key: out}


# id(operation node) → (the node, kept so its id is not reused while the entry lives; its
# plan). The nodes are the parse cache's, so a subscription sent again finds its plan;
# cleared at the bound like the other plan caches. Looked up once per event: an id, not
# the node's own hash, which walks the whole node.
_plans: dict[int, tuple[OperationDefinitionNode, "EventPlan | None"]] = {}


def plan_of(executor: Any) -> EventPlan | None:
    operation = executor.operation
    found = _plans.get(id(operation))
    if found is not None and found[0] is operation:
        return found[1]
    if len(_plans) >= PLAN_CACHE_SIZE:
        _plans.clear()
    plan = _plan(executor.schema, operation)
    _plans[id(operation)] = (operation, plan)
    return plan


def _plan(schema: Any, operation: OperationDefinitionNode) -> EventPlan | None:
    root_type = schema.subscription_type
    selections = operation.selection_set.selections
    if (
        operation.operation is not OperationType.SUBSCRIPTION
        or root_type is None
        or operation.directives
        or len(selections) != 1
    ):
        return None
    [root] = selections
    if not isinstance(root, FieldNode) or root.directives or root.selection_set is None:
        return None
    field_def = root_type.fields.get(root.name.value)
    strawberry_field = (field_def.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    # Strawberry resolves a subscription field's event to the event itself.
    if strawberry_field is None or not getattr(strawberry_field, "is_subscription", False):
        return None
    object_type = field_def.type
    if isinstance(object_type, GraphQLNonNull):
        object_type = object_type.of_type
    if not isinstance(object_type, GraphQLObjectType):
        return None
    is_type_of = object_type.is_type_of
    if is_type_of is not None and not strawberry_is_type_of(is_type_of):
        return None
    fields: list[tuple[str, Any, Any, bool]] = []
    for node in root.selection_set.selections:
        if not isinstance(node, FieldNode) or node.directives or node.arguments:
            return None
        key = node.alias.value if node.alias else node.name.value
        if any(key == seen for seen, *_ in fields):
            return None  # merged fields: graphql-core's collection says what they mean
        if node.name.value == TYPENAME:
            fields.append((key, None, None, True))
            continue
        plan = field_plan(object_type.fields.get(node.name.value))
        if plan is None:
            return None
        resolve, leaf, non_null = plan
        fields.append((key, getter(resolve), leaf, non_null))
    root_key = root.alias.value if root.alias else root.name.value
    return EventPlan(root_key, object_type.name, is_type_of, tuple(fields))


class PlannedEvent:
    """What `build_per_event_executor` returns for a planned event: graphql-core's
    `execute_subscription_event` only calls its `execute_operation`."""

    __slots__ = ("executor", "payload", "plan", "stock")

    def __init__(self, executor: Any, payload: Any, plan: EventPlan, stock: Any) -> None:
        self.executor, self.payload, self.plan, self.stock = executor, payload, plan, stock

    def execute_operation(self, serially: bool | None = None) -> Any:
        data = self.plan.render(self.payload, self.executor.is_awaitable)
        if data is None:
            return self.stock(self.payload).execute_operation(serially)
        return ExecutionResult(data, None)
