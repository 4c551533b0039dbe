"""Operations at the HTTP edge: /healthz and /readyz, Prometheus /metrics, the per-key rate
limit (429 + Retry-After on both surfaces), and log records that carry request and tenant
ids but never a key or a memory body."""

import json
import logging
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from app import logs, metrics
from app.config import Settings
from app.deps import Container, build
from app.edge.app import create_app
from app.edge.observe import operation_type
from app.services import policies
from app.services.compaction import compact_tenant
from app.services.ratelimit import RateLimiter
from tests.conftest import TenantFixture, make_tenant, sample
from tests.support.gateway_stub import FakeGateway, summary_of

APPEND = """mutation Append($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) { replayed event { id } errors { code } } }"""


@pytest.fixture
async def app_client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(container=container))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def client_for(container: Container) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(container=container))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------- health


async def test_healthz_is_liveness_only(app_client: httpx.AsyncClient) -> None:
    r = await app_client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


async def test_readyz_is_ready_when_the_control_database_answers(
    app_client: httpx.AsyncClient,
) -> None:
    r = await app_client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {"status": "ready", "checks": {"control_db": "ok"}}


async def test_readyz_names_an_unreachable_redis(settings: Settings) -> None:
    url = f"redis://user:hunter2@127.0.0.1:{closed_port()}/0"
    container = await build(settings.model_copy(update={"redis_url": url}))
    try:
        async with await client_for(container) as c:
            r = await c.get("/readyz")
    finally:
        await container.aclose()
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "not ready" and body["checks"]["control_db"] == "ok"
    assert body["checks"]["redis"].startswith("failed")
    assert "hunter2" not in r.text


