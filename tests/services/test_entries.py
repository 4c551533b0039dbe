"""Curated entries through the services: CRUD, versions, provenance release, search."""

import asyncio
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, update

from app.errors import Conflict, ExpectedError, Forbidden, InvalidInput, NotFound, TooLarge
from app.services import cursors, entries, events, limits
from app.services.records import (
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    EventFilter,
    EventIn,
    Scope,
)
from app.storage.models import entry_sources_table, events_table
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction


def entry(
    title: str = "ROAS decision", summary: str = "Acme targets ROAS 4.0.", **kw: object
) -> EntryIn:
    base: dict[str, object] = {
        "scope": Scope.ENTITY,
        "scope_ref": "ent_acme",
        "title": title,
        "summary": summary,
    }
    base.update(kw)
    return EntryIn(**base)  # type: ignore[arg-type]


async def test_create_get_update_delete(db: TenantDb) -> None:
    e = await entries.create_entry(db, entry(tags=["decision", "roas", "decision"], importance=5))
    assert e.version == 1 and e.tags == ["decision", "roas"] and e.source is EntrySource.MANUAL
    assert await entries.get_entry(db, e.id) == e

    updated = await entries.update_entry(
        db, e.id, EntryPatch(summary="Acme targets ROAS 4.5."), by="key_test"
    )
    assert updated.version == 2 and updated.title == e.title and updated.importance == 5
    assert updated.updated_at >= e.updated_at and updated.created_at == e.created_at
    same = await entries.update_entry(db, e.id, EntryPatch(), by="key_test")
    assert same.version == 2  # nothing given, nothing changed

    with pytest.raises(Conflict) as info:
        await entries.update_entry(
            db, e.id, EntryPatch(title="x", expected_version=1), by="key_test"
        )
    assert info.value.field == ["expectedVersion"]
    ok = await entries.update_entry(
        db, e.id, EntryPatch(title="x", expected_version=2), by="key_test"
    )
    assert ok.version == 3 and ok.title == "x"

    assert await entries.delete_entry(db, e.id, by="key_test") == e.id
    assert await entries.get_entry(db, e.id) is None
    with pytest.raises(NotFound):
        await entries.delete_entry(db, e.id, by="key_test")
    with pytest.raises(NotFound):
        await entries.update_entry(db, e.id, EntryPatch(title="y"), by="key_test")


@pytest.mark.parametrize(
    ("bad", "field", "error"),
    [
        (entry(source=EntrySource.COMPACTOR), "source", Forbidden),
        (entry(scope=Scope.INSTITUTIONAL), "scopeRef", InvalidInput),
        (entry(scope_ref=None), "scopeRef", InvalidInput),
        (entry(title="two\nlines"), "title", InvalidInput),
        (entry(title=""), "title", InvalidInput),
        (entry(title="t" * (limits.TITLE_MAX_CHARS + 1)), "title", TooLarge),
        (entry(summary=""), "summary", InvalidInput),
        (entry(summary="s" * (limits.ENTRY_SUMMARY_MAX_BYTES + 1)), "summary", TooLarge),
        (entry(summary="before\x00after"), "summary", InvalidInput),  # PostgreSQL can't store it
        (entry(importance=0), "importance", InvalidInput),
        (entry(importance=6), "importance", InvalidInput),
        (entry(tags=[f"t{i}" for i in range(limits.TAGS_MAX + 1)]), "tags", TooLarge),
    ],
)
async def test_invalid_entries(
    db: TenantDb, bad: EntryIn, field: str, error: type[ExpectedError]
) -> None:
    with pytest.raises(error) as info:
        await entries.create_entry(db, bad)
    assert info.value.field == [field]
    assert (await entries.list_entries(db, EntryFilter(), first=10, after=None)).edges == []


@pytest.mark.parametrize("tag", ["", " padded", "x" * 65, "bell\x07"])
async def test_invalid_tags_name_their_index(db: TenantDb, tag: str) -> None:
    with pytest.raises(ExpectedError) as info:
        await entries.create_entry(db, entry(tags=["fine", tag]))
    assert info.value.field == ["tags", "1"]


