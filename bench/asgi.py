"""In-process per-request cost of the edge: the real ASGI app called directly, no sockets.

A quick loop for optimising the edge and GraphQL layers: what one request costs the event
loop in Python, without uvicorn, the kernel or a load generator (python -m bench
measures those, end to end). Each case runs `--clients` concurrent tasks for `--seconds`
and reports requests per second and process CPU per request (all threads: the aiosqlite
threads too).

Usage: .venv/bin/python -m bench.asgi [--only plain,trivial,...] [--seconds S]
       [--clients N] [--profile CASE]   # --profile: cProfile of one case, top 30
       [--hops]   # also count calls to aiosqlite's thread per request (adds some CPU)

Cases: plain (a Starlette JSON route in the same app, the baseline), trivial
(`{ __typename }`), append_gql, append_rest, events_gql (first 50 of a scope, every
field the HTTP benchmark asks for), events_rest, search_gql (memoryEntries search top 20
over 20,000 entries in 10 scopes, the HTTP benchmark's common queries), search_rare_gql
(the same, its rare-word queries: little FTS5 work, so mostly the rest), tenant_first (the first
request, an event page, to each of 300 tenants not yet open, one client, one after
another; run only when named in --only, as it creates the tenants).
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

import aiosqlite
import uvloop
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from app.edge.lifespan import GivenState
from app.services import events as event_service
from app.services import tenants as tenant_service
from app.services.records import EventIn, Scope
from bench import data as bench_data

EVENTS_Q = (
    "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
    " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
    " compressedAt } } pageInfo { hasNextPage endCursor } } }"
)
APPEND_Q = (
    "mutation($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i)"
    " { event { id sourceRef occurredAt } replayed errors { field code message } } }"
)
SEARCH_Q = (
    "query($f: MemoryEntryFilter!) { memoryEntries(filter: $f, first: 20) { edges {"
    " score node { id scope scopeRef title summary tags importance updatedAt } }"
    " pageInfo { hasNextPage endCursor } } }"
)  # bench/search.py's workload
SEARCH_ENTRIES = 20_000
FIRST_TENANTS = 300
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


def cases(key: str, search_key: str) -> dict[str, Case]:
    counter = iter(range(10**9))
    searches = [
        {"search": q, "scope": scope.upper(), "scopeRef": ref}
        for scope, ref in bench_data.SEARCH_SCOPES
        for q in bench_data.COMMON_QUERIES
    ]
    rare = [
        {"search": q, "scope": scope.upper(), "scopeRef": ref}
        for tag, q, scope, ref in bench_data.search_cases()
        if tag == "rare"
    ]

    def gql(query: str, variables: dict[str, Any]) -> bytes:
        return json.dumps({"query": query, "variables": variables}).encode()

    def event(i: int) -> dict[str, Any]:
        return {
            "scopeRef": f"ref{i % 10}",
            "kind": "note",
            "body": BODY,
            "source": "bench",
            "sourceRef": f"r{next(counter)}",
        }

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
        "search_gql": lambda i: (
            scope_for("POST", "/graphql", search_key),
            gql(SEARCH_Q, {"f": searches[i % len(searches)]}),
        ),
        "search_rare_gql": lambda i: (
            scope_for("POST", "/graphql", search_key),
            gql(SEARCH_Q, {"f": rare[i % len(rare)]}),
        ),
    }


def first_request(key: str) -> tuple[dict[str, Any], bytes]:
    query = b"scope=entity&scopeRef=a&limit=50"
    return scope_for("GET", "/memory/events", key, query), b""


async def run_first(app: ASGIApp, keys: list[str]) -> tuple[float, float, int]:
    """One request to each tenant (not yet open), one after another."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    for key in keys:
        status, body = await call(app, *first_request(key))
        if status != 200:
            raise SystemExit(f"tenant_first: {status} {body[:300]!r}")
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    return len(keys) / wall, cpu / len(keys) * 1e6, len(keys)


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
                    EventIn(
                        scope=Scope.ENTITY,
                        scope_ref=f"big{ref}",
                        kind="note",
                        body=f"{BODY} #{n}",
                        source="inbox",
                        source_ref=f"m{ref}-{n}",
                        occurred_at=start + timedelta(minutes=n),
                        idempotency_key=None,
                    )
                    for n in range(200)
                ]
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

    cpu0, loop0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    LOOP_CPU[0] = (time.thread_time() - loop0) / done * 1e6
    if statuses - {200, 201}:
        raise SystemExit(f"unexpected statuses {statuses}")
    return done / wall, cpu / done * 1e6, done


HOPS = [0]
LOOP_CPU = [0.0]  # CPU of the event loop's thread alone, per request, in the last case


def count_hops() -> None:
    """Count every call run on an aiosqlite connection's thread (`Connection._execute`,
    through which aiosqlite's Connection and Cursor methods all go)."""
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kw: Any) -> Any:
        HOPS[0] += 1
        return await original(self, fn, *args, **kw)  # type: ignore[no-untyped-call]

    aiosqlite.Connection._execute = counted  # type: ignore[method-assign]


async def main(args: argparse.Namespace) -> None:
    if args.hops:
        count_hops()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        _, key = await seed(data_dir)
        all_cases = cases(key, "")
        names = args.only.split(",") if args.only else list(all_cases)
        search_key = ""
        if "search_gql" in names or "search_rare_gql" in names:
            _, search_key = await bench_data.search_tenant(data_dir, SEARCH_ENTRIES)
        first_keys: list[str] = []
        if "tenant_first" in names:
            tenants = await bench_data.many_tenants(data_dir, FIRST_TENANTS + 20)
            first_keys = [k for _, k in tenants]
        all_cases = cases(key, search_key)
        # The search page cache off: search_gql and search_rare_gql measure the search.
        app = create_app(Settings(_env_file=None, data_dir=data_dir, search_cache_pages=0))
        app.router.routes.insert(0, Route("/plain", plain, methods=["GET", "POST"]))
        # The lifespan state a server copies into each request's scope (older trees: none).
        async with app.router.lifespan_context(app) as state:
            served: ASGIApp = GivenState(app, state) if state else app
            # Warm up: caches, the tenant open, the auth cache.
            for name in names:
                for i in range(20):
                    if name == "tenant_first":
                        status, body = await call(served, *first_request(first_keys[i]))
                    else:
                        status, body = await call(served, *all_cases[name](i))
                    if status not in (200, 201):
                        raise SystemExit(f"{name}: {status} {body[:300]!r}")
            for name in names:
                prof = cProfile.Profile() if args.profile == name else None
                if prof:
                    prof.enable()
                hops0 = HOPS[0]
                if name == "tenant_first":
                    rate, cpu_us, n = await run_first(served, first_keys[20:])
                else:
                    rate, cpu_us, n = await run_case(
                        served, all_cases[name], args.clients, args.seconds
                    )
                if prof:
                    prof.disable()
                loop = "" if name == "tenant_first" else f"  {LOOP_CPU[0]:7.1f} on the loop"
                print(
                    f"{name:15s} {rate:9,.0f} req/s  {cpu_us:7.1f} us CPU/req{loop}"
                    f"  ({n} requests)",
                    flush=True,
                )
                if args.hops:
                    print(f"{'':12s} {(HOPS[0] - hops0) / n:9.1f} aiosqlite thread hops/req")
                if prof:
                    pstats.Stats(prof, stream=sys.stdout).sort_stats(args.sort).print_stats(40)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--profile", default="")
    p.add_argument("--sort", default="tottime")
    p.add_argument("--hops", action="store_true")
    uvloop.run(main(p.parse_args()))
