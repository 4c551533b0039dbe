"""The REST routes: one Resource per path, bound to the tenant by TenantBound (each route's
middleware), dispatching by method to app/edge/rest/handlers.py; every failure is an
HttpProblem, answered as problem+json by the app's exception handler."""

import logging
from collections.abc import Mapping

from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from app.edge.auth import TenantBound
from app.edge.lifespan import container_of
from app.edge.limits import MAX_BODY_BYTES, BodyTooLarge
from app.edge.rest import webhooks as wh
from app.edge.rest.data_rights import (
    erase_event,
    erase_subject,
    list_erasures,
    list_versions,
    restore_entry,
)
from app.edge.rest.handlers import (
    Handler,
    append_events,
    create_entry,
    delete_entry,
    export_memory,
    get_entry,
    get_event,
    list_entries,
    list_events,
    memory_context,
    no_route,
    replace_entry,
    update_entry,
)
from app.edge.rest.problems import (
    PROBLEM_ANSWERS,
    HttpProblem,
    problem,
    unavailable_problem,
)
from app.edge.rest.scopes import list_scopes
from app.storage.unavailable import TenantUnavailable

# The package's name: operators filter the REST edge's log lines by it.
log = logging.getLogger(__package__)


class Resource:
    """One path's methods: dispatch by method, after TenantBound (the route's middleware:
    401, 413, 429), every failure raised as an HttpProblem, which the app's exception handler
    (app/edge/rest/problems.py, problem_exception) answers as problem+json."""

    def __init__(self, handlers: Mapping[str, Handler], *, fallback: Handler | None = None) -> None:
        self.handlers = dict(handlers)
        self._fallback = fallback
        self._app = request_response(self._respond)

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        scope = request.scope
        handler = self.handlers.get(scope["method"], self._fallback)
        if handler is None:
            allow = ", ".join(self.handlers)
            raise problem(
                405,
                None,
                "path",
                "METHOD_NOT_ALLOWED",
                f"{request.method} is not allowed here; allowed: {allow}",
                {"Allow": allow},
            )
        state = scope["state"]
        request_id: str = state["request_id"]
        try:
            response = await handler(request, state["db"], container_of(scope))
        except (HttpProblem, BodyTooLarge, ClientDisconnect):
            # TenantBound's, BodyTooLarge and ClientDisconnect: a 413, or for a client that
            # left no answer (a 499).
            raise
        except TenantUnavailable as exc:
            log.log(
                logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                "tenant database unavailable (%s)",
                exc.reason,
                extra={"request_id": request_id},
            )
            raise unavailable_problem(exc) from exc
        except Exception as exc:
            log.exception("REST request failed", extra={"request_id": request_id})
            raise problem(
                500, None, "body", "INTERNAL", "internal server error; quote the requestId"
            ) from exc
        # As response.headers["X-Request-Id"] = request_id, without MutableHeaders' scan
        # and copy: no handler sets that header.
        response.raw_headers.append((b"x-request-id", request_id.encode("latin-1")))
        return response


def rest_routes() -> list[BaseRoute]:
    """The /memory and /webhooks routes, full paths (no Mount, so GET /memory never
    redirects), each with TenantBound as its middleware."""
    # The body limit after the key: a request without a valid key is a 401 whatever its size.
    bound = [Middleware(TenantBound, answers=PROBLEM_ANSWERS, limit=MAX_BODY_BYTES)]

    def route(path: str, handlers: Mapping[str, Handler], fallback: Handler | None = None) -> Route:
        return Route(path, Resource(handlers, fallback=fallback), middleware=bound)

    # Order matters: literal paths before /memory/{id}, which would capture "events".
    return [
        route("/memory", {"GET": list_entries, "POST": create_entry}),
        route("/memory/events", {"GET": list_events, "POST": append_events}),
        route("/memory/context", {"GET": memory_context}),
        route("/memory/scopes", {"GET": list_scopes}),
        route("/memory/export", {"GET": export_memory}),
        route("/memory/erasures", {"GET": list_erasures, "POST": erase_subject}),
        route("/memory/events/{id}", {"GET": get_event, "DELETE": erase_event}),
        route(
            "/memory/{id}",
            {"GET": get_entry, "PUT": replace_entry, "PATCH": update_entry, "DELETE": delete_entry},
        ),
        route("/memory/{id}/versions", {"GET": list_versions}),
        route("/memory/{id}/restore", {"POST": restore_entry}),
        # Anything else under /memory: a problem+json 404 rather than Starlette's text one.
        route("/memory/{rest:path}", {}, fallback=no_route),
        route("/webhooks", {"GET": wh.list_endpoints, "POST": wh.create_endpoint}),
        route(
            "/webhooks/{id}",
            {"GET": wh.get_endpoint, "PATCH": wh.update_endpoint, "DELETE": wh.delete_endpoint},
        ),
        route("/webhooks/{id}/deliveries", {"GET": wh.list_deliveries}),
        route("/webhooks/{id}/deliveries/{deliveryId}/replay", {"POST": wh.replay_delivery}),
        route("/webhooks/{rest:path}", {}, fallback=no_route),
    ]
