"""A query or mutation sent over the websocket at /graphql, run as POST /graphql runs it.

Strawberry's graphql-transport-ws handler runs every operation with the socket's one
context, which has no tenant database (a subscription leases one per page it reads). Each
query or mutation gets its own here, with TenantBound's steps (app/edge/auth.py) in its
order: a request id, the key verified again (a key revoked since connection_init stops
working as it does on HTTP, and closes the socket), the key's rate limit, the tenant's
database leased for the operation; then the schema's own execution (the fast path or the
stock one, with the same token, depth, alias and cost bounds) and the same errors, codes
and request id (app/edge/graphql_http/view.py). A request error (parse, validation, variables,
a refusal) is the protocol's `error` message; an executed operation is one `next`.
"""

import logging
from dataclasses import dataclass, field
from typing import Any

from cross_web import HTTPException
from graphql import GraphQLFormattedError
from strawberry.exceptions import MissingQueryError
from strawberry.schema import BaseSchema
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions.protocols.graphql_transport_ws.types import NextMessagePayload
from strawberry.types.graphql import OperationType

from app import metrics
from app.deps import Container
from app.edge.answers import STATUS_CODES
from app.edge.auth import UNKNOWN_KEY, key_requester, retry_after_header
from app.edge.graphql_http.request import request_data
from app.edge.graphql_http.view import coded_errors, is_request_error
from app.edge.observe import operation_type
from app.edge.request_ids import new_request_id
from app.edge.unavailable import graphql_extensions
from app.graphql.request_context import Context
from app.logs import request_id_var, tenant_id_var
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)

# What a POST may run; a subscription goes to Strawberry's own streaming path.
SINGLE_RESULT = frozenset({OperationType.QUERY, OperationType.MUTATION})
# graphql-transport-ws's close code for a connection whose key is no good.
FORBIDDEN = 4403
UNTOLD_SUBSCRIPTION = (
    "this subscription could not be told from its document: name it in operationName"
)


@dataclass(slots=True)
class Answer:
    """What to send for one operation: `errors` (an `error` message: refused or invalid
    before it ran) or `result` (a `next` message, then `complete`); `close`: then close
    the socket with this code and reason (the key was revoked)."""

    errors: list[GraphQLFormattedError] = field(default_factory=list)
    result: NextMessagePayload | None = None
    close: tuple[int, str] | None = None


def is_subscription(query: object, operation_name: object, variables: object) -> bool:
    """Whether an operation is a well-formed subscription, for Strawberry's streaming path;
    anything else (a query, a mutation, a malformed payload) is `run`'s."""
    # The substring test first, as the HTTP view does: a C scan, a query pays nothing more.
    return (
        isinstance(query, str)
        and (operation_name is None or isinstance(operation_name, str))
        and (variables is None or isinstance(variables, dict))
        and "subscription" in query
        and operation_type(query, operation_name) == "subscription"
    )


def _refusal(
    message: str, code: str, request_id: str, **extensions: Any
) -> list[GraphQLFormattedError]:
    return [
        {"message": message, "extensions": {"code": code, "requestId": request_id, **extensions}}
    ]


async def run(
    schema: BaseSchema, container: Container, connection: Context, payload: dict[str, Any]
) -> Answer:
    """One query or mutation of the socket whose context is `connection` (its tenant and key
    authenticated at connection_init), from its subscribe message's `payload`."""
    request_id = new_request_id()
    # Every log record of the operation carries its id (and tenant, once known).
    request_token = request_id_var.set(request_id)
    tenant_token = tenant_id_var.set(None)
    try:
        return await _run(schema, container, connection, payload, request_id)
    except TenantUnavailable as exc:
        log.log(logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                "tenant database unavailable (%s), request %s", exc.reason, request_id,
                extra={"request_id": request_id})  # fmt: skip
        return Answer([{"message": exc.message, "extensions": graphql_extensions(exc, request_id)}])
    except Exception as exc:  # noqa: BLE001 - answered and logged, as TenantBound does
        log.error("unhandled error (request %s)", request_id, exc_info=exc,
                  extra={"request_id": request_id})  # fmt: skip
        return Answer(_refusal("Internal server error", STATUS_CODES[500], request_id))
    finally:
        tenant_id_var.reset(tenant_token)
        request_id_var.reset(request_token)


async def _run(
    schema: BaseSchema,
    container: Container,
    connection: Context,
    payload: dict[str, Any],
    request_id: str,
) -> Answer:
    key = connection.api_key
    assert key is not None  # on_ws_connect authenticated the socket
    auth = container.auth
    tenant_id = auth.cached(key) or await auth.tenant_for(key)
    if tenant_id is None:
        return Answer(
            _refusal(UNKNOWN_KEY, STATUS_CODES[401], request_id), close=(FORBIDDEN, UNKNOWN_KEY)
        )
    tenant_id_var.set(tenant_id)
    limiter = container.limiter
    if limiter.enabled:
        wait = limiter.acquire(key)
        if wait > 0:
            metrics.RATE_LIMITED.labels(surface="graphql").inc()
            message = (f"rate limit of {limiter.rate:g} requests per second (burst "
                       f"{limiter.burst}) for this API key exceeded; retry later")  # fmt: skip
            retry_after = int(retry_after_header(wait))  # whole seconds, as HTTP's Retry-After
            return Answer(_refusal(message, STATUS_CODES[429], request_id, retryAfter=retry_after))
    try:
        data = request_data(payload)  # each field's JSON type, as for a POST body
    except HTTPException as exc:
        return Answer(_refusal(exc.reason, STATUS_CODES[400], request_id))
    async with container.tenants.lease(tenant_id) as db:
        context = Context(
            container=container, db=db, request_id=request_id, request=connection.request,
            actor=lambda: key_requester(container, key),
            connection_params=connection.connection_params, tenant_id=tenant_id, api_key=key,
        )  # fmt: skip
        try:
            result = await schema.execute(
                data.query,
                variable_values=data.variables,
                context_value=context,
                operation_name=data.operation_name,
                allowed_operation_types=SINGLE_RESULT,
                operation_extensions=data.extensions,
            )
        except CannotGetOperationTypeError as exc:
            return Answer(_refusal(exc.as_http_error_reason(), STATUS_CODES[400], request_id))
        except InvalidOperationTypeError:
            # A subscription `is_subscription` could not tell from its tokens.
            return Answer(_refusal(UNTOLD_SUBSCRIPTION, STATUS_CODES[400], request_id))
        except MissingQueryError:
            return Answer(
                _refusal("No GraphQL query found in the request", STATUS_CODES[400], request_id)
            )
    if result.errors:
        result.errors = coded_errors(result.errors, request_id)
    if is_request_error(result):
        return Answer([error.formatted for error in result.errors or []])
    # The `next` payload as Strawberry's handler makes it for a subscription's result.
    answer: NextMessagePayload = {"data": result.data}
    if result.errors:
        answer["errors"] = [error.formatted for error in result.errors]
    if result.extensions:
        answer["extensions"] = result.extensions
    return Answer(result=answer)