async def test_deleting_a_compactor_entry_releases_its_events(db: TenantDb) -> None:
    folded = [
        (
            await events.append_event(db, EventIn(Scope.ENTITY, "ent_acme", "decision", f"e{i}"))
        ).event
        for i in range(3)
    ]
    now = datetime.now(UTC)
    async with write_transaction(db.engine) as conn:  # what the compactor writes
        summary = await entries.insert_entry(
            conn, entry(source=EntrySource.COMPACTOR, importance=4), now=now
        )
        await conn.execute(
            insert(entry_sources_table),
            [
                {"entry_id": summary.id, "event_id": e.id, "position": i}
                for i, e in enumerate(folded)
            ],
        )
        await conn.execute(
            update(events_table).values(compressed_at=now, compressed_into=summary.id)
        )
    sources = await entries.source_events(db, summary.id, first=2, after=None)
    assert [e.node.body for e in sources.edges] == ["e0", "e1"] and sources.has_next_page
    rest = await entries.source_events(db, summary.id, first=2, after=sources.end_cursor)
    assert [e.node.body for e in rest.edges] == ["e2"]
    compressed = await events.list_events(db, EventFilter(compressed=True), first=10, after=None)
    assert len(compressed.edges) == 3

    await entries.delete_entry(db, summary.id, by="key_test")
    released = await events.list_events(db, EventFilter(compressed=False), first=10, after=None)
    assert {e.node.id for e in released.edges} == {e.id for e in folded}
    assert all(e.node.compressed_into is None for e in released.edges)


async def test_list_filters(db: TenantDb) -> None:
    a = await entries.create_entry(db, entry(tags=["decision", "roas"], importance=5))
    b = await entries.create_entry(
        db, entry(title="Call notes", tags=["call"], source=EntrySource.CALL)
    )
    c = await entries.create_entry(db, entry(title="Beta", scope_ref="ent_beta", tags=["decision"]))
    d = await entries.create_entry(
        db, entry(title="Policy", scope=Scope.INSTITUTIONAL, scope_ref=None)
    )

    async def ids(**kw: object) -> list[str]:
        page = await entries.list_entries(db, EntryFilter(**kw), first=20, after=None)  # type: ignore[arg-type]
        return [e.node.id for e in page.edges]

    assert await ids() == [d.id, c.id, b.id, a.id]  # most recently updated first
    assert await ids(tags=["decision"]) == [c.id, a.id]
    assert await ids(tags=["decision", "roas"]) == [a.id]
    assert await ids(tags=["decision"], scope=Scope.ENTITY, scope_ref="ent_acme") == [a.id]
    assert await ids(scope=Scope.INSTITUTIONAL) == [d.id]
    assert await ids(scope_ref="ent_beta") == [c.id]
    assert await ids(min_importance=4) == [a.id]
    assert await ids(sources=[EntrySource.CALL]) == [b.id]
    assert await ids(tags=["nope"]) == []
    # Tags are exact: a tag that is a prefix or a scopeRef lookalike never matches.
    assert await ids(tags=["decisio"]) == []
    await entries.update_entry(db, a.id, EntryPatch(summary="touched"), by="key_test")
    assert (await ids())[0] == a.id


async def test_entry_pagination(db: TenantDb) -> None:
    made = [await entries.create_entry(db, entry(title=f"n{i}")) for i in range(9)]
    seen: list[str] = []
    after = None
    while True:
        page = await entries.list_entries(db, EntryFilter(), first=4, after=after)
        seen += [e.node.id for e in page.edges]
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert seen == [e.id for e in reversed(made)]