async def test_readyz_names_a_control_database_that_does_not_answer(
    container: Container,
    app_client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    broken = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/no/such/dir/control.db")
    monkeypatch.setattr(container.control, "engine", broken)
    try:
        r = await app_client.get("/readyz")
    finally:
        await broken.dispose()
    assert r.status_code == 503
    assert r.json()["checks"]["control_db"].startswith("failed")


# ---------------------------------------------------------------------------- metrics


async def test_metrics_count_requests_operations_and_appends(
    app_client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    rest = {"route": "/memory/events", "method": "POST", "status": "201"}
    gql = {"operation": "Append", "type": "mutation", "status": "200"}
    before = (
        sample("jet_http_requests_total", **rest),
        sample("jet_graphql_operations_total", **gql),
        sample("jet_events_appended_total"),
        sample("jet_http_request_duration_seconds_count", route="/memory/events", method="POST"),
    )
    event = {"scope": "entity", "scopeRef": "ent_acme", "kind": "decision", "body": "ROAS 4"}
    r = await app_client.post("/memory/events", json=event, headers=tenant.headers)
    assert r.status_code == 201
    variables = {"input": {"scope": "ENTITY", "scopeRef": "ent_acme", "kind": "k", "body": "b"}}
    r = await app_client.post(
        "/graphql",
        json={"query": APPEND, "variables": variables, "operationName": "Append"},
        headers=tenant.headers,
    )
    assert r.status_code == 200 and r.json()["data"]["appendMemoryEvent"]["errors"] == []
    # A replay stores nothing, so it is not an append.
    r = await app_client.post(
        "/memory/events", json=event, headers=tenant.headers | {"Idempotency-Key": "k1"}
    )
    r = await app_client.post(
        "/memory/events", json=event, headers=tenant.headers | {"Idempotency-Key": "k1"}
    )
    assert r.status_code == 200

    assert sample("jet_http_requests_total", **rest) == before[0] + 2
    assert sample("jet_graphql_operations_total", **gql) == before[1] + 1
    assert sample("jet_events_appended_total") == before[2] + 3
    assert (
        sample("jet_http_request_duration_seconds_count", route="/memory/events", method="POST")
        == before[3] + 3
    )

    r = await app_client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "jet_http_requests_total{" in r.text and "jet_compaction_runs_total" in r.text
    # Route templates, never ids; never a tenant.
    assert tenant.id not in r.text and "evt_" not in r.text and "mem_" not in r.text


async def test_metrics_label_a_path_with_an_id_by_its_template(
    app_client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    labels = {"route": "/memory/{id}", "method": "GET", "status": "404"}
    before = sample("jet_http_requests_total", **labels)
    r = await app_client.get("/memory/mem_nope", headers=tenant.headers)
    assert r.status_code == 404
    assert sample("jet_http_requests_total", **labels) == before + 1


async def test_metrics_need_the_token_when_one_is_set(settings: Settings) -> None:
    container = await build(settings.model_copy(update={"metrics_token": "scrape-me"}))
    try:
        async with await client_for(container) as c:
            assert (await c.get("/metrics")).status_code == 401
            bad = {"Authorization": "Bearer nope"}
            assert (await c.get("/metrics", headers=bad)).status_code == 401
            ok = {"Authorization": "Bearer scrape-me"}
            r = await c.get("/metrics", headers=ok)
            assert r.status_code == 200 and "jet_events_appended_total" in r.text
    finally:
        await container.aclose()


async def test_graphql_metrics_label_the_operation_that_ran(
    app_client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    """The label comes from the executed operation, not from re-reading the body: a named
    operation sent without operationName counts under its name; a document that does not
    parse keeps the type its first keyword says; a body that is not JSON is anonymous; each
    operation of a batch counts as itself; a batch refused before any ran is "batch"."""

    def count(operation: str, kind: str, status: str) -> float:
        labels = {"operation": operation, "type": kind, "status": status}
        return sample("jet_graphql_operations_total", **labels)

    named = count("RecentEvents", "query", "200")
    broken = count("anonymous", "mutation", "200")
    not_json = count("anonymous", "unknown", "400")
    batch = count("batch", "unknown", "400")
    query = "query RecentEvents { memoryEvents(first: 1) { edges { cursor } } }"
    r = await app_client.post("/graphql", json={"query": query}, headers=tenant.headers)
    assert r.status_code == 200 and "errors" not in r.json()
    r = await app_client.post("/graphql", json={"query": "mutation { x("}, headers=tenant.headers)
    assert r.status_code == 200 and r.json()["errors"]
    r = await app_client.post(
        "/graphql", content=b"{nope", headers=tenant.headers | {"content-type": "application/json"}
    )
    assert r.status_code == 400
    r = await app_client.post("/graphql", json=[{"query": query}] * 2, headers=tenant.headers)
    assert r.status_code == 200 and [a["data"] for a in r.json()] == [r.json()[0]["data"]] * 2
    r = await app_client.post("/graphql", json=[{"query": query}] * 11, headers=tenant.headers)
    assert r.status_code == 400 and "at most 10 operations" in r.text
    assert count("RecentEvents", "query", "200") == named + 3
    assert count("batch", "unknown", "400") == batch + 1
    assert count("anonymous", "mutation", "200") == broken + 1
    assert count("anonymous", "unknown", "400") == not_json + 1


def test_graphql_operation_names_are_a_bounded_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_names", set())
    labels = {metrics.operation_label(f"Op{i}") for i in range(metrics.MAX_OPERATION_NAMES + 50)}
    assert len(labels) == metrics.MAX_OPERATION_NAMES + 1 and "other" in labels
    assert metrics.operation_label(None) == "anonymous"


@pytest.mark.parametrize(
    ("query", "name", "kind"),
    [
        ("{ memoryEntries { edges { cursor } } }", None, "query"),
        ("query($id: ID!) { memoryEvent(id: $id) { id } }", None, "query"),
        ("# note\nmutation Append { x }", None, "mutation"),
        ("query Q { a } mutation M { b }", "M", "mutation"),
        ("fragment F on T { a } mutation { ...F }", None, "mutation"),
        ("subscription S { a }", None, "subscription"),
        ("query Q { a }", "Nope", "unknown"),
        ('query { a(x: "unterminated', None, "query"),
        ('"', None, "unknown"),
    ],
)
def test_operation_type(query: str, name: str | None, kind: str) -> None:
    assert operation_type(query, name) == kind


# ------------------------------------------------------------------------- rate limit


def test_rate_limiter_refills_at_its_rate() -> None:
    now = [100.0]
    limiter = RateLimiter(2, 3, clock=lambda: now[0])
    assert [limiter.acquire("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.acquire("k") == pytest.approx(0.5)
    assert limiter.acquire("other") == 0.0  # per key
    now[0] += 0.5
    assert limiter.acquire("k") == 0.0 and limiter.acquire("k") > 0
    now[0] += 60
    assert [limiter.acquire("k") for _ in range(4)][:3] == [0.0, 0.0, 0.0]  # burst, no more


def test_rate_limit_zero_disables_it() -> None:
    limiter = RateLimiter(0, 1)
    assert not limiter.enabled and all(limiter.acquire("k") == 0 for _ in range(1000))


@pytest.fixture
async def limited(settings: Settings) -> AsyncIterator[Container]:
    c = await build(
        settings.model_copy(update={"rate_limit_per_second": 0.5, "rate_limit_burst": 2})
    )
    yield c
    await c.aclose()


async def test_graphql_over_the_rate_is_429_with_retry_after(limited: Container) -> None:
    acme = await make_tenant(limited, "acme")
    other = await make_tenant(limited, "other")
    query = {"query": "{ memoryEvents(first: 1) { edges { cursor } } }"}
    async with await client_for(limited) as c:
        for _ in range(2):
            assert (await c.post("/graphql", json=query, headers=acme.headers)).status_code == 200
        r = await c.post("/graphql", json=query, headers=acme.headers)
        assert r.status_code == 429
        assert r.headers["retry-after"] == "2" and r.headers["x-request-id"]
        [error] = r.json()["errors"]
        assert error["extensions"]["code"] == "RATE_LIMITED" and "rate limit" in error["message"]
        # Another key (another tenant) has its own bucket.
        assert (await c.post("/graphql", json=query, headers=other.headers)).status_code == 200
        # No key is a 401 before any bucket is touched.
        assert (await c.post("/graphql", json=query)).status_code == 401


async def test_rest_over_the_rate_is_a_429_problem(limited: Container) -> None:
    acme = await make_tenant(limited, "acme")
    async with await client_for(limited) as c:
        for _ in range(2):
            assert (await c.get("/memory", headers=acme.headers)).status_code == 200
        r = await c.get("/memory", headers=acme.headers)
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["status"] == 429 and body["title"] == "Too Many Requests"
    assert body["errors"][0]["code"] == "RATE_LIMITED" and body["requestId"]


# ------------------------------------------------------------------------------- logs


def json_formatter() -> logging.Formatter:
    cfg = logs.config("debug", "json")["formatters"]["default"]
    factory = cfg.pop("()")
    module, _, name = factory.rpartition(".")
    formatter: logging.Formatter = getattr(__import__(module, fromlist=[name]), name)(**cfg)
    return formatter


async def test_log_records_carry_request_and_tenant_ids(
    app_client: httpx.AsyncClient,
    tenant: TenantFixture,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from app.services import entries

    async def boom(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(entries, "list_entries", boom)
    caplog.handler.addFilter(logs.ContextFilter())
    with caplog.at_level(logging.INFO):
        r = await app_client.get("/memory", headers=tenant.headers | {"X-Request-Id": "req-42"})
    assert r.status_code == 500
    [record] = [rec for rec in caplog.records if rec.getMessage() == "REST request failed"]
    line = json.loads(json_formatter().format(record))
    assert line["request_id"] == "req-42" and line["tenant_id"] == tenant.id
    assert line["level"] == "ERROR" and line["logger"] == "app.edge.rest"
    assert "exc_info" in line  # the traceback, for the operator


async def test_no_key_secret_or_body_in_any_log_record(
    container: Container,
    app_client: httpx.AsyncClient,
    tenant: TenantFixture,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A full flow (appends, entries, search, context, errors, a compaction through a
    gateway with a key and DLP) at DEBUG: no record, formatted, names a secret or a body."""
    body = "Zanzibar-tangerine budget of 45000 agreed with Priya"
    title = "Quixotic-marmalade decision"
    gateway_key = "gk-very-secret-4242"
    gw = FakeGateway(auto=summary_of)
    await gw.start()
    caplog.handler.addFilter(logs.ContextFilter())
    logs.quiet_libraries()
    try:
        with caplog.at_level(logging.DEBUG):
            h = tenant.headers
            old = (datetime.now(UTC) - timedelta(days=200)).isoformat()
            events = [
                {
                    "scope": "entity",
                    "scopeRef": "ent_acme",
                    "kind": "call_summary",
                    "body": f"{body} #{i}",
                    "occurredAt": old,
                }
                for i in range(3)
            ]
            assert (await app_client.post("/memory/events", json=events, headers=h)).is_success
            variables = {
                "input": {"scope": "ENTITY", "scopeRef": "ent_acme", "kind": "k", "body": body}
            }
            r = await app_client.post(
                "/graphql", json={"query": APPEND, "variables": variables}, headers=h
            )
            assert r.status_code == 200
            entry = {"scope": "entity", "scopeRef": "ent_acme", "title": title, "summary": body}
            assert (await app_client.post("/memory", json=entry, headers=h)).status_code == 201
            await app_client.get("/memory", params={"search": "Zanzibar"}, headers=h)
            await app_client.get(
                "/memory/context",
                params={"scope": "entity", "scopeRef": "ent_acme", "query": body},
                headers=h,
            )
            bad = {**entry, "importance": 99}
            assert (await app_client.post("/memory", json=bad, headers=h)).status_code == 422
            assert (
                await app_client.get("/memory", headers={"Authorization": "Bearer jm_x"})
            ).status_code == 401
            await policies.configure_tenant(
                container.control,
                tenant.id,
                gateway_url=gw.base_url,
                gateway_key=gateway_key,
                models=["m1"],
                gateway_timeout_s=5,
            )
            run = await compact_tenant(container, tenant.id, trigger="cli")
            assert run.buckets_compacted == 1
            assert gw.received[0].headers["authorization"] == f"Bearer {gateway_key}"
    finally:
        await gw.stop()
    formatter = json_formatter()
    # The test's own HTTP client logs the URLs it asks for: that is not the server's log.
    lines = [
        formatter.format(rec)
        for rec in caplog.records
        if not (rec.name == "httpx" and "http://testserver" in rec.getMessage())
    ]
    assert lines, "the flow logged nothing: the test would prove nothing"
    text = "\n".join(lines)
    for secret in (tenant.key, gateway_key, "Zanzibar", "Quixotic", "Priya"):
        assert secret not in text, secret
    for line in lines:
        assert {"request_id", "tenant_id", "time", "level", "logger"} <= json.loads(line).keys()


def test_access_log_lines_drop_the_query_string() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/memory?search=Zanzibar+budget", "1.1", 200),
        None,
    )
    assert logs.AccessLogFilter().filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "GET /memory?… HTTP/1.1" 200'
