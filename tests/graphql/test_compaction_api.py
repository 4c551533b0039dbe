"""compactionRuns, runCompaction, MemoryEntry.sourceEvents and MemoryEvent.compressedInto."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import strawberry
from strawberry.tools import merge_types

from app.deps import Container
from app.graphql.compaction import CompactionMutation, CompactionQuery
from app.graphql.request_context import Context
from app.graphql.schema import Mutation, Query
from app.services import events, policies
from app.services.records import EventFilter, EventIn, Scope
from app.storage.tenants import TenantDb
from tests.conftest import TenantFixture

schema = strawberry.Schema(
    query=merge_types("Query", (Query, CompactionQuery)),
    mutation=merge_types("Mutation", (Mutation, CompactionMutation)),
)

RUN = """
mutation($input: RunCompactionInput) {
  runCompaction(input: $input) {
    run {
      id status trigger dryRun startedAt finishedAt cutoff bucketsConsidered bucketsCompacted
      bucketsSkipped periods eventsCompressed promptTokens completionTokens budgetExceeded
      summariser problems
      entriesCreated {
        id title source importance tags
        sourceEvents(first: 2) {
          edges { node { id compressedInto { id } } }
          pageInfo { hasNextPage endCursor }
        }
      }
    }
    errors { field code message }
  }
}"""

RUNS = """
query($first: Int, $after: String) {
  compactionRuns(first: $first, after: $after) {
    edges { cursor node { id status dryRun eventsCompressed entriesCreated { id } } }
    pageInfo { hasNextPage endCursor }
  }
}"""


@pytest.fixture
def gql(container: Container, db: TenantDb) -> Any:
    async def execute(query: str, **variables: Any) -> Any:
        ctx = Context(container=container, db=db, request_id="test-request")
        return await schema.execute(query, variable_values=variables, context_value=ctx)

    return execute


async def seed(db: TenantDb, ref: str, n: int) -> list[str]:
    old = datetime.now(UTC) - timedelta(days=120)
    batch = [
        EventIn(
            Scope.ENTITY,
            ref,
            "decision",
            f"Decision {i} on {ref}.",
            occurred_at=old + timedelta(hours=i),
        )
        for i in range(n)
    ]
    return [a.event.id for a in await events.append_events(db, batch)]


async def test_run_compaction_folds_and_links_both_ways(gql: Any, db: TenantDb) -> None:
    ids = await seed(db, "ent_acme", 3)
    result = await gql(RUN)
    assert result.errors is None
    payload = result.data["runCompaction"]
    assert payload["errors"] == []
    run = payload["run"]
    assert run["status"] == "SUCCEEDED" and run["trigger"] == "API" and run["dryRun"] is False
    assert (run["bucketsConsidered"], run["bucketsCompacted"], run["bucketsSkipped"]) == (1, 1, 0)
    assert (run["periods"], run["eventsCompressed"]) == (1, 3)
    assert run["summariser"] == "builtin-extractive-v2" and run["problems"] == []
    assert run["finishedAt"] is not None
    [entry] = run["entriesCreated"]
    assert entry["source"] == "COMPACTOR" and entry["importance"] == 4
    assert entry["tags"] == ["compactor", "decision"]
    sources = entry["sourceEvents"]
    assert [e["node"]["id"] for e in sources["edges"]] == ids[:2]
    assert all(e["node"]["compressedInto"]["id"] == entry["id"] for e in sources["edges"])
    assert sources["pageInfo"]["hasNextPage"] is True

    rest = await gql(
        """query($id: ID!, $after: String) { memoryEntry(id: $id) {
             sourceEvents(first: 5, after: $after) { edges { node { id } } } } }""",
        id=entry["id"],
        after=sources["pageInfo"]["endCursor"],
    )
    assert [e["node"]["id"] for e in rest.data["memoryEntry"]["sourceEvents"]["edges"]] == ids[2:]

    listed = (await gql(RUNS)).data["compactionRuns"]
    assert [e["node"]["id"] for e in listed["edges"]] == [run["id"]]
    assert listed["edges"][0]["node"]["entriesCreated"] == [{"id": entry["id"]}]


async def test_a_dry_run_reports_without_writing(gql: Any, db: TenantDb) -> None:
    await seed(db, "ent_acme", 4)
    run = (await gql(RUN, input={"dryRun": True})).data["runCompaction"]["run"]
    assert run["dryRun"] is True and run["status"] == "SUCCEEDED"
    assert (run["bucketsCompacted"], run["eventsCompressed"], run["entriesCreated"]) == (1, 4, [])
    page = await events.list_events(db, EventFilter(compressed=True), first=10, after=None)
    assert page.edges == []


async def test_runs_page_newest_first(gql: Any, db: TenantDb) -> None:
    made = [(await gql(RUN)).data["runCompaction"]["run"]["id"] for _ in range(3)]
    first = (await gql(RUNS, first=2)).data["compactionRuns"]
    assert [e["node"]["id"] for e in first["edges"]] == made[::-1][:2]
    assert first["pageInfo"]["hasNextPage"] is True
    rest = (await gql(RUNS, first=2, after=first["pageInfo"]["endCursor"])).data["compactionRuns"]
    assert [e["node"]["id"] for e in rest["edges"]] == made[:1]
    assert rest["pageInfo"] == {"hasNextPage": False, "endCursor": rest["edges"][0]["cursor"]}


@pytest.mark.parametrize(
    ("variables", "field", "message"),
    [
        ({"first": 101}, ["first"], "first is capped at 100, got 101"),
        ({"first": -1}, ["first"], "first must not be negative"),
        ({"after": "garbage!"}, ["after"], "after is not a valid cursor"),
    ],
)
async def test_bad_paging_is_a_query_error(
    gql: Any, variables: dict[str, Any], field: list[str], message: str
) -> None:
    result = await gql(RUNS, **variables)
    [error] = result.errors
    assert error.message == message
    assert error.extensions == {
        "code": "INVALID",
        "field": field,
        "classification": "BAD_USER_INPUT",
    }


async def test_a_budget_stop_comes_back_as_a_payload_error(
    gql: Any, container: Container, tenant: TenantFixture, db: TenantDb
) -> None:
    ids = await seed(db, "ent_acme", 3)
    await policies.configure_tenant(
        container.control,
        tenant.id,
        gateway_url="http://127.0.0.1:9/v1",
        models=["m"],
        budget_daily_tokens=10,
    )
    payload = (await gql(RUN)).data["runCompaction"]
    assert payload["run"]["status"] == "FAILED" and payload["run"]["budgetExceeded"] is True
    assert payload["run"]["problems"][0].startswith("entity ent_acme: budget: needs ~")
    assert payload["errors"] == [
        {
            "field": [],
            "code": "BUDGET_EXCEEDED",
            "message": "the token budget would be exceeded: some buckets were not compacted",
        }
    ]
    page = await events.list_events(db, EventFilter(compressed=False), first=10, after=None)
    assert {e.node.id for e in page.edges} == set(ids)


async def test_a_deleted_summary_drops_out_of_entries_created(gql: Any, db: TenantDb) -> None:
    await seed(db, "ent_acme", 3)
    run = (await gql(RUN)).data["runCompaction"]["run"]
    entry_id = run["entriesCreated"][0]["id"]
    deleted = await gql(
        "mutation($id: ID!) { deleteMemoryEntry(id: $id) { deletedId } }", id=entry_id
    )
    assert deleted.data["deleteMemoryEntry"]["deletedId"] == entry_id
    listed = (await gql(RUNS)).data["compactionRuns"]["edges"][0]["node"]
    assert listed["entriesCreated"] == [] and listed["eventsCompressed"] == 3