async def test_search_ranks_entries_matching_more_meaningful_words(db: TenantDb) -> None:
    both = await entries.create_entry(
        db,
        entry("Acme ROAS decision", "Acme decided to hold ROAS at 4.0 for Q3.", tags=["decision"]),
    )
    one = await entries.create_entry(db, entry("Beta ROAS", "Beta's ROAS fell to 2.1."))
    await entries.create_entry(db, entry("Office move", "What did the team decide about desks?"))
    await entries.create_entry(
        db, entry("Acme holiday party", "Acme staff party is on the 12th.", scope_ref="ent_other")
    )
    page = await entries.list_entries(
        db,
        EntryFilter(search="What did Acme decide about ROAS last quarter?"),
        first=10,
        after=None,
    )
    ranked = [e.node.id for e in page.edges]
    assert ranked[0] == both.id  # matches acme + decide (stemmed) + roas
    assert ranked.index(both.id) < ranked.index(one.id)
    scores = [e.score for e in page.edges]
    assert all(s is not None and s > 0 for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # A question made only of stop words still searches (with them), rather than nothing.
    office = await entries.list_entries(
        db, EntryFilter(search="what did the"), first=10, after=None
    )
    assert office.edges[0].node.title == "Office move"
    # Prefix matching: a word cut short finds the whole word.
    prefix = await entries.list_entries(db, EntryFilter(search="holid"), first=10, after=None)
    assert [e.node.title for e in prefix.edges] == ["Acme holiday party"]
    # Scope and tags narrow the search inside the index query.
    scoped = await entries.list_entries(
        db,
        EntryFilter(search="acme", scope=Scope.ENTITY, scope_ref="ent_acme", tags=["decision"]),
        first=10,
        after=None,
    )
    assert [e.node.id for e in scoped.edges] == [both.id]


async def test_search_pagination_has_no_duplicates(db: TenantDb) -> None:
    for i in range(12):
        await entries.create_entry(db, entry(f"ROAS note {i}", "roas " * (i + 1)))
    seen: list[str] = []
    after = None
    while True:
        page = await entries.list_entries(db, EntryFilter(search="roas"), first=5, after=after)
        seen += [e.node.id for e in page.edges]
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert len(seen) == len(set(seen)) == 12


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "AND",
        "NEAR(acme roas, 2)",
        "acme AND OR NOT",
        "title: acme",
        "((((",
        "roas*",
        "^acme",
        "😀🚀",
        "emoji 😀 roas",
        "x" * limits.SEARCH_MAX_CHARS,
        "{title}: x",
        "-acme",
        "acme + roas",
        "'; DROP TABLE memory_entries; --",
        "\x00\x01",
    ],
)
async def test_hostile_search_strings_never_fail_unexpectedly(db: TenantDb, query: str) -> None:
    await entries.create_entry(db, entry())
    try:
        await entries.list_entries(db, EntryFilter(search=query), first=5, after=None)
    except InvalidInput as exc:
        assert exc.field == ["search"]


async def test_search_length_limit(db: TenantDb) -> None:
    with pytest.raises(TooLarge, match="longer than 1000"):
        await entries.list_entries(db, EntryFilter(search="x" * 10_000), first=5, after=None)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=200))
async def test_any_search_string_gives_results_or_a_clear_error(db: TenantDb, query: str) -> None:
    try:
        await entries.list_entries(db, EntryFilter(search=query), first=5, after=None)
        await events.list_events(db, EventFilter(search=query), first=5, after=None)
    except InvalidInput as exc:
        assert exc.field == ["search"] and "no searchable words" in exc.message


async def test_search_cursor_is_stable_while_entries_are_added(db: TenantDb) -> None:
    for i in range(8):
        await entries.create_entry(db, entry(f"ROAS note {i}", "roas " * (i + 1)))
    page = await entries.list_entries(db, EntryFilter(search="roas"), first=4, after=None)
    for i in range(30):
        await entries.create_entry(db, entry(f"Other {i}", f"unrelated {i}"))
    await entries.create_entry(db, entry("ROAS late", "roas roas"))
    rest = await entries.list_entries(
        db, EntryFilter(search="roas"), first=10, after=page.end_cursor
    )
    titles = [e.node.title for e in page.edges + rest.edges]
    assert sorted(titles) == sorted(f"ROAS note {i}" for i in range(8))


async def test_concurrent_updates_with_one_expected_version_let_exactly_one_win(
    db: TenantDb,
) -> None:
    e = await entries.create_entry(db, entry("Budget", "Monthly budget is 5k."))
    for round_ in range(5):
        current = await entries.get_entry(db, e.id)
        assert current is not None
        outcomes = await asyncio.gather(
            *(
                entries.update_entry(
                    db,
                    e.id,
                    EntryPatch(summary=f"{round_}-{i}", expected_version=current.version),
                    by="key_test",
                )
                for i in range(4)
            ),
            return_exceptions=True,
        )
        won = [o for o in outcomes if not isinstance(o, BaseException)]
        assert len(won) == 1 and all(isinstance(o, Conflict) for o in outcomes if o not in won)
        stored = await entries.get_entry(db, e.id)
        assert stored is not None and stored.version == current.version + 1
        assert stored.summary == won[0].summary  # type: ignore[union-attr]


async def test_search_finds_words_inside_numbers_addresses_and_links(db: TenantDb) -> None:
    found = await entries.create_entry(
        db,
        entry(
            "Renewal terms",
            "ROAS target 4.0 at $31.40 CPM; contact jo.whitfield@acme-outdoor.com or see "
            "https://acme.example/pricing/2026 for the q3-plan.",
        ),
    )
    await entries.create_entry(db, entry("Other", "Nothing to see here."))
    for question in ("4.0", "31.40", "whitfield", "outdoor", "pricing", "plan"):
        page = await entries.list_entries(db, EntryFilter(search=question), first=5, after=None)
        assert [x.node.id for x in page.edges] == [found.id], question


