"""A REST body is its service record as JSON (app/edge/rest/response_models.py): for every
noun, exactly the record's fields (so a new field reaches REST and the OpenAPI document with
no REST code), the same bytes as pydantic's dump of the record, which the document describes,
and timestamps in UTC."""

import enum
import types
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Union, get_args, get_origin, get_type_hints

import httpx
import orjson
import pytest
from pydantic import TypeAdapter
from pydantic.alias_generators import to_camel
from sqlalchemy import update

from app.deps import Container
from app.edge.rest.encoding import dumps
from app.edge.rest.openapi import openapi_document
from app.edge.rest.response_models import MEMORY_EVENT, NOUNS, Noun
from app.services import entries, events
from app.services.records import EntryIn, Event, EventFilter, EventIn, Scope
from app.storage.models import events_table as ev_t
from app.storage.transactions import write_transaction
from tests.conftest import TenantFixture

AT = datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=UTC)
BASE = Event(
    id="evt_01jdx0v7c2k9m5ht0q3b2a1xyz",
    scope=Scope.ENTITY,
    scope_ref="ent_acme",
    kind="decision",
    body="Acme approved the budget.",
    source="inbox",
    source_ref="msg_1",
    occurred_at=AT,
    recorded_at=AT,
    compressed_at=None,
    compressed_into=None,
    idempotency_key=None,
)
PLUS_2 = timezone(timedelta(hours=2))
EVENTS = [
    BASE,
    replace(BASE, scope=Scope.INSTITUTIONAL, scope_ref=None, source=None, source_ref=None),
    *(replace(BASE, scope=s) for s in Scope),
    replace(BASE, compressed_at=AT + timedelta(days=1), compressed_into="mem_01abc"),
    replace(
        BASE,
        body='unicode: é 日本 🙂 \u2028 "quoted" back\\slash\ttab\nnewline \x00\x1f',
        kind="call_summary",
        source="ünï",
        source_ref='ref "x"',
        scope_ref="ent_ø",
        idempotency_key="key-1",
    ),
    replace(BASE, body=""),
    replace(
        BASE, occurred_at=AT.replace(microsecond=0), recorded_at=AT.replace(microsecond=120000)
    ),
    replace(
        BASE,
        occurred_at=datetime(1970, 1, 1, tzinfo=UTC),
        recorded_at=datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ),
    replace(BASE, occurred_at=AT.replace(tzinfo=timezone(timedelta(0)))),
]


def model_json(e: Event) -> bytes:
    """The event as pydantic dumps the record, without the field REST hides."""
    return TypeAdapter(Event).dump_json(e, exclude={"idempotency_key"})


@pytest.mark.parametrize("event", EVENTS, ids=[str(i) for i in range(len(EVENTS))])
def test_an_event_body_is_the_records_dump(event: Event) -> None:
    body = MEMORY_EVENT.json(event)
    assert dumps(body) == model_json(event)
    assert orjson.loads(dumps({"items": [body]}))["items"][0] == orjson.loads(model_json(event))


def test_timestamps_not_in_utc_are_answered_in_utc() -> None:
    # Never so out of the database; an append's answer carries the time the client gave.
    event = replace(
        BASE,
        occurred_at=AT.astimezone(PLUS_2),
        recorded_at=AT.replace(tzinfo=PLUS_2),
        compressed_at=AT.astimezone(timezone(timedelta(hours=-5))),
        compressed_into="m",
    )
    body = orjson.loads(dumps(MEMORY_EVENT.json(event)))
    assert body["occurredAt"] == body["compressedAt"] == "2026-03-04T05:06:07.000089Z"
    assert body["recordedAt"] == "2026-03-04T03:06:07.000089Z"


# ------------------------------------------------------ every noun, from its record


