"""Hypothesis properties of what clients hand back to us: cursors (any string as `after`
is a page or InvalidInput on every list, never a crash) and idempotency keys (any key:
one event however often it is sent; another body is a Conflict). Search strings are
covered in test_entries.py (any string: results or a clear error)."""

import base64
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from app.errors import Conflict, InvalidInput
from app.services import compaction, cursors, entries, events, limits
from app.services.records import EntryFilter, EntryIn, EventFilter, EventIn, Scope
from app.storage.tenants import TenantDb

INSTITUTIONAL = Scope.INSTITUTIONAL
SERVICE_DB = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

KINDS = ["entries", "entries-search", "events", "events-search", "runs", "sources"]
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=40)
    | st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat())
)
# Strings a client might send: noise, base64 of noise, and well-formed cursors of every
# list holding any JSON values (a forged or another list's cursor).
after_strings = (
    st.text(max_size=300)
    | st.binary(max_size=200).map(lambda b: base64.urlsafe_b64encode(b).decode())
    | st.builds(cursors.encode, st.sampled_from(KINDS), st.lists(json_scalars, max_size=3))
)

List = Callable[[TenantDb, str], Awaitable[Any]]
LISTS: dict[str, List] = {
    "entries": lambda db, after: entries.list_entries(db, EntryFilter(), first=2, after=after),
    "entries-search": lambda db, after: entries.list_entries(
        db, EntryFilter(search="roas"), first=2, after=after
    ),
    "events": lambda db, after: events.list_events(db, EventFilter(), first=2, after=after),
    "events-search": lambda db, after: events.list_events(
        db, EventFilter(search="roas"), first=2, after=after
    ),
    "runs": lambda db, after: compaction.list_runs(db, first=2, after=after),
    "sources": lambda db, after: entries.source_events(db, "mem_x", first=2, after=after),
}


# -------------------------------------------------------------------------- cursors


@given(
    kind=st.sampled_from(KINDS),
    key=st.lists(st.text() | st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=4),
)
def test_a_cursor_decodes_to_the_key_it_was_made_of(kind: str, key: list[Any]) -> None:
    types = tuple(type(v) for v in key)
    cursor = cursors.encode(kind, key)
    assume(len(cursor) <= 1000)  # longer is refused (no list's key is anywhere near)
    assert cursors.decode(kind, cursor, types=types) == key
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    other = next(k for k in KINDS if k != kind)
    with pytest.raises(InvalidInput, match="not a cursor of this list"):
        cursors.decode(other, cursor, types=types)


@pytest.fixture
async def seeded(db: TenantDb) -> TenantDb:
    """A few events and entries that match "roas", so that lists have pages to turn."""
    for i in range(5):
        body = f"ROAS note {i}"
        await events.append_event(db, EventIn(INSTITUTIONAL, None, kind="note", body=body))
        await entries.create_entry(db, EntryIn(INSTITUTIONAL, None, title=body, summary="roas"))
    return db


@pytest.mark.parametrize("name", list(LISTS))
@SERVICE_DB
@given(after=after_strings)
@example(after="")
@example(after=cursors.encode("events", ["9999-12-31T23:59:59-23:59", "evt_x"]))
@example(after=cursors.encode("entries-search", [2**63, 0]))
async def test_any_after_gives_a_page_or_invalid_input(
    seeded: TenantDb, name: str, after: str
) -> None:
    try:
        page = await LISTS[name](seeded, after)
    except InvalidInput as exc:
        assert exc.field == ["after"] and "cursor" in exc.message
    else:
        assert len(page.edges) <= 2


@pytest.mark.parametrize("name", ["entries", "entries-search", "events", "events-search"])
async def test_every_cursor_we_hand_out_turns_the_page(seeded: TenantDb, name: str) -> None:
    seen: list[str] = []
    after: str | None = None
    while True:
        page = await LISTS[name](seeded, after)  # type: ignore[arg-type]
        seen += [edge.node.id for edge in page.edges]
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert len(seen) == len(set(seen)) == 5


# ------------------------------------------------------------------ idempotency keys

# Any one-line key of up to the limit, as clients send them (delivery ids, hashes, prose).
keys = st.text(
    st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=limits.REF_MAX_CHARS
).filter(str.strip)
fresh = itertools.count()


@SERVICE_DB
@given(key=keys)
@example(key="crm-webhook-8812")
@example(key=" padded ")
@example(key="x" * limits.REF_MAX_CHARS)
async def test_an_idempotency_key_stores_one_event_and_refuses_another_body(
    db: TenantDb, key: str
) -> None:
    # Hypothesis may repeat a key across examples; the body names this example, so a
    # repeat is a fresh (key, body) pair only where the key is fresh.
    key = f"{next(fresh)}:{key}"[: limits.REF_MAX_CHARS]
    event = EventIn(Scope.TEAM, "growth", kind="webhook", body="b", idempotency_key=key)
    first = await events.append_event(db, event)
    again = await events.append_event(db, event)
    assert (first.replayed, again.replayed) == (False, True)
    assert again.event == first.event
    other = EventIn(Scope.TEAM, "growth", kind="webhook", body="c", idempotency_key=key)
    with pytest.raises(Conflict) as exc:
        await events.append_event(db, other)
    assert exc.value.field[-1] == "idempotencyKey"
    growth = EventFilter(scope=Scope.TEAM, scope_ref="growth")
    page = await events.list_events(db, growth, first=100, after=None)
    assert sum(edge.node.id == first.event.id for edge in page.edges) == 1
