"""memoryContext through `schema.execute` (fields, defaults, query errors) and over HTTP."""

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from app.deps import Container
from app.graphql.request_context import Context
from app.graphql.schema import schema
from app.services import entries, events
from app.services.context import loader as context_service
from app.services.records import EntryIn, EventIn, Scope
from app.storage.models import events_table
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction
from app.tokens import estimate_tokens
from tests.conftest import TenantFixture

CONTEXT = """
query($scope: MemoryScope!, $scopeRef: String, $query: String, $maxTokens: Int,
      $includeInstitutional: Boolean) {
  memoryContext(scope: $scope, scopeRef: $scopeRef, query: $query, maxTokens: $maxTokens,
                includeInstitutional: $includeInstitutional) {
    markdown tokens truncated
    entries { id scope scopeRef title importance source }
    events { id kind scope scopeRef compressedAt compressedInto { id } }
  }
}"""
ACME = {"scope": "ENTITY", "scopeRef": "acme-outdoor"}


@pytest.fixture
def run(container: Container, db: TenantDb) -> Any:
    async def execute(document: str, **variables: Any) -> Any:
        ctx = Context(container=container, db=db, request_id="test-request")
        return await schema.execute(document, variable_values=variables, context_value=ctx)

    return execute


async def seed(db: TenantDb) -> dict[str, str]:
    def entry(scope: Scope, ref: str | None, title: str, importance: int) -> EntryIn:
        return EntryIn(
            scope=scope, scope_ref=ref, title=title, summary=f"{title}.", importance=importance
        )

    budget = await entries.create_entry(
        db, entry(Scope.ENTITY, "acme-outdoor", "Acme budget $85k", 5)
    )
    policy = await entries.create_entry(db, entry(Scope.INSTITUTIONAL, None, "Budget policy", 4))
    call = await events.append_event(
        db,
        EventIn(
            scope=Scope.ENTITY,
            scope_ref="acme-outdoor",
            kind="call_summary",
            body="Dana: budget is fine.",
        ),
    )
    folded = await events.append_event(
        db,
        EventIn(
            scope=Scope.ENTITY,
            scope_ref="acme-outdoor",
            kind="call_summary",
            body="An older call, folded into a summary.",
        ),
    )
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            update(events_table)
            .where(events_table.c.id == folded.event.id)
            .values(compressed_at=datetime(2026, 5, 1, tzinfo=UTC), compressed_into=budget.id)
        )
    return {
        "budget": budget.id,
        "policy": policy.id,
        "call": call.event.id,
        "folded": folded.event.id,
    }


async def test_memory_context_fields(run: Any, db: TenantDb) -> None:
    ids = await seed(db)
    r = await run(CONTEXT, **ACME, query="what is Acme's budget?", maxTokens=1000)
    assert r.errors is None
    got = r.data["memoryContext"]
    assert got["tokens"] == estimate_tokens(got["markdown"]) <= 1000
    assert got["truncated"] is False
    assert [e["id"] for e in got["entries"]] == [ids["budget"], ids["policy"]]
    assert got["entries"][0] == {
        "id": ids["budget"],
        "scope": "ENTITY",
        "scopeRef": "acme-outdoor",
        "title": "Acme budget $85k",
        "importance": 5,
        "source": "MANUAL",
    }
    assert got["events"] == [
        {
            "id": ids["call"],
            "kind": "call_summary",
            "scope": "ENTITY",
            "scopeRef": "acme-outdoor",
            "compressedAt": None,
            "compressedInto": None,
        }
    ]
    assert got["markdown"].startswith("## Memory\n\n### Acme budget $85k\n")
    assert (
        "## Events on the question, newest first" in got["markdown"]
        and ids["folded"] not in got["markdown"]
    )


async def test_defaults_and_explicit_nulls(run: Any, db: TenantDb) -> None:
    ids = await seed(db)
    omitted = (await run(CONTEXT, **ACME)).data["memoryContext"]
    nulls = await run(CONTEXT, **ACME, query=None, maxTokens=None, includeInstitutional=None)
    assert nulls.data["memoryContext"] == omitted
    assert {e["id"] for e in omitted["entries"]} == {ids["budget"], ids["policy"]}
    without = (await run(CONTEXT, **ACME, includeInstitutional=False)).data["memoryContext"]
    assert [e["id"] for e in without["entries"]] == [ids["budget"]]


@pytest.mark.parametrize(
    ("variables", "code", "field"),
    [
        ({"scope": "ENTITY"}, "INVALID", ["scopeRef"]),
        ({"scope": "INSTITUTIONAL", "scopeRef": "x"}, "INVALID", ["scopeRef"]),
        ({**ACME, "maxTokens": 10}, "INVALID", ["maxTokens"]),
        ({**ACME, "maxTokens": context_service.MAX_TOKENS + 1}, "INVALID", ["maxTokens"]),
        ({**ACME, "query": "budget " * 200}, "TOO_LARGE", ["query"]),
        ({**ACME, "query": "???"}, "INVALID", ["query"]),
    ],
)
async def test_expected_errors_are_query_errors(
    run: Any, variables: dict[str, Any], code: str, field: list[str]
) -> None:
    r = await run(CONTEXT, **variables)
    assert r.data is None
    [error] = r.errors
    assert error.message and error.extensions == {
        "code": code,
        "field": field,
        "classification": "BAD_USER_INPUT",
    }


async def test_over_http(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    async with container.tenants.lease(tenant.id) as db:
        ids = await seed(db)
    response = await client.post(
        "/graphql",
        json={"query": CONTEXT, "variables": {**ACME, "query": "budget", "maxTokens": 500}},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body
    got = body["data"]["memoryContext"]
    assert got["tokens"] <= 500 and ids["budget"] in got["markdown"]
    assert [e["id"] for e in got["events"]] == [ids["call"]]
