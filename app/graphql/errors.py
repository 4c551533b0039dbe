"""How a failure of a GraphQL request reaches the client: every error carries
`extensions.code` (and the request id); an expected failure of a query also its `field` and
the conventional `classification` a gateway or fuzzer reads as a client error. Never masked.
"""

from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError

from app.errors import ErrorCode, ExpectedError

PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
BAD_USER_INPUT = "BAD_USER_INPUT"
INTERNAL = "INTERNAL_SERVER_ERROR"

# The classification of each documented code: the client's input, or what the client may
# not do (the tenant's budget or permissions).
CLASSIFICATIONS = {
    ErrorCode.INVALID: BAD_USER_INPUT,
    ErrorCode.NOT_FOUND: BAD_USER_INPUT,
    ErrorCode.CONFLICT: BAD_USER_INPUT,
    ErrorCode.TOO_LARGE: BAD_USER_INPUT,
    ErrorCode.BUDGET_EXCEEDED: "FORBIDDEN",
    ErrorCode.FORBIDDEN: "FORBIDDEN",
}
# graphql-core's words for a variable value that does not fit its type (its validation
# rules quote names with double quotes instead).
_VARIABLE_VALUE = "Variable '$"


class QueryError(GraphQLError):
    def __init__(self, exc: ExpectedError) -> None:
        super().__init__(
            exc.message,
            extensions={
                "code": exc.code.value,
                "field": exc.field,
                "classification": CLASSIFICATIONS[exc.code],
            },
        )


def code_of(error: GraphQLError) -> str:
    """The code of an error that names none: what failed, parsing, validation or a
    variable's value (before execution, no path), else an error of ours in a field."""
    if error.path:
        return INTERNAL
    if isinstance(error, GraphQLSyntaxError):
        return PARSE_FAILED
    if error.message.startswith(_VARIABLE_VALUE):
        return BAD_USER_INPUT
    return VALIDATION_FAILED


def with_code(error: GraphQLError, request_id: str | None) -> GraphQLError:
    """`error` with a code and the request id in its extensions: a copy, as parse and
    validation errors are cached and shared by every request of the same document."""
    extensions: dict[str, Any] = dict(error.extensions or {})
    if "code" in extensions and extensions.get("requestId") == request_id:
        return error
    extensions.setdefault("code", code_of(error))
    extensions["requestId"] = request_id
    coded = GraphQLError(
        error.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=extensions,
    )
    coded.__cause__ = error.__cause__
    return coded