@pytest.mark.parametrize("position", [2**31, -1])
async def test_a_sources_cursor_past_32_bits_is_invalid_input(db: TenantDb, position: int) -> None:
    """Source positions are 32-bit: a forged cursor beyond them is the client's error on
    both backends (PostgreSQL would refuse the value as an INTEGER)."""
    after = cursors.encode("sources", [position])
    with pytest.raises(InvalidInput, match="after is not a valid cursor"):
        await entries.source_events(db, "mem_x", first=2, after=after)


# -------------------------------------------- NUL characters and long filter lists

NUL = "ent\x00x"


async def test_a_nul_in_an_id_or_a_filter_value_finds_nothing(db: TenantDb) -> None:
    """No stored text holds NUL (PostgreSQL's text cannot): an id with one is not found
    and a filter value with one matches nothing, the same on both backends."""
    e = await entries.create_entry(db, entry(tags=["roas"]))
    assert await entries.get_entry(db, NUL) is None
    assert await entries.get_entries(db, [NUL, e.id]) == {e.id: e}
    with pytest.raises(NotFound) as err:
        await entries.update_entry(db, NUL, EntryPatch(title="x"), by="key_test")
    assert err.value.field == ["id"]
    with pytest.raises(NotFound):
        await entries.delete_entry(db, NUL, by="key_test")
    page = await entries.source_events(db, NUL, first=10, after=None)
    assert page.edges == [] and not page.has_next_page
    for flt in (
        EntryFilter(tags=[NUL]),
        EntryFilter(tags=["roas", NUL]),
        EntryFilter(scope_ref=NUL),
        EntryFilter(scope=Scope.ENTITY, scope_ref=NUL),
        EntryFilter(tags=[NUL], search="roas"),
        EntryFilter(scope_ref=NUL, search="roas"),
    ):
        found = await entries.list_entries(db, flt, first=10, after=None)
        assert found.edges == [] and not found.has_next_page, flt
    forged = cursors.encode("entries", [datetime.now(UTC).isoformat(), NUL])
    with pytest.raises(InvalidInput) as invalid:
        await entries.list_entries(db, EntryFilter(), first=10, after=forged)
    assert invalid.value.field == ["after"]
    assert await entries.get_entry(db, e.id) == e  # nothing was touched


@pytest.mark.parametrize("name", ["tags", "sources"])
async def test_a_filter_list_over_its_cap_is_too_large(db: TenantDb, name: str) -> None:
    n = 40_000
    values: list[object] = (
        [f"t{i}" for i in range(n)] if name == "tags" else [EntrySource.MANUAL] * n
    )
    for search in (None, "roas"):
        flt = EntryFilter(search=search, **{name: values})  # type: ignore[arg-type]
        with pytest.raises(TooLarge) as err:
            await entries.list_entries(db, flt, first=10, after=None)
        assert err.value.field == [name]
        assert str(limits.FILTER_VALUES_MAX) in err.value.message


async def test_a_full_sources_list_is_one_parameter(db: TenantDb) -> None:
    await entries.create_entry(db, entry())
    await entries.create_entry(db, entry(source=EntrySource.CALL))
    sources = [EntrySource.MANUAL] * (limits.FILTER_VALUES_MAX - 1) + [EntrySource.CHAT]
    for search in (None, "roas"):
        page = await entries.list_entries(
            db, EntryFilter(sources=sources, search=search), first=10, after=None
        )
        assert [e.node.source for e in page.edges] == [EntrySource.MANUAL], search


async def test_a_lone_surrogate_finds_no_id_and_is_refused_in_a_filter(db: TenantDb) -> None:
    """Not UTF-8, so never stored: an id holding one is found nowhere; a filter value
    holding one is refused naming the field, rather than an encoding error."""
    await entries.create_entry(db, entry(tags=["roas"]))
    bad = "ent\ud800x"
    assert await entries.get_entry(db, bad) is None
    with pytest.raises(NotFound):
        await entries.delete_entry(db, bad, by="key_test")
    for flt, field in (
        (EntryFilter(tags=[bad]), ["tags", "0"]),
        (EntryFilter(scope_ref=bad), ["scopeRef"]),
        (EntryFilter(tags=[bad], search="roas"), ["tags", "0"]),
    ):
        with pytest.raises(InvalidInput) as refused:
            await entries.list_entries(db, flt, first=10, after=None)
        assert refused.value.field == field, flt
