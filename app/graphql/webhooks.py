"""GraphQL webhook endpoints (app/services/changes/webhooks.py): `webhookEndpoints`,
`webhookDeliveries`, and the mutations to create, update, delete and replay. The signing
secret is a field of createWebhookEndpoint's payload alone: no query can read it back.

WebhookQuery and WebhookMutation are merged into the schema's Query and Mutation.
"""

from datetime import datetime

import strawberry
from strawberry.types import Info

from app.errors import ExpectedError
from app.graphql.changes import MemoryChange
from app.graphql.errors import QueryError
from app.graphql.request_context import Context
from app.graphql.types import MemoryScope, PageInfo, UserError
from app.services.changes import webhooks
from app.services.changes.webhooks import Delivery, Endpoint, EndpointIn, EndpointPatch
from app.services.records import Page, Scope

CtxInfo = Info[Context, None]


@strawberry.type(description="Where this tenant's change events are POSTed, signed.")
class WebhookEndpoint:
    id: strawberry.ID
    url: str
    types: list[str] = strawberry.field(
        description="the change types sent (event.appended, entry.created, entry.updated, "
        "entry.deleted, compaction.finished); empty: all of them"
    )
    scope: MemoryScope | None  # type: ignore[valid-type]
    scope_ref: str | None
    description: str | None
    enabled: bool
    disabled_reason: str | None = strawberry.field(
        description="why it stopped: disabled by the tenant, or failing for the retry window"
    )
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, e: Endpoint) -> "WebhookEndpoint":
        return cls(
            id=strawberry.ID(e.id),
            url=e.url,
            types=[t.value for t in e.types],
            scope=e.scope,
            scope_ref=e.scope_ref,
            description=e.description,
            enabled=e.enabled,
            disabled_reason=e.disabled_reason,
            created_at=e.created_at,
            updated_at=e.updated_at,
        )


@strawberry.type(description="One change sent to one endpoint: the delivery log.")
class WebhookDelivery:
    id: strawberry.ID = strawberry.field(description="the webhook-id header: same on retries")
    change: MemoryChange = strawberry.field(description="the body sent: the change event")
    delivered: bool
    attempts: int
    next_attempt_at: datetime | None = strawberry.field(description="while not delivered")
    last_attempt_at: datetime | None
    last_status: int | None = strawberry.field(description="HTTP status of the last attempt")
    last_error: str | None
    latency_ms: int | None = strawberry.field(description="of the last attempt")
    created_at: datetime
    delivered_at: datetime | None

    @classmethod
    def of(cls, d: Delivery) -> "WebhookDelivery":
        return cls(
            id=strawberry.ID(d.id),
            change=MemoryChange.of(d.change),
            delivered=d.delivered,
            attempts=d.attempts,
            next_attempt_at=d.next_attempt_at,
            last_attempt_at=d.last_attempt_at,
            last_status=d.last_status,
            last_error=d.last_error,
            latency_ms=d.latency_ms,
            created_at=d.created_at,
            delivered_at=d.delivered_at,
        )


@strawberry.type
class WebhookDeliveryEdge:
    cursor: str
    node: WebhookDelivery


@strawberry.type
class WebhookDeliveryConnection:
    edges: list[WebhookDeliveryEdge]
    page_info: PageInfo

    @classmethod
    def of(cls, page: Page[Delivery]) -> "WebhookDeliveryConnection":
        return cls(
            edges=[
                WebhookDeliveryEdge(cursor=e.cursor, node=WebhookDelivery.of(e.node))
                for e in page.edges
            ],
            page_info=PageInfo(has_next_page=page.has_next_page, end_cursor=page.end_cursor),
        )


@strawberry.input
class CreateWebhookEndpointInput:
    url: str
    types: list[str] | None = strawberry.field(default=None, description="empty or absent: all")
    scope: MemoryScope | None = None  # type: ignore[valid-type]
    scope_ref: str | None = None
    description: str | None = None


@strawberry.input
class UpdateWebhookEndpointInput:
    url: str | None = None
    types: list[str] | None = None
    description: str | None = None
    enabled: bool | None = strawberry.field(
        default=None, description="true again resumes from where it stopped"
    )


@strawberry.type
class CreateWebhookEndpointPayload:
    endpoint: WebhookEndpoint | None
    secret: str | None = strawberry.field(
        description="the signing secret (whsec_…): shown this once, never readable again"
    )
    errors: list[UserError]


@strawberry.type
class WebhookEndpointPayload:
    endpoint: WebhookEndpoint | None
    errors: list[UserError]


@strawberry.type
class DeleteWebhookEndpointPayload:
    deleted_id: strawberry.ID | None
    errors: list[UserError]


