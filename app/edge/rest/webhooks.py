"""REST webhook endpoints (app/services/changes/webhooks.py): their request models and handlers.

GET|POST /webhooks, GET|PATCH|DELETE /webhooks/{id}, GET /webhooks/{id}/deliveries and
POST /webhooks/{id}/deliveries/{deliveryId}/replay. The secret is in POST's answer only.
"""

from typing import Literal

from pydantic import Field, TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from app import ids
from app.deps import Container
from app.edge.rest.encoding import json_response
from app.edge.rest.models import BodyModel, QueryModel, ScopeIn, documented_limit
from app.edge.rest.operations import Answer, operation
from app.edge.rest.parsing import parse_body, parse_query, require_json
from app.edge.rest.problems import LIST_NAMES, Where, service_errors
from app.edge.rest.response_models import (
    CREATED_WEBHOOK_ENDPOINT,
    WEBHOOK_DELIVERY,
    WEBHOOK_ENDPOINT,
    WebhookDeliveryList,
    WebhookEndpointList,
    page_body,
)
from app.services import limits
from app.services.changes import webhooks
from app.services.changes.webhooks import EndpointIn, EndpointPatch
from app.storage.tenants import TenantDb

_TYPES = "event.appended, entry.created, entry.updated, entry.deleted, compaction.finished"
ChangeType = Literal[
    "event.appended", "entry.created", "entry.updated", "entry.deleted", "compaction.finished"
]
# The services name a missing endpoint or delivery "id"/"deliveryId": REST's are in the path.
_PATH_NAMES: dict[str, tuple[str, Where]] = {
    "id": ("id", "path"),
    "deliveryId": ("deliveryId", "path"),
}


class CreateWebhookEndpointInput(BodyModel):
    """A webhook endpoint to register (POST /webhooks)."""

    url: str = Field(
        description="http(s); refused unless every address its host resolves to is globally "
        "reachable or in a network the operator allows (docs/security.md)",
        json_schema_extra={"maxLength": webhooks.URL_MAX_CHARS, "minLength": 1},
    )
    types: list[ChangeType] | None = Field(
        default=None, description=f"change types to send ({_TYPES}); absent or empty: all"
    )
    scope: ScopeIn | None = None
    scope_ref: str | None = documented_limit(maxLength=limits.REF_MAX_CHARS)
    description: str | None = documented_limit(maxLength=webhooks.DESCRIPTION_MAX_CHARS)


class UpdateWebhookEndpointInput(BodyModel):
    """Fields to change (PATCH /webhooks/{id}); `enabled: true` resumes where it stopped."""

    url: str | None = documented_limit(maxLength=webhooks.URL_MAX_CHARS, minLength=1)
    types: list[ChangeType] | None = None
    description: str | None = documented_limit(maxLength=webhooks.DESCRIPTION_MAX_CHARS)
    enabled: bool | None = None


class WebhookDeliveryQuery(QueryModel):
    """GET /webhooks/{id}/deliveries: the delivery log, newest first."""

    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


ENDPOINT_IN = TypeAdapter(CreateWebhookEndpointInput)
ENDPOINT_PATCH_IN = TypeAdapter(UpdateWebhookEndpointInput)
ENDPOINT_ID = {"id": ids.WEBHOOK}


@operation(
    "listWebhookEndpoints",
    "This tenant's webhook endpoints (never their secrets)",
    {200: Answer("the endpoints", WebhookEndpointList)},
)
async def list_endpoints(request: Request, db: TenantDb, _: Container) -> Response:
    items = [WEBHOOK_ENDPOINT.json(e) for e in await webhooks.list_endpoints(db)]
    return json_response({"items": items})


@operation(
    "createWebhookEndpoint",
    "Register an endpoint for the changes made from now on",
    {201: Answer("registered", CREATED_WEBHOOK_ENDPOINT, ("Location",))},
    description="The answer holds the signing secret: the only time it is shown.",
    body=CreateWebhookEndpointInput,
)
async def create_endpoint(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ENDPOINT_IN)
    new = EndpointIn(i.url, i.types or [], i.scope, i.scope_ref, i.description)
    with service_errors("body"):
        created = await webhooks.create_endpoint(
            db, new, container.settings, control=container.control
        )
    headers = {"Location": f"/webhooks/{created.endpoint.id}"}
    return json_response(CREATED_WEBHOOK_ENDPOINT.json(created), 201, headers)


@operation(
    "getWebhookEndpoint",
    "Read an endpoint",
    {200: Answer("the endpoint", WEBHOOK_ENDPOINT)},
    problems=(404,),
    path=ENDPOINT_ID,
)
async def get_endpoint(request: Request, db: TenantDb, _: Container) -> Response:
    with service_errors("path", _PATH_NAMES):
        endpoint = await webhooks.get_endpoint(db, request.path_params["id"])
    return json_response(WEBHOOK_ENDPOINT.json(endpoint))


@operation(
    "updateWebhookEndpoint",
    "Change an endpoint; enabled: true resumes where it stopped",
    {200: Answer("the endpoint", WEBHOOK_ENDPOINT)},
    problems=(404,),
    body=UpdateWebhookEndpointInput,
    path=ENDPOINT_ID,
)
async def update_endpoint(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ENDPOINT_PATCH_IN)
    patch = EndpointPatch(url=i.url, types=i.types, description=i.description, enabled=i.enabled)
    with service_errors("body", _PATH_NAMES):
        endpoint = await webhooks.update_endpoint(
            db, request.path_params["id"], patch, container.settings
        )
    return json_response(WEBHOOK_ENDPOINT.json(endpoint))


@operation(
    "deleteWebhookEndpoint",
    "Delete an endpoint and its delivery log",
    {204: Answer("deleted, with its delivery log")},
    problems=(404,),
    path=ENDPOINT_ID,
)
async def delete_endpoint(request: Request, db: TenantDb, _: Container) -> Response:
    with service_errors("path", _PATH_NAMES):
        await webhooks.delete_endpoint(db, request.path_params["id"])
    return Response(status_code=204)


@operation(
    "listWebhookDeliveries",
    "An endpoint's delivery log, newest first",
    {200: Answer("a page of deliveries", WebhookDeliveryList)},
    problems=(404,),
    query=WebhookDeliveryQuery,
    path=ENDPOINT_ID,
)
async def list_deliveries(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, WebhookDeliveryQuery)
    with service_errors("query", {**LIST_NAMES, **_PATH_NAMES}):
        page = await webhooks.list_deliveries(
            db, request.path_params["id"], first=q.limit, after=q.cursor
        )
    return json_response(page_body(WEBHOOK_DELIVERY, page))


@operation(
    "replayWebhookDelivery",
    "Send a delivery again, with the same webhook-id",
    {200: Answer("the delivery, due now", WEBHOOK_DELIVERY)},
    problems=(404,),
    path={**ENDPOINT_ID, "deliveryId": ids.DELIVERY},
)
async def replay_delivery(request: Request, db: TenantDb, _: Container) -> Response:
    with service_errors("path", _PATH_NAMES):
        delivery = await webhooks.replay_delivery(
            db, request.path_params["id"], request.path_params["deliveryId"]
        )
    return json_response(WEBHOOK_DELIVERY.json(delivery))
