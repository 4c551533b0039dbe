"""The tools on a real tenant database (both backends): results, pagination, every error path."""

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from app.edge.mcp.server import call, tool_specs
from app.edge.mcp.tools import ToolFailure
from app.edge.rest.encoding import dumps
from app.edge.rest.response_models import MEMORY_ENTRY, MEMORY_EVENT
from app.services import entries, events, limits
from app.services.records import EntrySource, Scope
from app.storage.tenants import TenantDb

MAX_ROWS = 100


async def ok(db: TenantDb, name: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    return await call(name, arguments, db, MAX_ROWS)


async def fails(db: TenantDb, name: str, **arguments: Any) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        await call(name, arguments, db, MAX_ROWS)
    return caught.value


def test_the_schemas_enums_are_the_services_and_carry_the_limits() -> None:
    specs = {t.name: t for t in tool_specs()}
    save = specs["save_memory"].input_schema["properties"]
    assert save["source"]["enum"] == [s.value for s in EntrySource if s.value != "compactor"]
    assert list(specs) == ["remember", "recall", "search_memory", "save_memory", "forget"]
    remember = specs["remember"].input_schema
    assert remember["required"] == ["scope", "kind", "body"]
    assert remember["additionalProperties"] is False
    assert remember["properties"]["scope"]["enum"] == [s.value for s in Scope]
    # A limit in bytes, which JSON Schema cannot state: the description does.
    assert f"{limits.EVENT_BODY_MAX_BYTES} bytes" in remember["properties"]["body"]["description"]
    assert remember["properties"]["scopeRef"]["maxLength"] == limits.REF_MAX_CHARS
    assert remember["properties"]["occurredAt"]["format"] == "date-time"
    search = specs["search_memory"].input_schema["properties"]
    assert search["limit"]["maximum"] == limits.PAGE_MAX
    assert save["tags"]["maxItems"] == limits.TAGS_MAX  # a filter's tags have no such limit
    assert search["query"]["maxLength"] == limits.SEARCH_MAX_CHARS
    for spec in specs.values():
        assert spec.description and len(spec.description) > 100  # written for a model
        for prop in spec.input_schema["properties"].values():
            assert prop.get("description"), spec.name


async def test_remember_replays_an_idempotency_key_and_refuses_its_reuse(db: TenantDb) -> None:
    args = {"scope": "project", "scopeRef": "p1", "kind": "decision", "body": "Use Postgres."}
    first, text = await ok(db, "remember", **args, idempotencyKey="k1", source="claude_code")
    event = first["event"]
    assert first["replayed"] is False and event["id"].startswith("evt_") and event["id"] in text
    assert event["source"] == "claude_code" and event["idempotencyKey"] == "k1"
    again, text = await ok(db, "remember", **args, idempotencyKey="k1", source="claude_code")
    assert again == {"event": event, "replayed": True} and "Already" in text
    reused = await fails(db, "remember", **(args | {"body": "Other."}), idempotencyKey="k1")
    assert (reused.code, reused.field) == ("CONFLICT", "idempotencyKey")


async def test_recall_packs_entries_and_events_and_cites_their_ids(db: TenantDb) -> None:
    saved, _ = await ok(
        db,
        "save_memory",
        scope="entity",
        scopeRef="acme",
        title="Acme pays net 60",
        summary="Acme's contract: invoices due in 60 days.",
        tags=["billing"],
        importance=5,
    )
    event, _ = await ok(
        db,
        "remember",
        scope="entity",
        scopeRef="acme",
        kind="call_summary",
        body="Call with Acme: renewal in March.",
    )
    other, _ = await ok(db, "remember", scope="entity", scopeRef="globex", kind="note", body="x")
    got, text = await ok(db, "recall", scope="entity", scopeRef="acme", query="invoices")
    assert got["entryIds"] == [saved["entry"]["id"]]
    assert got["eventIds"] == [event["event"]["id"]]
    assert text == got["markdown"] and "net 60" in text and "renewal in March" in text
    assert other["event"]["id"] not in text
    assert got["truncated"] is False and 0 < got["tokens"] <= 2000
    small, _ = await ok(db, "recall", scope="entity", scopeRef="acme", maxTokens=64)
    assert small["tokens"] <= 64
    empty, text = await ok(
        db, "recall", scope="team", scopeRef="nobody", includeInstitutional=False
    )
    assert empty["markdown"] == "" and "No memory yet" in text


async def test_search_memory_pages_with_its_cursor(db: TenantDb) -> None:
    ids = set()
    for i in range(5):
        saved, _ = await ok(
            db,
            "save_memory",
            scope="project",
            scopeRef="p1",
            title=f"Fact {i}",
            summary=f"Deployment fact number {i}",
            tags=["deploy"],
        )
        ids.add(saved["entry"]["id"])
    await ok(db, "save_memory", scope="project", scopeRef="p2", title="Else", summary="deploy")
    for query in (None, "deployment"):
        seen: list[str] = []
        cursor = None
        while True:
            args: dict[str, Any] = {"scope": "project", "scopeRef": "p1", "limit": 2}
            if query:
                args["query"] = query
            if cursor:
                args["cursor"] = cursor
            page, text = await ok(db, "search_memory", **args)
            assert len(page["entries"]) <= 2
            for e in page["entries"]:
                assert e["id"] in text
                assert ("score" in e) is (query is not None)
            seen += [e["id"] for e in page["entries"]]
            cursor = page["nextCursor"]
            assert page["hasMore"] is (cursor is not None)
            if cursor is None:
                break
            assert "cursor" in text
        assert sorted(seen) == sorted(ids), query
    tagged, _ = await ok(db, "search_memory", tags=["deploy"], minImportance=3, limit=100)
    assert {e["id"] for e in tagged["entries"]} == ids


async def test_save_memory_updates_with_expected_version_and_forget_deletes(
    db: TenantDb,
) -> None:
    created, _ = await ok(db, "save_memory", scope="institutional", title="T", summary="S")
    entry = created["entry"]
    assert (entry["version"], entry["importance"], entry["source"]) == (1, 3, "manual")
    updated, text = await ok(
        db, "save_memory", id=entry["id"], summary="S2", tags=["a"], expectedVersion=1
    )
    assert updated["entry"]["version"] == 2 and updated["entry"]["summary"] == "S2"
    assert "Updated" in text
    stale = await fails(db, "save_memory", id=entry["id"], title="T3", expectedVersion=1)
    assert (stale.code, stale.field) == ("CONFLICT", "expectedVersion")
    assert "version 2" in stale.message
    moved = await fails(db, "save_memory", id=entry["id"], scope="team")
    assert (moved.code, moved.field) == ("INVALID", "scope")
    gone, text = await ok(db, "forget", id=entry["id"])
    assert gone == {"deletedId": entry["id"]}
    again = await fails(db, "forget", id=entry["id"])
    assert (again.code, again.field) == ("NOT_FOUND", "id")
    missing = await fails(db, "save_memory", id=entry["id"], title="x")
    assert (missing.code, missing.field) == ("NOT_FOUND", "id")


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "field", "says"),
    [
        ("remember", {"kind": "a", "body": "b"}, "INVALID", "scope", "required"),
        ("remember", {"scope": "galaxy", "kind": "a", "body": "b"}, "INVALID", "scope", "entity"),
        ("remember", {"scope": "entity", "kind": "a", "body": "b"}, "INVALID", "scopeRef", ""),
        (
            "remember",
            {"scope": "institutional", "kind": "Bad Kind", "body": "b"},
            "INVALID",
            "kind",
            "snake_case",
        ),
        (
            "remember",
            {"scope": "institutional", "kind": "k", "body": "x" * 70_000},
            "TOO_LARGE",
            "body",
            str(limits.EVENT_BODY_MAX_BYTES),
        ),
        (
            "remember",
            {"scope": "institutional", "kind": "k", "body": "b", "occurredAt": "soon"},
            "INVALID",
            "occurredAt",
            "ISO 8601",
        ),
        (
            "remember",
            {
                "scope": "institutional",
                "kind": "k",
                "body": "b",
                "occurredAt": (datetime.now(UTC) + timedelta(days=3)).isoformat(),
            },
            "INVALID",
            "occurredAt",
            f"{limits.FUTURE_SKEW_HOURS} hours",
        ),
        (
            "remember",
            {"scope": "team", "scopeRef": "r" * 201, "kind": "k", "body": "b"},
            "TOO_LARGE",
            "scopeRef",
            str(limits.REF_MAX_CHARS),
        ),
        (
            "remember",
            {"scope": "institutional", "kind": "k", "body": "b", "tenant": "ten_x"},
            "INVALID",
            "tenant",
            "not an argument",
        ),
        ("recall", {"scope": "institutional", "maxTokens": 10}, "INVALID", "maxTokens", "64"),
        (
            "recall",
            {"scope": "institutional", "maxTokens": "many"},
            "INVALID",
            "maxTokens",
            "integer",
        ),
        (
            "recall",
            {"scope": "institutional", "query": "q" * 1001},
            "TOO_LARGE",
            "query",
            str(limits.SEARCH_MAX_CHARS),
        ),
        ("search_memory", {"limit": 101}, "INVALID", "limit", str(limits.PAGE_MAX)),
        ("search_memory", {"cursor": "garbage"}, "INVALID", "cursor", "cursor"),
        (
            "search_memory",
            {"query": "q" * 1001},
            "TOO_LARGE",
            "query",
            str(limits.SEARCH_MAX_CHARS),
        ),
        ("search_memory", {"minImportance": 9}, "INVALID", "minImportance", "1 to 5"),
        ("search_memory", {"tags": "x"}, "INVALID", "tags", "list"),
        ("save_memory", {"scope": "institutional", "title": "t"}, "INVALID", "summary", "required"),
        (
            "save_memory",
            {
                "scope": "institutional",
                "title": "t",
                "summary": "s",
                "tags": [f"t{i}" for i in range(21)],
            },
            "TOO_LARGE",
            "tags",
            str(limits.TAGS_MAX),
        ),
        (
            "save_memory",
            {"scope": "institutional", "title": "t" * 201, "summary": "s"},
            "TOO_LARGE",
            "title",
            str(limits.TITLE_MAX_CHARS),
        ),
        (
            "save_memory",
            {"scope": "institutional", "title": "t", "summary": "s", "importance": 6},
            "INVALID",
            "importance",
            "1 to 5",
        ),
        (
            "save_memory",
            {"scope": "institutional", "title": "t", "summary": "s", "source": "compactor"},
            "INVALID",
            "source",
            "reserved",
        ),
        (
            "save_memory",
            {"scope": "institutional", "title": "t", "summary": "s", "expectedVersion": 1},
            "INVALID",
            "expectedVersion",
            "id",
        ),
        ("forget", {}, "INVALID", "id", "required"),
        ("nonexistent", {}, "NOT_FOUND", None, "remember"),
    ],
)
async def test_bad_arguments_are_tool_errors_naming_the_field_and_the_limit(
    db: TenantDb, tool: str, arguments: dict[str, Any], code: str, field: str | None, says: str
) -> None:
    failure = await fails(db, tool, **arguments)
    assert (failure.code, failure.field) == (code, field), failure.message
    assert says in failure.message
    structured, text = failure.answer()
    assert structured["error"]["field"] == field and failure.message in text


async def test_results_are_the_records_as_rest_answers_them(db: TenantDb) -> None:
    saved, _ = await ok(db, "save_memory", scope="institutional", title="T", summary="S")
    stored = await entries.get_entry(db, saved["entry"]["id"])
    assert stored is not None
    assert saved["entry"] == orjson.loads(dumps(MEMORY_ENTRY.json(stored)))
    remembered, _ = await ok(
        db,
        "remember",
        scope="institutional",
        kind="k",
        body="b",
        idempotencyKey="i",
        occurredAt="2026-03-01T10:00:00+02:00",
    )
    event = await events.get_event(db, remembered["event"]["id"])
    assert event is not None
    rest = orjson.loads(dumps(MEMORY_EVENT.json(event)))
    # All but what its caller just wrote and what the compactor sets later; and its key.
    left_out = ("body", "compressedAt", "compressedInto")
    expected = {k: v for k, v in rest.items() if k not in left_out} | {"idempotencyKey": "i"}
    assert remembered["event"] == expected
    assert remembered["event"]["occurredAt"] == "2026-03-01T08:00:00Z"