@strawberry.type
class ReplayWebhookDeliveryPayload:
    delivery: WebhookDelivery | None
    errors: list[UserError]


def _input_error(exc: ExpectedError) -> UserError:
    return UserError.of(exc if exc.field[:1] == ["id"] or not exc.field else exc.at("input"))


async def resolve_webhook_endpoints(info: CtxInfo) -> list[WebhookEndpoint]:
    return [WebhookEndpoint.of(e) for e in await webhooks.list_endpoints(info.context.db)]


async def resolve_webhook_deliveries(
    info: CtxInfo, endpoint_id: strawberry.ID, first: int | None = 20, after: str | None = None
) -> WebhookDeliveryConnection:
    try:
        page = await webhooks.list_deliveries(
            info.context.db, str(endpoint_id), first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        if exc.field == ["id"]:
            exc = exc.renamed(["endpointId"], "endpointId")
        raise QueryError(exc) from None
    return WebhookDeliveryConnection.of(page)


async def resolve_create_webhook_endpoint(
    info: CtxInfo, input: CreateWebhookEndpointInput
) -> CreateWebhookEndpointPayload:
    new = EndpointIn(
        url=input.url,
        types=input.types or [],
        scope=Scope(input.scope) if input.scope is not None else None,
        scope_ref=input.scope_ref,
        description=input.description,
    )
    try:
        created = await webhooks.create_endpoint(
            info.context.db,
            new,
            info.context.container.settings,
            control=info.context.container.control,
        )
    except ExpectedError as exc:
        return CreateWebhookEndpointPayload(endpoint=None, secret=None, errors=[_input_error(exc)])
    return CreateWebhookEndpointPayload(
        endpoint=WebhookEndpoint.of(created.endpoint), secret=created.secret, errors=[]
    )


async def resolve_update_webhook_endpoint(
    info: CtxInfo, id: strawberry.ID, input: UpdateWebhookEndpointInput
) -> WebhookEndpointPayload:
    patch = EndpointPatch(
        url=input.url, types=input.types, description=input.description, enabled=input.enabled
    )
    try:
        endpoint = await webhooks.update_endpoint(
            info.context.db, str(id), patch, info.context.container.settings
        )
    except ExpectedError as exc:
        return WebhookEndpointPayload(endpoint=None, errors=[_input_error(exc)])
    return WebhookEndpointPayload(endpoint=WebhookEndpoint.of(endpoint), errors=[])


async def resolve_delete_webhook_endpoint(
    info: CtxInfo, id: strawberry.ID
) -> DeleteWebhookEndpointPayload:
    try:
        deleted = await webhooks.delete_endpoint(info.context.db, str(id))
    except ExpectedError as exc:
        return DeleteWebhookEndpointPayload(deleted_id=None, errors=[UserError.of(exc)])
    return DeleteWebhookEndpointPayload(deleted_id=strawberry.ID(deleted), errors=[])


async def resolve_replay_webhook_delivery(
    info: CtxInfo, endpoint_id: strawberry.ID, delivery_id: strawberry.ID
) -> ReplayWebhookDeliveryPayload:
    try:
        delivery = await webhooks.replay_delivery(
            info.context.db, str(endpoint_id), str(delivery_id)
        )
    except ExpectedError as exc:
        return ReplayWebhookDeliveryPayload(delivery=None, errors=[UserError.of(exc)])
    return ReplayWebhookDeliveryPayload(delivery=WebhookDelivery.of(delivery), errors=[])


@strawberry.type
class WebhookQuery:
    webhook_endpoints: list[WebhookEndpoint] = strawberry.field(
        resolver=resolve_webhook_endpoints, description="oldest first; never their secrets"
    )
    webhook_deliveries: WebhookDeliveryConnection = strawberry.field(
        resolver=resolve_webhook_deliveries, description="an endpoint's delivery log, newest first"
    )


@strawberry.type
class WebhookMutation:
    create_webhook_endpoint: CreateWebhookEndpointPayload = strawberry.mutation(
        resolver=resolve_create_webhook_endpoint,
        description="register an endpoint for the changes made from now on; the answer "
        "holds its signing secret, the only time it is shown",
    )
    update_webhook_endpoint: WebhookEndpointPayload = strawberry.mutation(
        resolver=resolve_update_webhook_endpoint
    )
    delete_webhook_endpoint: DeleteWebhookEndpointPayload = strawberry.mutation(
        resolver=resolve_delete_webhook_endpoint
    )
    replay_webhook_delivery: ReplayWebhookDeliveryPayload = strawberry.mutation(
        resolver=resolve_replay_webhook_delivery,
        description="send a delivery again, with the same webhook-id",
    )
