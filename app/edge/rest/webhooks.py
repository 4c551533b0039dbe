"""REST webhook endpoints (app/services/webhooks.py): their models and handlers.

GET|POST /webhooks, GET|PATCH|DELETE /webhooks/{id}, GET /webhooks/{id}/deliveries and
POST /webhooks/{id}/deliveries/{deliveryId}/replay. The secret is in POST's answer only.
"""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from app.deps import Container
from app.edge.rest.encoding import json_response
from app.edge.rest.models import BodyModel, QueryModel, ResponseModel, ScopeIn, _limit
from app.edge.rest.parsing import parse_body, parse_query, require_json
from app.edge.rest.problems import LIST_NAMES, Where, service_errors
from app.services import limits, webhooks
from app.services.records import Scope
from app.services.webhooks import Delivery, Endpoint, EndpointIn, EndpointPatch
from app.storage.tenants import TenantDb

_TYPES = "event.appended, entry.created, entry.updated, entry.deleted, compaction.finished"
ChangeType = Literal[
    "event.appended", "entry.created", "entry.updated", "entry.deleted", "compaction.finished"
]
# The services name a missing endpoint or delivery "id"/"deliveryId": REST's are in the path.
_PATH_NAMES: dict[str, tuple[str, Where]] = {
    "id": ("id", "path"), "deliveryId": ("deliveryId", "path"),
}  # fmt: skip


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
    scope_ref: str | None = _limit(maxLength=limits.REF_MAX_CHARS)
    description: str | None = _limit(maxLength=webhooks.DESCRIPTION_MAX_CHARS)


class UpdateWebhookEndpointInput(BodyModel):
    """Fields to change (PATCH /webhooks/{id}); `enabled: true` resumes where it stopped."""

    url: str | None = _limit(maxLength=webhooks.URL_MAX_CHARS, minLength=1)
    types: list[ChangeType] | None = None
    description: str | None = _limit(maxLength=webhooks.DESCRIPTION_MAX_CHARS)
    enabled: bool | None = None


class WebhookDeliveryQuery(QueryModel):
    """GET /webhooks/{id}/deliveries: the delivery log, newest first."""

    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class WebhookEndpoint(ResponseModel):
    """Where this tenant's change events are POSTed, signed (never its secret)."""

    id: str
    url: str
    types: list[str] = Field(description="empty: every type")
    scope: Scope | None
    scope_ref: str | None
    description: str | None
    enabled: bool
    disabled_reason: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, e: Endpoint) -> "WebhookEndpoint":
        return cls(
            id=e.id, url=e.url, types=[t.value for t in e.types], scope=e.scope,
            scope_ref=e.scope_ref, description=e.description, enabled=e.enabled,
            disabled_reason=e.disabled_reason, created_at=e.created_at, updated_at=e.updated_at,
        )  # fmt: skip


class CreatedWebhookEndpoint(WebhookEndpoint):
    secret: str = Field(description="the signing secret (whsec_…): shown this once, never again")


class WebhookEndpointList(ResponseModel):
    items: list[WebhookEndpoint]


class MemoryChange(ResponseModel):
    """A change event, as POSTed to endpoints: never the memory text."""

    id: str = Field(description="grows with every change of this tenant")
    type: str
    time: datetime
    scope: Scope | None
    scope_ref: str | None
    object_id: str
    version: int


class WebhookDelivery(ResponseModel):
    """One change sent to one endpoint."""

    id: str = Field(description="the webhook-id header: the same on every attempt")
    change: MemoryChange
    delivered: bool
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    latency_ms: int | None
    created_at: datetime
    delivered_at: datetime | None

    @classmethod
    def of(cls, d: Delivery) -> "WebhookDelivery":
        return cls(
            id=d.id, change=MemoryChange.model_validate(d.change), delivered=d.delivered,
            attempts=d.attempts, next_attempt_at=d.next_attempt_at,
            last_attempt_at=d.last_attempt_at, last_status=d.last_status,
            last_error=d.last_error, latency_ms=d.latency_ms, created_at=d.created_at,
            delivered_at=d.delivered_at,
        )  # fmt: skip


class WebhookDeliveryList(ResponseModel):
    items: list[WebhookDelivery]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


ENDPOINT_IN = TypeAdapter(CreateWebhookEndpointInput)
ENDPOINT_PATCH_IN = TypeAdapter(UpdateWebhookEndpointInput)


def _dump(model: ResponseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")


async def list_endpoints(request: Request, db: TenantDb, _: Container) -> Response:
    items = [_dump(WebhookEndpoint.of(e)) for e in await webhooks.list_endpoints(db)]
    return json_response({"items": items})


async def create_endpoint(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ENDPOINT_IN)
    new = EndpointIn(i.url, i.types or [], i.scope, i.scope_ref, i.description)
    with service_errors("body"):
        created = await webhooks.create_endpoint(
            db, new, container.settings, control=container.control
        )
    body = CreatedWebhookEndpoint(
        **dict(WebhookEndpoint.of(created.endpoint)), secret=created.secret
    )
    headers = {"Location": f"/webhooks/{created.endpoint.id}"}
    return json_response(_dump(body), 201, headers)


async def get_endpoint(request: Request, db: TenantDb, _: Container) -> Response:
    with service_errors("path", _PATH_NAMES):
        endpoint = await webhooks.get_endpoint(db, request.path_params["id"])
    return json_response(_dump(WebhookEndpoint.of(endpoint)))


async def update_endpoint(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ENDPOINT_PATCH_IN)
    patch = EndpointPatch(url=i.url, types=i.types, description=i.description, enabled=i.enabled)
    with service_errors("body", _PATH_NAMES):
        endpoint = await webhooks.update_endpoint(
            db, request.path_params["id"], patch, container.settings
        )
    return json_response(_dump(WebhookEndpoint.of(endpoint)))


async def delete_endpoint(request: Request, db: TenantDb, _: Container) -> Response:
    with service_errors("path", _PATH_NAMES):
        await webhooks.delete_endpoint(db, request.path_params["id"])
    return Response(status_code=204)


async def list_deliveries(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, WebhookDeliveryQuery)
    with service_errors("query", {**LIST_NAMES, **_PATH_NAMES}):
        page = await webhooks.list_deliveries(
            db, request.path_params["id"], first=q.limit, after=q.cursor
        )
    return json_response({
        "items": [_dump(WebhookDelivery.of(e.node)) for e in page.edges],
        "nextCursor": page.end_cursor if page.has_next_page else None,
    })  # fmt: skip


async def replay_delivery(request: Request, db: TenantDb, _: Container) -> Response:
    with service_errors("path", _PATH_NAMES):
        delivery = await webhooks.replay_delivery(
            db, request.path_params["id"], request.path_params["deliveryId"]
        )
    return json_response(_dump(WebhookDelivery.of(delivery)))
