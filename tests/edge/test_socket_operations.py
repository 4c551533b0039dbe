"""Queries and mutations over the websocket at /graphql (graphql-transport-ws, as gql and
urql send every operation when told to), against a real uvicorn, with the fast path on and
off: each kind answers as POST /graphql answers it (the tenant's database, the limits, the
cost checks, the errors with their codes and masking), subscriptions keep streaming on the
same socket, a revoked key and the rate limit are refused as on HTTP, and nothing of it
logs an error."""

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.deps import Container
from app.edge.app import create_app
from app.services import entries, tenants
from app.services.limits import GRAPHQL_MAX_ALIASES, GRAPHQL_MAX_DEPTH
from app.services.ratelimit import RateLimiter
from tests.conftest import TenantFixture
from tests.edge.test_graphql_limits import aliased, deep_query
from tests.support.graphql_ws import GraphQLSocket, graphql_socket, served

ENTRIES = "query($first: Int) { memoryEntries(first: $first) { edges { node { id title } } } }"
CREATE_ENTRY = """mutation { createMemoryEntry(input: {scope: ENTITY, scopeRef: "ent_acme",
  title: "Renewal", summary: "Signed for two years."}) { entry { id } errors { code } } }"""
APPEND = """mutation($input: AppendMemoryEventInput!) { appendMemoryEvent(input: $input) {
  replayed event { id body scopeRef } errors { field code } } }"""
SCOPES = "{ memoryScopes(first: 10) { edges { node { scope scopeRef eventCount entryCount } } } }"
ENDPOINTS = "{ webhookEndpoints { id url types enabled } }"
CREATE_ENDPOINT = """mutation($input: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $input) { endpoint { url types enabled } errors { field code } } }"""
SUBSCRIBE = "subscription { memoryChanged { type objectId } }"


@pytest.fixture(params=[True, False], ids=["fast-path", "stock"])
def settings(request: pytest.FixtureRequest, tmp_path: Path, database_url: str | None) -> Settings:
    """conftest's, with the GraphQL fast path on and off, revocation immediate (no auth
    cache) and webhooks allowed to loopback."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path / "data",
        database_url=database_url,
        graphql_fast_path=request.param,
        auth_cache_seconds=0,
        webhook_allowed_networks="127.0.0.1/32",
    )


@pytest.fixture
async def base_url(container: Container) -> AsyncIterator[str]:
    async with served(create_app(container=container)) as url:
        yield url


@pytest.fixture
async def http(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client


async def over_http(
    http: httpx.AsyncClient, t: TenantFixture, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """POST /graphql's answer, in the socket's shape: the body, or {"error": errors} for a
    request error (no data: parse, validation, variables)."""
    r = await http.post(
        "/graphql", json={"query": query, "variables": variables or {}}, headers=t.headers
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return (
        {"error": body["errors"]}
        if body.get("data") is None and all("path" not in e for e in body.get("errors", []))
        else body
    )


def without_request_ids(answer: Any) -> Any:
    """`answer` with every error's requestId replaced (each operation has its own)."""
    if isinstance(answer, dict):
        return {
            k: "<id>" if k == "requestId" else without_request_ids(v) for k, v in answer.items()
        }
    if isinstance(answer, list):
        return [without_request_ids(v) for v in answer]
    return answer


def request_ids(answer: Any) -> list[str]:
    if isinstance(answer, dict):
        own = [answer["requestId"]] if "requestId" in answer else []
        return own + [i for v in answer.values() for i in request_ids(v)]
    if isinstance(answer, list):
        return [i for v in answer for i in request_ids(v)]
    return []


