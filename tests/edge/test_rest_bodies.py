"""REST event bodies are built as dicts (response_models.event_body) rather than through the
MemoryEvent model, which stays for the OpenAPI document: both must answer the same JSON,
key for key and byte for byte, for every kind of event."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import update

from app.deps import Container
from app.edge.rest import response_models as rest_out
from app.edge.rest.encoding import dumps
from app.services import entries, events
from app.services.records import EntryIn, Event, EventFilter, EventIn, Scope
from app.storage.models import events_table as ev_t
from app.storage.transactions import write_transaction
from tests.conftest import TenantFixture

AT = datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=UTC)
BASE = Event(
    id="evt_01jdx0v7c2k9m5ht0q3b2a1xyz", scope=Scope.ENTITY, scope_ref="ent_acme",
    kind="decision", body="Acme approved the budget.", source="inbox", source_ref="msg_1",
    occurred_at=AT, recorded_at=AT, compressed_at=None, compressed_into=None,
    idempotency_key=None,
)  # fmt: skip
PLUS_2 = timezone(timedelta(hours=2))
EVENTS = [
    BASE,
    replace(BASE, scope=Scope.INSTITUTIONAL, scope_ref=None, source=None, source_ref=None),
    *(replace(BASE, scope=s) for s in Scope),
    replace(BASE, compressed_at=AT + timedelta(days=1), compressed_into="mem_01abc"),
    replace(BASE, body='unicode: é 日本 🙂 \u2028 "quoted" back\\slash\ttab\nnewline \x00\x1f',
            kind="call_summary", source="ünï", source_ref="ref \"x\"",
            scope_ref="ent_ø", idempotency_key="key-1"),  # fmt: skip
    replace(BASE, body=""),
    replace(BASE, occurred_at=AT.replace(microsecond=0),
            recorded_at=AT.replace(microsecond=120000)),
    replace(BASE, occurred_at=datetime(1970, 1, 1, tzinfo=UTC),
            recorded_at=datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    # Not in UTC (never so out of the database): converted as MemoryEvent.of converts.
    replace(BASE, occurred_at=AT.astimezone(PLUS_2), recorded_at=AT.replace(tzinfo=PLUS_2),
            compressed_at=AT.astimezone(timezone(timedelta(hours=-5))), compressed_into="m"),
    replace(BASE, occurred_at=AT.replace(tzinfo=timezone(timedelta(0)))),
]  # fmt: skip


def model_json(e: Event) -> bytes:
    return orjson.dumps(rest_out.MemoryEvent.of(e).model_dump(mode="json"))


@pytest.mark.parametrize("event", EVENTS, ids=[str(i) for i in range(len(EVENTS))])
def test_event_body_is_the_model_dump(event: Event) -> None:
    body = rest_out.event_body(event)
    assert dumps(body) == model_json(event)
    assert list(body) == list(rest_out.MemoryEvent.model_json_schema(by_alias=True)["properties"])
    assert orjson.loads(dumps({"items": [body]}))["items"][0] == orjson.loads(model_json(event))


def test_event_body_keeps_up_with_the_model() -> None:
    # A field added to MemoryEvent must be added to event_body too.
    fields = {f.alias for f in rest_out.MemoryEvent.model_fields.values()}
    assert set(rest_out.event_body(BASE)) == fields


def test_out_of_range_timestamps_fail_alike() -> None:
    far = replace(BASE, occurred_at=datetime(1, 1, 1, tzinfo=PLUS_2))
    with pytest.raises(ValueError, match="out of range"):
        rest_out.event_body(far)
    with pytest.raises(ValueError, match="out of range"):
        rest_out.MemoryEvent.of(far)


async def test_http_pages_answer_the_model_dump_of_the_stored_events(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    async with container.tenants.lease(tenant.id) as db:
        entry = await entries.create_entry(
            db, EntryIn(scope=Scope.ENTITY, scope_ref="ent_acme", title="t", summary="s")
        )
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        appended = await events.append_events(db, [
            EventIn(scope=Scope.ENTITY, scope_ref="ent_acme", kind="decision",
                    body=f"é {i} 🙂 \"q\"" if i % 2 else f"plain {i}",
                    source=None if i % 3 else "inbox", source_ref=None if i % 4 else f"r{i}",
                    occurred_at=t0 + timedelta(minutes=i, microseconds=i % 2 * 1234))
            for i in range(7)
        ])  # fmt: skip
        async with write_transaction(db.engine) as conn:
            await conn.execute(
                update(ev_t)
                .where(ev_t.c.id.in_([a.event.id for a in appended[:3]]))
                .values(compressed_at=t0 + timedelta(days=1), compressed_into=entry.id)
            )
        page_size = 3
        expected: list[Any] = []
        after = None
        while True:
            page = await events.list_events(
                db, EventFilter(scope=Scope.ENTITY, scope_ref="ent_acme"),
                first=page_size, after=after,
            )  # fmt: skip
            expected.append((
                [orjson.loads(model_json(e.node)) for e in page.edges],
                page.end_cursor if page.has_next_page else None,
            ))  # fmt: skip
            if not page.has_next_page:
                break
            after = page.end_cursor
    assert len(expected) == 3 and any(item["compressedAt"] for item in expected[-1][0])

    got: list[Any] = []
    cursor = None
    while True:
        params = {"scope": "entity", "scopeRef": "ent_acme", "limit": page_size}
        r = await client.get(
            "/memory/events", params={**params, **({"cursor": cursor} if cursor else {})},
            headers=tenant.headers,
        )  # fmt: skip
        assert r.status_code == 200, r.text
        body = r.json()
        got.append((body["items"], body["nextCursor"]))
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert got == expected


async def test_append_answers_the_model_dump(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    one = {"scope": "entity", "scopeRef": "ent_é", "kind": "decision", "body": "b 🙂",
           "occurredAt": "2026-03-01T10:00:00.5+02:00"}  # fmt: skip
    r = await client.post("/memory/events", json=one, headers=tenant.headers)
    assert r.status_code == 201, r.text
    batch = [{**one, "body": "x", "sourceRef": "s"}, {**one, "occurredAt": None}]
    rb = await client.post("/memory/events", json=batch, headers=tenant.headers)
    assert rb.status_code == 201, rb.text
    async with container.tenants.lease(tenant.id) as db:
        for answered in [r.json(), *rb.json()["items"]]:
            stored = await events.get_event(db, answered["id"])
            assert stored is not None
            assert answered == orjson.loads(model_json(stored))
    assert r.json()["occurredAt"] == "2026-03-01T08:00:00.500000Z"