def sample(hint: Any, full: bool) -> Any:
    """A value of type `hint`: None where it may be, unless `full`."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return sample(kept[0], full) if full or len(kept) == len(args) else None
    if hint is Any:
        return {"id": "1", "nested": [1, "a", None]}
    if origin is dict:
        return {sample(args[0], full): sample(args[1], full)}
    if origin is list:
        return [sample(args[0], full), sample(args[0], full)]
    if origin is tuple:
        return tuple(sample(a, full) for a in args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return list(hint)[-1]
    if hint is datetime:
        return AT
    if hint in (str, int, float, bool):
        return hint(1)
    return record(hint, full)


def record(cls: Any, full: bool) -> Any:
    origin = get_origin(cls) or cls
    hints = get_type_hints(origin)
    params = dict(zip(getattr(origin, "__parameters__", ()), get_args(cls), strict=True))
    return origin(
        **{f.name: sample(params.get(hints[f.name], hints[f.name]), full) for f in fields(origin)}
    )


def expected_keys(noun: Noun[Any]) -> list[str]:
    """The record's fields but the hidden ones, camelCase; an inlined field's own in its place."""
    origin = get_origin(noun.record) or noun.record
    keys: list[str] = []
    for f in fields(origin):
        if noun.inline is not None and f.name == noun.inline[0]:
            keys += expected_keys(noun.inline[1])
        elif f.name not in noun.hidden:
            keys.append(to_camel(f.name))
    return keys


def pydantic_json(noun: Noun[Any], value: Any) -> Any:
    """pydantic's dump of the record as JSON, as the noun shapes it."""
    dumped = orjson.loads(TypeAdapter(noun.record).dump_json(value))
    out: dict[str, Any] = {}
    for f in fields(value):
        name, v = to_camel(f.name), getattr(value, f.name)
        if f.name in noun.hidden:
            continue
        if noun.inline is not None and f.name == noun.inline[0]:
            out.update(pydantic_json(noun.inline[1], v))
        elif f.name in noun.nested:
            many = isinstance(v, list)
            each = [pydantic_json(noun.nested[f.name], item) for item in (v if many else [v])]
            out[name] = each if many else each[0]
        else:
            out[name] = dumped[name]
    return out


@pytest.mark.parametrize("noun", NOUNS, ids=[n.name for n in NOUNS])
@pytest.mark.parametrize("full", [True, False], ids=["values", "nulls"])
def test_a_nouns_body_and_document_are_exactly_its_records_fields(
    noun: Noun[Any], full: bool
) -> None:
    value = record(noun.record, full)
    body = orjson.loads(dumps(noun.json(value)))
    assert list(body) == expected_keys(noun)
    assert body == pydantic_json(noun, value)
    schema = openapi_document()["components"]["schemas"][noun.name]
    assert list(schema["properties"]) == expected_keys(noun)


def test_every_noun_is_in_the_document() -> None:
    schemas = openapi_document()["components"]["schemas"]
    assert {n.name for n in NOUNS} <= set(schemas)


# ----------------------------------------------------------------------- over HTTP


async def test_http_pages_answer_the_dump_of_the_stored_events(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    async with container.tenants.lease(tenant.id) as db:
        entry = await entries.create_entry(
            db, EntryIn(scope=Scope.ENTITY, scope_ref="ent_acme", title="t", summary="s")
        )
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        appended = await events.append_events(
            db,
            [
                EventIn(
                    scope=Scope.ENTITY,
                    scope_ref="ent_acme",
                    kind="decision",
                    body=f'é {i} 🙂 "q"' if i % 2 else f"plain {i}",
                    source=None if i % 3 else "inbox",
                    source_ref=None if i % 4 else f"r{i}",
                    occurred_at=t0 + timedelta(minutes=i, microseconds=i % 2 * 1234),
                )
                for i in range(7)
            ],
        )
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
                db,
                EventFilter(scope=Scope.ENTITY, scope_ref="ent_acme"),
                first=page_size,
                after=after,
            )
            expected.append(
                (
                    [orjson.loads(model_json(e.node)) for e in page.edges],
                    page.end_cursor if page.has_next_page else None,
                )
            )
            if not page.has_next_page:
                break
            after = page.end_cursor
    assert len(expected) == 3 and any(item["compressedAt"] for item in expected[-1][0])

    got: list[Any] = []
    cursor = None
    while True:
        params = {"scope": "entity", "scopeRef": "ent_acme", "limit": page_size}
        r = await client.get(
            "/memory/events",
            params={**params, **({"cursor": cursor} if cursor else {})},
            headers=tenant.headers,
        )
        assert r.status_code == 200, r.text
        body = r.json()
        got.append((body["items"], body["nextCursor"]))
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert got == expected


async def test_append_answers_the_dump_of_the_stored_event(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    one = {
        "scope": "entity",
        "scopeRef": "ent_é",
        "kind": "decision",
        "body": "b 🙂",
        "occurredAt": "2026-03-01T10:00:00.5+02:00",
    }
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


def test_rest_hides_only_these_fields_of_the_records() -> None:
    # A field kept off REST is a decision about the public contract: it is made here too.
    assert {n.name: set(n.hidden) for n in NOUNS if n.hidden} == {
        "MemoryEvent": {"idempotency_key"},  # the client's own retry token
        "MemoryEntryItem": {"cursor"},  # a list's nextCursor stands for it
        "MemoryContext": {"matches"},  # answered as each entry's score and matchedTerms
        "WebhookDelivery": {"endpoint_id"},  # the path names the endpoint
    }
