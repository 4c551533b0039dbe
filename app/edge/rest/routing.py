"""The REST routes: one Resource per path, bound to the tenant by TenantBound, dispatching
by method to app/edge/rest/handlers.py and answering every failure as problem+json."""

import logging
from collections.abc import Callable, Mapping

from starlette.requests import ClientDisconnect, Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from app.deps import Container
from app.edge.auth import TenantBound
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
    """One path: TenantBound (401, 413), method dispatch, problem+json errors."""

    def __init__(
        self,
        get_container: Callable[[], Container],
        handlers: Mapping[str, Handler],
        *,
        fallback: Handler | None = None,
    ) -> None:
        self._get_container = get_container
        self.handlers = dict(handlers)
        self._fallback = fallback
        self._app: ASGIApp | None = None
        self._container: Container | None = None

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        # The container exists once lifespan has started, and is a new one if the lifespan
        # restarts (test clients do that): never keep serving a closed one.
        container = self._get_container()
        if self._app is None or container is not self._container:
            self._container = container
            # The body limit after the key: a request without a valid key is a 401
            # whatever its size.
            self._app = TenantBound(
                self._dispatch, container, answers=PROBLEM_ANSWERS, limit=MAX_BODY_BYTES
            )
        await self._app(scope, receive, send)

    async def _dispatch(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        assert self._container is not None
        state = scope["state"]
        request_id: str = state["request_id"]
        request = Request(scope, receive)
        try:
            handler = self.handlers.get(scope["method"], self._fallback)
            if handler is None:
                allow = ", ".join(self.handlers)
                raise problem(
                    405, None, "path", "METHOD_NOT_ALLOWED",
                    f"{request.method} is not allowed here; allowed: {allow}", {"Allow": allow},
                )  # fmt: skip
            response = await handler(request, state["db"], self._container)
        except HttpProblem as p:
            response = p.response(request_id)
        except TenantUnavailable as exc:
            log.log(logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                    "tenant database unavailable (%s)", exc.reason,
                    extra={"request_id": request_id})  # fmt: skip
            response = unavailable_problem(exc).response(request_id)
        except (BodyTooLarge, ClientDisconnect):
            raise  # TenantBound's: a 413, or for a client that left no answer (a 499)
        except Exception:
            log.exception("REST request failed", extra={"request_id": request_id})
            response = problem(
                500, None, "body", "INTERNAL", "internal server error; quote the requestId"
            ).response(request_id)
        # As response.headers["X-Request-Id"] = request_id, without MutableHeaders' scan
        # and copy: no handler sets that header.
        response.raw_headers.append((b"x-request-id", request_id.encode("latin-1")))
        await response(scope, receive, send)


def rest_routes(get_container: Callable[[], Container]) -> list[BaseRoute]:
    """The /memory and /webhooks routes, full paths (no Mount, so GET /memory never
    redirects)."""

    def resource(handlers: Mapping[str, Handler], fallback: Handler | None = None) -> Resource:
        return Resource(get_container, handlers, fallback=fallback)

    # Order matters: literal paths before /memory/{id}, which would capture "events".
    return [
        Route("/memory", resource({"GET": list_entries, "POST": create_entry})),
        Route("/memory/events", resource({"GET": list_events, "POST": append_events})),
        Route("/memory/context", resource({"GET": memory_context})),
        Route("/memory/scopes", resource({"GET": list_scopes})),
        Route("/memory/export", resource({"GET": export_memory})),
        Route("/memory/erasures", resource({"GET": list_erasures, "POST": erase_subject})),
        Route("/memory/events/{id}", resource({"GET": get_event, "DELETE": erase_event})),
        Route(
            "/memory/{id}",
            resource(
                {
                    "GET": get_entry,
                    "PUT": replace_entry,
                    "PATCH": update_entry,
                    "DELETE": delete_entry,
                }
            ),
        ),  # fmt: skip
        Route("/memory/{id}/versions", resource({"GET": list_versions})),
        Route("/memory/{id}/restore", resource({"POST": restore_entry})),
        # Anything else under /memory: a problem+json 404 rather than Starlette's text one.
        Route("/memory/{rest:path}", resource({}, fallback=no_route)),
        Route("/webhooks", resource({"GET": wh.list_endpoints, "POST": wh.create_endpoint})),
        Route(
            "/webhooks/{id}",
            resource(
                {"GET": wh.get_endpoint, "PATCH": wh.update_endpoint, "DELETE": wh.delete_endpoint}
            ),
        ),  # fmt: skip
        Route("/webhooks/{id}/deliveries", resource({"GET": wh.list_deliveries})),
        Route(
            "/webhooks/{id}/deliveries/{deliveryId}/replay",
            resource({"POST": wh.replay_delivery}),
        ),
        Route("/webhooks/{rest:path}", resource({}, fallback=no_route)),
    ]
