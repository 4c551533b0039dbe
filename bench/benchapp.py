"""The app under benchmark: the real `create_app()` plus a plain Starlette JSON endpoint.

Bench-only (never imported by app/). `python -m bench` serves it with uvicorn exactly as
`jet-memory serve` serves `app.main:create_app` (one process, uvicorn's default loop and
HTTP parser, the same log level), so the plain route is a baseline measured in the same
process, on the same event loop, in the same run:

    uvicorn --app-dir bench --factory benchapp:factory

- `POST|GET /plain` answers what `{ __typename }` answers, from a plain Starlette route.
- With `JET_BENCH_SERVER_TIMING=1`, every response carries `server-timing: app;dur=<ms>`:
  the time from the ASGI call to the response start (auth, tenant lease, GraphQL or REST,
  the database, serialisation; not HTTP parsing or the socket). Off by default, so the
  request-rate workloads measure the app as deployed.
- With `JET_BENCH_GC_LOG=<ms>`, every garbage collection of the server longer than <ms>
  is printed to stderr (generation, duration, objects collected): a diagnostic for
  latency tails.
"""

import asyncio
import gc
import os
import sys
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import logs
from app.edge.app import create_app


class ServerTiming:
    """ASGI wrapper adding `server-timing: app;dur=<ms>` to every HTTP response.

    With `JET_BENCH_SLOW_MS=<ms>` it also prints each slower request and every stall of
    the event loop longer than that (a 5 ms ticker that arrives late) to stderr.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        slow = os.environ.get("JET_BENCH_SLOW_MS")
        self.slow_ms = float(slow) if slow else None
        self.ticker: asyncio.Task[None] | None = None

    async def tick(self) -> None:
        assert self.slow_ms is not None
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(0.005)
            late = (time.perf_counter() - t0 - 0.005) * 1000
            if late >= self.slow_ms:
                print(
                    f"bench-slow {time.time():.3f} event loop stalled {late:.1f} ms",
                    file=sys.stderr,
                    flush=True,
                )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.slow_ms is not None and self.ticker is None:
            self.ticker = asyncio.create_task(self.tick())
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - started) * 1000
                headers = [
                    *message.get("headers", []),
                    (b"server-timing", f"app;dur={ms:.3f}".encode()),
                ]
                message = {**message, "headers": headers}
                if self.slow_ms is not None and ms >= self.slow_ms:
                    print(
                        f"bench-slow {time.time():.3f} {scope['path']} took {ms:.1f} ms",
                        file=sys.stderr,
                        flush=True,
                    )
            await send(message)

        await self.app(scope, receive, timed_send)


async def plain(_: Request) -> JSONResponse:
    return JSONResponse({"data": {"__typename": "Query"}})


def log_slow_gcs(threshold_ms: float) -> None:
    started = [0.0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        ms = (time.perf_counter() - started[0]) * 1000
        if ms >= threshold_ms:
            print(
                f"bench-gc generation {info['generation']} {ms:.1f} ms, collected "
                f"{info['collected']}, objects tracked {len(gc.get_objects())}",
                file=sys.stderr,
                flush=True,
            )

    gc.callbacks.append(callback)


def factory() -> ASGIApp:
    lean = getattr(logs, "lean_records", None)  # as jet-memory serve does (older code: none)
    if lean is not None:
        lean()
    if os.environ.get("JET_BENCH_GC_LOG"):
        log_slow_gcs(float(os.environ["JET_BENCH_GC_LOG"]))
    app: Starlette = create_app()
    app.router.routes.insert(0, Route("/plain", plain, methods=["GET", "POST"]))
    if os.environ.get("JET_BENCH_SERVER_TIMING") == "1" or os.environ.get("JET_BENCH_SLOW_MS"):
        # Starlette's lifespan runs through the wrapper (it passes non-HTTP scopes on).
        return ServerTiming(app)
    return app
