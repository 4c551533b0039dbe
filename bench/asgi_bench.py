"""In-process per-request cost of the edge: the real ASGI app called directly, no sockets.

A quick loop for optimising the edge and GraphQL layers: what one request costs the event
loop in Python, without uvicorn, the kernel or a load generator (bench/http_bench.py
measures those, end to end). Each case runs `--clients` concurrent tasks for `--seconds`
and reports requests per second and process CPU per request (all threads: the aiosqlite
threads too).

Usage: .venv/bin/python bench/asgi_bench.py [--only plain,trivial,...] [--seconds S]
       [--clients N] [--profile CASE]   # --profile: cProfile of one case, top 30

Cases: plain (a Starlette JSON route in the same app, the baseline), trivial
(`{ __typename }`), append_gql, append_rest, events_gql (first 50 of a scope, every
field the HTTP benchmark asks for), events_rest.
"""

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvloop
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from app.services import events as event_service
from app.services import tenants as tenant_service
from app.services.records import EventIn, Scope

EVENTS_Q = (
    "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
    " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
    " compressedAt } } pageInfo { hasNextPage endCursor } } }"
)
APPEND_Q = (
    "mutation($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i)"
    " { event { id sourceRef occurredAt } replayed errors { field code message } } }"
)
BODY = "Call with Dana: the Q3 budget of $48,000 was approved; weekly reporting from now on."


def scope_for(method: str, path: str, key: str, query_string: bytes = b"") -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query_string,
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {key}".encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }


async def call(app: ASGIApp, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
    sent = False
    status = 0
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(dict(scope), receive, send)
    return status, b"".join(chunks)


Case = Callable[[int], tuple[dict[str, Any], bytes]]


def cases(key: str) -> dict[str, Case]:
    counter = iter(range(10**9))

    def gql(query: str, variables: dict[str, Any]) -> bytes:
        return json.dumps({"query": query, "variables": variables}).encode()

    def event(i: int) -> dict[str, Any]:
        return {"scopeRef": f"ref{i % 10}", "kind": "note", "body": BODY, "source": "bench",
                "sourceRef": f"r{next(counter)}"}  # fmt: skip

    trivial = json.dumps({"query": "{ __typename }"}).encode()
    return {
        "plain": lambda i: (scope_for("POST", "/plain", key), trivial),
        "trivial": lambda i: (scope_for("POST", "/graphql", key), trivial),
        "append_gql": lambda i: (
            scope_for("POST", "/graphql", key),
            gql(APPEND_Q, {"i": {"scope": "ENTITY", **event(i)}}),
        ),
        "append_rest": lambda i: (
            scope_for("POST", "/memory/events", key),
            json.dumps({"scope": "entity", **event(i)}).encode(),
        ),
        "events_gql": lambda i: (
            scope_for("POST", "/graphql", key),
            gql(EVENTS_Q, {"f": {"scope": "ENTITY", "scopeRef": f"big{i % 4}"}}),
        ),
        "events_rest": lambda i: (
            scope_for(
                "GET", "/memory/events", key, f"scope=entity&scopeRef=big{i % 4}&limit=50".encode()
            ),
            b"",
        ),
    }


async def seed(data_dir: Path) -> tuple[str, str]:
    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        tenant, issued = await tenant_service.create_tenant(
            container.control, container.tenants, "bench"
        )
        start = datetime(2026, 1, 1, tzinfo=UTC)
        async with container.tenants.lease(tenant.id) as db:
            for ref in range(4):
                batch = [
                    EventIn(scope=Scope.ENTITY, scope_ref=f"big{ref}", kind="note",
                            body=f"{BODY} #{n}", source="inbox", source_ref=f"m{ref}-{n}",
                            occurred_at=start + timedelta(minutes=n), idempotency_key=None)
                    for n in range(200)
                ]  # fmt: skip
                await event_service.append_events(db, batch, max_rows=2000)
        return tenant.id, issued.secret
    finally:
        await container.aclose()


async def plain(_: Request) -> JSONResponse:
    return JSONResponse({"data": {"__typename": "Query"}})


async def run_case(
    app: ASGIApp, make: Case, clients: int, seconds: float
) -> tuple[float, float, int]:
    done = 0
    stop = time.perf_counter() + seconds
    statuses: set[int] = set()

    async def client(n: int) -> None:
        nonlocal done
        i = n
        while time.perf_counter() < stop:
            scope, body = make(i)
            status, _ = await call(app, scope, body)
            statuses.add(status)
            done += 1
            i += clients

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    if statuses - {200, 201}:
        raise SystemExit(f"unexpected statuses {statuses}")
    return done / wall, cpu / done * 1e6, done


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        _, key = await seed(data_dir)
        app = create_app(Settings(_env_file=None, data_dir=data_dir))
        app.router.routes.insert(0, Route("/plain", plain, methods=["GET", "POST"]))
        all_cases = cases(key)
        names = args.only.split(",") if args.only else list(all_cases)
        async with app.router.lifespan_context(app):
            # Warm up: caches, the tenant open, the auth cache.
            for name in names:
                for i in range(20):
                    status, body = await call(app, *all_cases[name](i))
                    if status not in (200, 201):
                        raise SystemExit(f"{name}: {status} {body[:300]!r}")
            for name in names:
                prof = cProfile.Profile() if args.profile == name else None
                if prof:
                    prof.enable()
                rate, cpu_us, n = await run_case(app, all_cases[name], args.clients, args.seconds)
                if prof:
                    prof.disable()
                print(f"{name:12s} {rate:9,.0f} req/s  {cpu_us:7.1f} us CPU/req  ({n} requests)",
                      flush=True)  # fmt: skip
                if prof:
                    pstats.Stats(prof, stream=sys.stdout).sort_stats(args.sort).print_stats(40)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--profile", default="")
    p.add_argument("--sort", default="tottime")
    uvloop.run(main(p.parse_args()))
