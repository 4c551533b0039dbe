"""What a GraphQL-over-HTTP request carries, checked before any operation runs: each field
of the spec's type (query and operationName a string, variables and extensions an object,
each or null), a batch a non-empty array of such objects within its cap. Every refusal is a
400 naming the field, the type it must be and the JSON type it was (never a Python repr).
"""

from typing import Any

from cross_web import HTTPException
from strawberry.http import GraphQLRequestData

# The request's fields and what each must be (or null), in the spec's words.
FIELDS: dict[str, tuple[type, str]] = {
    "query": (str, "a string"),
    "operationName": (str, "a string"),
    "variables": (dict, "an object"),
    "extensions": (dict, "an object"),
}
NOT_AN_OBJECT = "The request body must be a JSON object (one GraphQL request)"


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type: object, array, string, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def field_error(name: str, value: object, where: str = "") -> HTTPException:
    """The 400 for request field `name` holding `value`, of the wrong JSON type."""
    expected = FIELDS[name][1]
    return HTTPException(400, f"`{name}`{where} must be {expected} or null, not {json_type(value)}")


def request_data(data: dict[str, Any], where: str = "") -> GraphQLRequestData:
    """One operation's fields, each checked; `where` names it inside a batch."""
    for name, (kind, _) in FIELDS.items():
        value = data.get(name)
        if value is not None and not isinstance(value, kind):
            raise field_error(name, value, where)
    return GraphQLRequestData(
        query=data.get("query"),
        variables=data.get("variables"),
        operation_name=data.get("operationName"),
        extensions=data.get("extensions"),
        protocol="http",
    )


def batch_data(items: list[Any], max_operations: int) -> list[GraphQLRequestData]:
    """A batch's operations, its size checked before any of them is read."""
    if not items:
        raise HTTPException(400, "A batch must hold at least one operation, not an empty array")
    if len(items) > max_operations:
        raise HTTPException(
            400,
            f"A batch holds at most {max_operations} operations (JET_GRAPHQL_BATCH_MAX); "
            f"this one has {len(items)}",
        )
    operations = []
    for i, item in enumerate(items):
        where = f" (operation {i} of the batch)"
        if not isinstance(item, dict):
            raise HTTPException(
                400,
                f"Each operation of a batch must be a JSON object: operation {i} is "
                f"{json_type(item)}",
            )
        operations.append(request_data(item, where))
    return operations


def body_data(data: object, max_operations: int) -> GraphQLRequestData | list[GraphQLRequestData]:
    """A decoded POST body: one operation (an object) or a batch (an array)."""
    if isinstance(data, dict):
        return request_data(data)
    if isinstance(data, list):
        return batch_data(data, max_operations)
    raise HTTPException(400, f"{NOT_AN_OBJECT} or an array of them, not {json_type(data)}")
