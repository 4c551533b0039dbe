"""What lives as long as the server: the Container, its background indexer, and the lifespan
state every request gets a shallow copy of in `scope["state"]` (Starlette's lifespan state).

Endpoints read the container from there (`container_of`), never from a variable of their
own: a lifespan that runs again (test clients do that) gives its requests its own container.
"""

import contextlib
import gc
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.types import ASGIApp, Lifespan, Receive, Scope, Send

from app import allocator, metrics
from app.config import Settings
from app.deps import Container, build

# The lifespan state's key of the Container.
CONTAINER = "container"


def container_of(scope: Scope) -> Container:
    """The running lifespan's Container, from the request's copy of the lifespan state."""
    container: Container = scope["state"][CONTAINER]
    return container


def lifespan(settings: Settings, given: Container | None = None) -> Lifespan[Any]:
    """The app's lifespan: it yields `{"container": ...}`, the `given` one as it is (its
    owner closes it), else one built from `settings` and closed when the server stops."""

    @contextlib.asynccontextmanager
    async def run(_: Any) -> AsyncIterator[dict[str, Any]]:
        # Several API processes (serve --workers): a replaced worker's live gauges go.
        metrics.forget_dead_processes()
        try:
            if given is not None:
                yield {CONTAINER: given}
            else:
                async with _built(settings) as container:
                    yield {CONTAINER: container}
        finally:
            metrics.process_stopping()

    return run


@contextlib.asynccontextmanager
async def _built(settings: Settings) -> AsyncIterator[Container]:
    # Before the process starts its threads (SQLite's, the thread pool's).
    allocator.limit_arenas(settings.malloc_arenas)
    container = await build(settings)
    indexer = container.indexer()
    if indexer is not None:
        indexer.start()  # embeds entries in the background, off every request
    # Everything alive now (modules, the schema, the container) lives as long as the
    # server: out of the collector's sight, a full collection scans only what requests
    # allocate (docs/benchmarks.md has the pauses this avoids).
    gc.collect()
    gc.freeze()
    try:
        yield container
    finally:
        if indexer is not None:
            await indexer.aclose()
        gc.unfreeze()
        await container.aclose()


class GivenState:
    """ASGI middleware that gives each request the lifespan state `state` where the caller
    ran the lifespan itself or none (httpx's ASGITransport runs none; a test or a benchmark
    entering `app.router.lifespan_context` gets the state but no server to copy it into each
    request's scope): as a server would, a shallow copy, under what the scope holds."""

    def __init__(self, app: ASGIApp, state: Mapping[str, Any]) -> None:
        self.app = app
        self.state = dict(state)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            scope["state"] = {**self.state, **scope.get("state", {})}
        await self.app(scope, receive, send)