async def both(
    socket: GraphQLSocket,
    http: httpx.AsyncClient,
    t: TenantFixture,
    query: str,
    variables: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The operation over the socket and over HTTP: the same answer (request ids aside)."""
    by_socket = await socket.execute(query, variables)
    by_http = await over_http(http, t, query, variables)
    assert without_request_ids(by_socket) == without_request_ids(by_http)
    return by_socket


async def test_every_kind_of_operation_answers_over_the_socket_as_over_http(
    base_url: str, http: httpx.AsyncClient, tenant: TenantFixture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with graphql_socket(base_url, tenant.key) as socket:
        # A query on an empty and on a written tenant database (written over the socket).
        assert await both(socket, http, tenant, ENTRIES) == {
            "data": {"memoryEntries": {"edges": []}}
        }
        made = await socket.execute(CREATE_ENTRY)
        assert made["data"]["createMemoryEntry"]["errors"] == []
        listed = await both(socket, http, tenant, ENTRIES, {"first": 5})
        [edge] = listed["data"]["memoryEntries"]["edges"]
        assert edge["node"] == {
            "id": made["data"]["createMemoryEntry"]["entry"]["id"],
            "title": "Renewal",
        }

        # appendMemoryEvent: written to the key's tenant; HTTP replays the same event.
        event = {
            "scope": "ENTITY",
            "scopeRef": "ent_acme",
            "kind": "note",
            "body": "hello",
            "idempotencyKey": "once",
        }
        appended = (await socket.execute(APPEND, {"input": event}))["data"]["appendMemoryEvent"]
        assert appended["errors"] == [] and appended["replayed"] is False
        replayed = (await over_http(http, tenant, APPEND, {"input": event}))["data"]
        assert replayed["appendMemoryEvent"] == {**appended, "replayed": True}

        scopes = await both(socket, http, tenant, SCOPES)
        [scope] = [e["node"] for e in scopes["data"]["memoryScopes"]["edges"]]
        assert scope == {
            "scope": "ENTITY",
            "scopeRef": "ent_acme",
            "eventCount": 1,
            "entryCount": 1,
        }

        # createWebhookEndpoint over each transport, then the same list over both.
        hook = {"url": "http://127.0.0.1:9/hook", "types": ["entry.created"]}
        created = await socket.execute(CREATE_ENDPOINT, {"input": hook})
        assert created == await over_http(http, tenant, CREATE_ENDPOINT, {"input": hook})
        assert created["data"]["createWebhookEndpoint"]["errors"] == []
        endpoints = await both(socket, http, tenant, ENDPOINTS)
        assert len(endpoints["data"]["webhookEndpoints"]) == 2
        refused = await both(
            socket, http, tenant, CREATE_ENDPOINT, {"input": {"url": "http://10.0.0.1/hook"}}
        )
        [error] = refused["data"]["createWebhookEndpoint"]["errors"]
        assert error["field"] == ["input", "url"]

    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert "Traceback" not in caplog.text


# Each refused with the error POST /graphql gives: (query, variables, what its message says).
REFUSED = [
    ("{ memoryEvents(first: 101) { edges { cursor } } }", None, "101"),  # a list limit
    (deep_query(GRAPHQL_MAX_DEPTH + 1), None, f"maximum operation depth of {GRAPHQL_MAX_DEPTH}"),
    (aliased(GRAPHQL_MAX_ALIASES + 1), None, f"Allowed: {GRAPHQL_MAX_ALIASES}"),
    ("{ " + "...F " * 101 + "} fragment F on Query { __typename }", None, "spreads"),  # cost
    ("{ memoryEntries { edges { nope } } }", None, "Cannot query field 'nope'"),  # validation
    ("{ memoryEntries {", None, "Syntax Error"),  # parse
    (
        "query($first: Int!) { memoryEvents(first: $first) { edges { cursor } } }",
        {"first": "many"},
        "Int cannot represent",
    ),  # a variable's value
    ("{ a } { b }", None, "must be the only defined operation"),  # two anonymous operations
]


async def test_limits_cost_checks_and_request_errors_are_the_same_as_over_http(
    base_url: str, http: httpx.AsyncClient, tenant: TenantFixture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with graphql_socket(base_url, tenant.key) as socket:
        for query, variables, says in REFUSED:
            answer = await socket.execute(query, variables)
            assert without_request_ids(answer) == without_request_ids(
                await over_http(http, tenant, query, variables)
            ), query
            errors = answer.get("error") or answer["errors"]
            assert says in errors[0]["message"], (query, errors)
            assert errors[0]["extensions"]["code"], errors
            assert all(request_ids(answer)), answer
        # Refusals of the view's own (a 400 over HTTP): an operationName the document lacks.
        unnamed = {"query": "query A { __typename }", "operationName": "B"}
        await socket.send({"id": "b", "type": "subscribe", "payload": unnamed})
        by_http = await http.post("/graphql", json=unnamed, headers=tenant.headers)
        assert by_http.status_code == 400
        assert without_request_ids((await socket.receive())["payload"]) == without_request_ids(
            by_http.json()["errors"]
        )
        # A malformed payload field is the 400 POST gives, naming the field.
        await socket.send({"id": "x", "type": "subscribe", "payload": {"query": 5}})
        bad = await socket.receive()
        assert bad["type"] == "error" and bad["id"] == "x"
        assert bad["payload"][0]["message"] == "`query` must be a string or null, not number"
        await socket.send({"id": "y", "type": "subscribe", "payload": {}})
        missing = await socket.receive()
        assert missing["payload"][0]["message"] == "No GraphQL query found in the request"
        # The socket is still good for the next operation.
        assert (await socket.execute("{ __typename }")) == {"data": {"__typename": "Query"}}

    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_an_unexpected_error_is_masked_and_logged_once_as_over_http(
    base_url: str,
    http: httpx.AsyncClient,
    tenant: TenantFixture,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret detail of a bug")

    monkeypatch.setattr(entries, "list_entries", broken)
    async with graphql_socket(base_url, tenant.key) as socket:
        answer = await both(socket, http, tenant, ENTRIES)
    [error] = answer["errors"]
    assert error["message"] == "Internal server error"
    assert error["extensions"]["code"] == "INTERNAL_SERVER_ERROR"
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    # One line per transport, each with its request id; never the detail in an answer.
    assert len(logged) == 2 and error["extensions"]["requestId"] in logged[0].getMessage()
    assert "secret detail" not in str(answer)


async def test_subscriptions_stream_beside_queries_and_mutations_on_one_socket(
    base_url: str, tenant: TenantFixture
) -> None:
    async with graphql_socket(base_url, tenant.key) as socket:
        sub_id = await socket.start(SUBSCRIBE)
        # The subscription starts from now on: a query after it proves it is running.
        assert (await socket.execute("{ __typename }")) == {"data": {"__typename": "Query"}}
        event = {"scope": "ENTITY", "scopeRef": "ent_acme", "kind": "note", "body": "live"}
        op_id = await socket.start(APPEND, {"input": event})
        got: dict[str, list[dict[str, Any]]] = {}
        while len(got.get(sub_id, [])) < 1 or len(got.get(op_id, [])) < 2:
            message = await socket.receive()
            got.setdefault(message["id"], []).append(message)
        appended = got[op_id][0]["payload"]["data"]["appendMemoryEvent"]["event"]
        change = got[sub_id][0]["payload"]["data"]["memoryChanged"]
        assert change == {"type": "event.appended", "objectId": appended["id"]}


async def test_a_key_revoked_after_connection_init_is_refused_and_the_socket_closed(
    base_url: str, container: Container
) -> None:
    tenant, issued = await tenants.create_tenant(container.control, container.tenants, "acme")
    async with graphql_socket(base_url, issued.secret) as socket:
        assert (await socket.execute("{ __typename }")) == {"data": {"__typename": "Query"}}
        await tenants.revoke_key(container.control, issued.key.id)
        answer = await socket.execute(ENTRIES)
        [error] = answer["error"]
        assert error["extensions"]["code"] == "UNAUTHENTICATED"
        assert error["message"] == "invalid or revoked API key"
        assert (await socket.closed())[0] == 4403


@pytest.mark.parametrize("settings", [True], indirect=True, ids=["fast-path"])
async def test_the_rate_limit_counts_each_operation_as_a_request(
    base_url: str, container: Container, tenant: TenantFixture
) -> None:
    container.limiter = RateLimiter(0.001, 1)
    async with graphql_socket(base_url, tenant.key) as socket:
        assert (await socket.execute("{ __typename }")) == {"data": {"__typename": "Query"}}
        answer = await socket.execute(ENTRIES)
    [error] = answer["error"]
    assert error["extensions"]["code"] == "RATE_LIMITED"
    assert error["extensions"]["retryAfter"] >= 1
    assert "rate limit of 0.001 requests per second (burst 1)" in error["message"]
