"""GraphQL over HTTP: the abuse limits (depth, aliases, tokens, and the caps every list,
batch and search already has) and the GraphQL-over-HTTP spec's media type negotiation."""

from typing import Any

import httpx
import pytest
from starlette.requests import Request
from strawberry.asgi import GraphQL

from app.deps import Container
from app.edge.answers import JSON, wants_graphql_response
from app.edge.graphql_http.view import GraphQLView
from app.graphql.schema import schema
from app.services import limits
from tests.conftest import TenantFixture

GQL_RESPONSE = "application/graphql-response+json"
ACCEPT_NEW = {"Accept": f"{GQL_RESPONSE}, application/json;q=0.9"}
APPEND_MANY = """mutation($input: [AppendMemoryEventInput!]!) {
  appendMemoryEvents(input: $input) { events { id } errors { field code message } } }"""
EVENT = {"scope": "INSTITUTIONAL", "kind": "note", "body": "b"}


async def post(
    client: httpx.AsyncClient,
    t: TenantFixture,
    query: str,
    variables: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    body = {"query": query, "variables": variables or {}}
    return await client.post("/graphql", json=body, headers={**t.headers, **(headers or {})})


def deep_query(depth: int) -> str:
    """memoryEvent → compressedInto → sourceEvents → edges → node → …: `depth` object fields
    below the root field and a leaf below them, at depth + 1 (the root's fields are at 1)."""
    levels = ["compressedInto", "sourceEvents", "edges", "node"]
    names = ['memoryEvent(id: "evt_x")'] + [levels[i % 4] for i in range(depth)]
    return "{ " + " { ".join(names) + " { __typename" + " }" * (len(names) + 1)


def aliased(count: int) -> str:
    return "{ " + " ".join(f"a{i}: __typename" for i in range(count)) + " }"


def only_error(response: httpx.Response) -> dict[str, Any]:
    [error] = response.json()["errors"]
    assert isinstance(error, dict)
    return error


# -------------------------------------------------------------------- abuse limits


async def test_a_query_deeper_than_the_limit_is_refused_naming_it(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    ok = await post(client, tenant, deep_query(limits.GRAPHQL_MAX_DEPTH - 1))
    assert ok.status_code == 200 and "errors" not in ok.json(), ok.text
    response = await post(client, tenant, deep_query(limits.GRAPHQL_MAX_DEPTH))
    assert response.status_code == 200  # application/json: errors come with a 200
    assert response.json()["data"] is None
    error = only_error(response)
    assert f"maximum operation depth of {limits.GRAPHQL_MAX_DEPTH}" in error["message"]


async def test_introspection_is_not_counted_as_depth(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    nested = "{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType {"
    query = nested + " name } } } } } } } } } }"
    response = await post(client, tenant, query)
    assert "errors" not in response.json(), response.text


async def test_more_aliases_than_the_limit_are_refused_naming_it(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    ok = await post(client, tenant, aliased(limits.GRAPHQL_MAX_ALIASES))
    assert "errors" not in ok.json()
    error = only_error(await post(client, tenant, aliased(limits.GRAPHQL_MAX_ALIASES + 1)))
    assert error["message"] == (
        f"{limits.GRAPHQL_MAX_ALIASES + 1} aliases found. Allowed: {limits.GRAPHQL_MAX_ALIASES}"
    )


async def test_a_document_over_the_token_limit_is_refused_before_parsing_it_all(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    def query(kinds: int) -> str:  # 19 tokens (with <EOF>) + one per kind
        listed = " ".join(['"k"'] * kinds)
        return f"{{ memoryEvents(filter: {{kinds: [{listed}]}}) {{ edges {{ cursor }} }} }}"

    error = only_error(await post(client, tenant, query(limits.GRAPHQL_MAX_TOKENS - 18)))
    assert error["message"] == (
        f"Syntax Error: Document contains more than {limits.GRAPHQL_MAX_TOKENS} tokens."
        " Parsing aborted."
    )
    # One token fewer is parsed; the list (plus its object and itself: + 2 values) is then
    # refused by the literal values bound.
    parsed = only_error(await post(client, tenant, query(limits.GRAPHQL_MAX_TOKENS - 19)))
    assert parsed["message"] == (
        f"The document has {limits.GRAPHQL_MAX_TOKENS - 19 + 2} literal values; "
        f"the limit is {limits.GRAPHQL_MAX_VALUES}."
    )


@pytest.mark.parametrize(
    "query",
    [
        '{ memoryEntries(filter: {search: "%s"}) { edges { cursor } } }',
        '{ memoryEvents(filter: {search: "%s"}) { edges { cursor } } }',
        '{ memoryContext(scope: INSTITUTIONAL, query: "%s") { tokens } }',
    ],
    ids=["entries", "events", "context"],
)
async def test_search_over_the_limit_is_a_client_error_naming_it(
    client: httpx.AsyncClient, tenant: TenantFixture, query: str
) -> None:
    response = await post(client, tenant, query % ("x" * (limits.SEARCH_MAX_CHARS + 1)))
    error = only_error(response)
    assert str(limits.SEARCH_MAX_CHARS) in error["message"].replace(",", "")
    assert error["extensions"]["code"] != "INTERNAL_SERVER_ERROR"
    ok = await post(client, tenant, query % ("x" * limits.SEARCH_MAX_CHARS))
    assert "errors" not in ok.json(), ok.text


async def test_a_batch_over_the_limit_is_refused_and_stores_nothing(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    response = await post(client, tenant, APPEND_MANY, {"input": [EVENT] * (limits.BATCH_MAX + 1)})
    payload = response.json()["data"]["appendMemoryEvents"]
    assert payload["events"] == []
    [error] = payload["errors"]
    assert error["code"] == "TOO_LARGE" and str(limits.BATCH_MAX) in error["message"].replace(
        ",", ""
    )
    count = await post(client, tenant, "{ memoryEvents(first: 1) { edges { cursor } } }")
    assert count.json()["data"]["memoryEvents"]["edges"] == []


# ------------------------------------------------------------- GraphQL over HTTP


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("", False),
        ("*/*", False),
        ("application/json", False),
        (GQL_RESPONSE, True),
        (f"{GQL_RESPONSE}, application/json", True),  # a tie goes to the new type
        (f"application/json, {GQL_RESPONSE};q=0.5", False),
        (f"{GQL_RESPONSE};q=0.9, application/json;q=0.8", True),
        (f"{GQL_RESPONSE};q=0", False),
        (f"{GQL_RESPONSE};q=oops", False),
        ("text/html", False),
    ],
)
def test_accept_negotiation(accept: str, expected: bool) -> None:
    assert wants_graphql_response(accept) is expected
    assert wants_graphql_response(accept) is expected  # cached: the same answer again


def test_cached_accept_negotiation_keeps_each_headers_answer() -> None:
    headers = [f"{GQL_RESPONSE}, application/json", "application/json", f"{GQL_RESPONSE};q=0"]
    for _ in range(3):
        for accept in headers:
            assert wants_graphql_response(accept) is wants_graphql_response.__wrapped__(accept)
    # More distinct headers than the cache holds: still each one's own answer.
    for n in range(600):
        accept = f"{GQL_RESPONSE};q={n % 3 / 2}, application/json;q=0.5"
        assert wants_graphql_response(accept) is (n % 3 != 0)  # a tie goes to the new type
    assert wants_graphql_response.cache_info().currsize <= 256


async def test_sub_response_is_strawberrys(container: Container) -> None:
    view = GraphQLView(schema, container.settings)
    request = Request({"type": "http", "method": "POST", "headers": [], "path": "/graphql"})
    ours = await view.get_sub_response(request)
    theirs = await GraphQL.get_sub_response(view, request)
    assert ours.headers.raw == theirs.headers.raw == []
    assert ours.status_code is None and theirs.status_code is None
    assert ours.background is None and theirs.background is None
    assert ours.body == theirs.body == b""
    assert ours.media_type == JSON  # set by ours for the negotiated type


async def test_graphql_response_json_success_is_200_in_that_media_type(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    response = await post(client, tenant, "{ __typename }", headers=ACCEPT_NEW)
    assert response.status_code == 200
    assert response.headers["content-type"] == GQL_RESPONSE
    assert response.json() == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize(
    "query",
    [
        "{ memoryEvents(",  # parse
        "{ noSuchField }",  # validation
        aliased(limits.GRAPHQL_MAX_ALIASES + 1),  # a limit is a validation error
    ],
    ids=["parse", "validation", "limit"],
)
async def test_request_errors_are_4xx_without_data_in_graphql_response_json(
    client: httpx.AsyncClient, tenant: TenantFixture, query: str
) -> None:
    response = await post(client, tenant, query, headers=ACCEPT_NEW)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == GQL_RESPONSE
    body = response.json()
    assert "data" not in body and body["errors"][0]["message"]
    # application/json clients see what they always saw: 200, data null, the same errors.
    legacy = await post(client, tenant, query)
    assert legacy.status_code == 200
    assert legacy.headers["content-type"] == "application/json"
    for error in body["errors"]:
        assert error["extensions"]["requestId"] == response.headers["x-request-id"]
        error["extensions"]["requestId"] = legacy.headers["x-request-id"]
    assert legacy.json() == {"data": None, **body}


async def test_a_variables_error_is_a_request_error_too(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    query = "query($first: Int!) { memoryEvents(first: $first) { edges { cursor } } }"
    response = await post(client, tenant, query, {"first": "many"}, headers=ACCEPT_NEW)
    assert response.status_code == 400
    assert "data" not in response.json()


async def test_field_errors_keep_data_and_200_in_graphql_response_json(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    # memoryEvents is non-null, so its error nulls the whole data: still an execution
    # result (the error has a path), so 200 with a data key.
    query = "{ memoryEvents(first: 101) { edges { cursor } } }"
    response = await post(client, tenant, query, headers=ACCEPT_NEW)
    assert response.status_code == 200
    assert response.headers["content-type"] == GQL_RESPONSE
    body = response.json()
    assert "data" in body and body["errors"][0]["path"] == ["memoryEvents"]


async def test_get_queries_work_and_get_mutations_are_405(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    for accept in ["application/json", GQL_RESPONSE]:
        headers = {**tenant.headers, "Accept": accept}
        ok = await client.get("/graphql", params={"query": "{ __typename }"}, headers=headers)
        assert ok.status_code == 200 and ok.json() == {"data": {"__typename": "Query"}}
        assert ok.headers["content-type"] == accept
        assert ok.headers["vary"] == "Accept"
        mutation = 'mutation { deleteMemoryEntry(id: "mem_x") { deletedId } }'
        refused = await client.get("/graphql", params={"query": mutation}, headers=headers)
        assert refused.status_code == 405
        assert refused.headers["allow"] == "POST"
        assert "mutations are not allowed when using GET" in refused.text
        # A document with both: choosing the mutation by name is refused as well.
        both = "query Q { __typename } mutation M { runCompaction(input: {}) { run { id } } }"
        named = {"query": both, "operationName": "M"}
        assert (await client.get("/graphql", params=named, headers=headers)).status_code == 405
        named = {"query": both, "operationName": "Q"}
        assert (await client.get("/graphql", params=named, headers=headers)).status_code == 200
