"""Schemathesis against the GraphQL schema, as served (introspected over /graphql), on a
throwaway tenant: every generated query and mutation gets an answer below 500 and never an
unexpected (masked) error. Bounded: a few examples per root field, no per-example deadline
(the first request of a tenant opens its database), well under a minute in all."""

import asyncio
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.graphql.schemas import GraphQLSchema
from starlette.applications import Starlette

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from app.graphql.schema import schema
from app.services import tenants

EXAMPLES_PER_FIELD = 20
GRAPHQL_RESPONSE = "application/graphql-response+json"


async def _throwaway_tenant(config: Settings) -> str:
    container = await build(config)
    try:
        _, issued = await tenants.create_tenant(container.control, container.tenants, "fuzz")
        return issued.secret
    finally:
        await container.aclose()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Starlette, dict[str, str]]:
    """The app and the tenant's auth header. Its lifespan builds the container in
    schemathesis' event loop, as in test_rest_fuzz.py."""
    config = Settings(_env_file=None, data_dir=Path(tmp_path_factory.mktemp("gqlfuzz")))
    key = asyncio.run(_throwaway_tenant(config))
    return create_app(settings=config), {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def api_schema(fuzzed: tuple[Starlette, dict[str, str]]) -> GraphQLSchema:
    app, headers = fuzzed
    return schemathesis.graphql.from_asgi("/graphql", app, headers=headers)


# One test per root field, named like schemathesis' labels ("Query.memoryEntries"); listed
# from the code's schema so that loading the served one waits for the fixtures.
FIELDS = [
    (root.name, name)
    for root in (schema._schema.query_type, schema._schema.mutation_type)
    if root is not None
    for name in root.fields
]


def unexpected_errors(body: Any) -> list[Any]:
    errors = body.get("errors") or [] if isinstance(body, dict) else []
    return [e for e in errors if (e.get("extensions") or {}).get("code") == "INTERNAL_SERVER_ERROR"]


@pytest.mark.parametrize(("root", "field"), FIELDS, ids=[f"{r}.{f}" for r, f in FIELDS])
def test_graphql_answers_generated_operations_without_a_server_error(
    api_schema: GraphQLSchema,
    fuzzed: tuple[Starlette, dict[str, str]],
    root: str,
    field: str,
) -> None:
    _, headers = fuzzed
    operation = api_schema[root][field]

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_FIELD,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def check(case: schemathesis.Case[Any]) -> None:
        # Each case twice: as a legacy client (200 with any errors) and as one asking for
        # the GraphQL-over-HTTP media type (a 4xx exactly when there is no `data`).
        for accept in ["application/json", GRAPHQL_RESPONSE]:
            response = case.call(headers={**headers, "Accept": accept})
            assert response.status_code < 500, (case.body, response.text)
            assert response.headers["content-type"] == [accept], response.headers
            body = response.json()
            assert isinstance(body, dict) and ("data" in body or "errors" in body), response.text
            assert not unexpected_errors(body), (case.body, response.text)
            if accept == GRAPHQL_RESPONSE:
                assert (response.status_code == 200) == ("data" in body), response.text
            else:
                assert response.status_code == 200 and "data" in body, response.text

    check()
