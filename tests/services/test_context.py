"""The context loader through the services: budget edges, scopes, compressed events,
isolation between tenants, the token bound, and the ranking on the labelled set."""

import json
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, update

from app.deps import Container
from app.errors import ExpectedError, InvalidInput, TooLarge
from app.services import entries, events
from app.services.context import loader, markdown, ranking
from app.services.context.loader import load_context
from app.services.records import Entry, EntryIn, EntrySource, Event, EventIn, Scope
from app.storage.models import entries_table, events_table
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction, write_transaction
from app.tokens import estimate_tokens
from tests.conftest import make_tenant

LABELLED = Path(__file__).resolve().parents[1] / "fixtures" / "context_labelled.json"
MARKER = re.compile(r"… \[truncated: (\d+) more characters, see ((?:mem|evt)_\w+)\]")
ACME = "acme-outdoor"


async def remember(
    db: TenantDb,
    title: str,
    summary: str = "Noted.",
    *,
    scope: Scope = Scope.ENTITY,
    ref: str | None = ACME,
    importance: int = 3,
    at: datetime | None = None,
) -> Entry:
    """An entry; with `at`, inserted as if written then (updated_at drives recency)."""
    entry = EntryIn(scope=scope, scope_ref=ref, title=title, summary=summary, importance=importance)
    if at is None:
        return await entries.create_entry(db, entry)
    async with write_transaction(db.engine) as conn:
        return await entries.insert_entry(conn, entry, now=at)


async def log(
    db: TenantDb,
    body: str,
    *,
    kind: str = "call_summary",
    scope: Scope = Scope.ENTITY,
    ref: str | None = ACME,
    at: datetime | None = None,
) -> Event:
    event = EventIn(scope=scope, scope_ref=ref, kind=kind, body=body, occurred_at=at)
    return (await events.append_event(db, event)).event


async def compress(db: TenantDb, event: Event, into: Entry) -> None:
    # What the compactor does; the trigger lets exactly these two columns change.
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            update(events_table)
            .where(events_table.c.id == event.id)
            .values(compressed_at=datetime(2026, 5, 1, tzinfo=UTC), compressed_into=into.id),
        )


async def load(db: TenantDb, **kw: Any) -> loader.MemoryContextResult:
    args: dict[str, Any] = {
        "scope": Scope.ENTITY,
        "scope_ref": ACME,
        "query": None,
        "max_tokens": 2000,
        "include_institutional": True,
    }
    args.update(kw)
    result = await load_context(db, **args)
    # Invariants of every answer: the estimate of the markdown, within the budget, and
    # every item returned is cited in the markdown by its id.
    assert result.tokens == estimate_tokens(result.markdown) <= args["max_tokens"]
    for item_id in [e.id for e in result.entries] + [e.id for e in result.events]:
        assert item_id in result.markdown
    return result


# ------------------------------------------------------------------------- markdown


async def test_empty_memory(db: TenantDb) -> None:
    result = await load(db)
    assert result == loader.MemoryContextResult("", 0, [], [], truncated=False)


async def test_markdown_cites_title_kind_scope_date_and_id(db: TenantDb) -> None:
    e = await remember(
        db,
        "Acme budget raised to $85k",
        "Dana approved **$85k/month**.",
        importance=5,
        at=datetime(2026, 2, 25, 18, tzinfo=UTC),
    )
    rule = await remember(db, "Report blended ROAS first", scope=Scope.INSTITUTIONAL, ref=None)
    ev = await log(
        db, "Call with Dana: TikTok CPA $74.", at=datetime(2026, 5, 28, 15, 4, tzinfo=UTC)
    )
    result = await load(db)
    assert result.entries == [e, rule] and result.events == [ev] and not result.truncated
    md = result.markdown
    assert md.startswith("## Memory\n\n### Acme budget raised to $85k\n")
    assert f"`{e.id}` · entity/acme-outdoor · updated 2026-02-25 · importance 5/5" in md
    assert "Dana approved **$85k/month**." in md
    assert f"`{rule.id}` · institutional ·" in md
    assert md.index("## Memory") < md.index("## Recent events")
    assert f"### call_summary · entity/acme-outdoor · 2026-05-28 15:04 UTC · `{ev.id}`" in md
    assert md.endswith("TikTok CPA $74.\n")


def test_smallest_items_are_not_below_min_item_tokens() -> None:
    # The fetch limits (budget // MIN_ITEM_TOKENS + 1) rely on it to detect truncation.
    now = datetime(2026, 1, 1, tzinfo=UTC)
    e = Entry("mem_" + "0" * 26, Scope.TEAM, "x", "x", "x", [], 1, EntrySource.MANUAL, now, now, 1)
    ev = Event("evt_" + "0" * 26, Scope.TEAM, "x", "x", "x", None, None, now, now, None, None, None)
    assert estimate_tokens(markdown.render_entry(e) + "\n\n") >= loader.MIN_ITEM_TOKENS
    assert estimate_tokens(markdown.render_event(ev) + "\n\n") >= loader.MIN_ITEM_TOKENS


# --------------------------------------------------------------------------- ranking


async def test_without_query_importance_then_recency(db: TenantDb) -> None:
    day = datetime(2026, 5, 1, tzinfo=UTC)
    old_vital = await remember(db, "Old but vital", importance=5, at=day - timedelta(days=400))
    new_minor = await remember(db, "New but minor", importance=2, at=day)
    new_normal = await remember(db, "New normal", importance=3, at=day)
    older_normal = await remember(db, "Older normal", importance=3, at=day - timedelta(days=3))
    result = await load(db)
    assert result.entries == [old_vital, new_normal, older_normal, new_minor]


async def test_query_puts_matches_first_then_the_rest(db: TenantDb) -> None:
    vital = await remember(db, "Never call Dana before 10:00", importance=5)
    shopping = await remember(db, "Google Shopping feed disapprovals", "140 SKUs lack GTINs.")
    digest = await remember(db, "Weekly digest", "Shopping impression share 41%.", importance=2)
    result = await load(db, query="Any problems with Google Shopping?")
    # Both matches first (the title match ahead); the unmatched entry still fills the budget.
    assert result.entries == [shopping, digest, vital]


async def test_recency_and_importance_reorder_matches(db: TenantDb) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    old = await remember(
        db, "Acme ROAS target 3.0", "Agreed at kickoff.", at=now - timedelta(days=560)
    )
    new = await remember(
        db,
        "Acme blended ROAS target lowered to 2.6",
        "For the growth push.",
        importance=5,
        at=now - timedelta(days=90),
    )
    result = await load(db, query="ROAS target", now=now)
    assert result.entries == [new, old]  # bm25 alone prefers the old one (title match)


# ------------------------------------------------------------------------ budget edges


async def test_tiny_budget_still_shows_the_top_item(db: TenantDb) -> None:
    top = await remember(
        db, "Budget approvals", "Over 20% needs written approval. " * 20, importance=5
    )
    await remember(db, "Something else", "Details. " * 20)
    await log(db, "A call. " * 30)
    result = await load(db, max_tokens=loader.MIN_TOKENS)
    assert result.truncated and result.entries[:1] == [top]
    assert result.markdown.startswith("## Memory\n\n")
    assert MARKER.search(result.markdown) is not None


async def test_one_huge_entry_is_cut_with_a_marker(db: TenantDb) -> None:
    huge = await remember(db, "Acme brand book", "Tone of voice: calm, outdoorsy. " * 1000)
    result = await load(db, max_tokens=500)
    assert result.entries == [huge] and result.truncated
    found = MARKER.search(result.markdown)
    assert found is not None and found.group(2) == huge.id
    kept = result.markdown[len("## Memory\n\n") : found.start()].rstrip("\n")
    rendered = markdown.render_entry(huge)
    assert rendered.startswith(kept) and len(rendered) - len(kept) == int(found.group(1))
    assert result.tokens > 400  # the cut fills the budget rather than leaving it empty


async def test_one_huge_event_is_cut_with_a_marker(db: TenantDb) -> None:
    huge = await log(db, "Transcript: " + "we talked about tents and budgets. " * 1500)
    result = await load(db, max_tokens=300)
    assert result.events == [huge] and result.entries == [] and result.truncated
    found = MARKER.search(result.markdown)
    assert found is not None and found.group(2) == huge.id


async def test_truncated_only_when_something_is_left_out(db: TenantDb) -> None:
    for i in range(5):
        await remember(db, f"Note {i}", "A short note about the account. " * 5)
        await log(db, f"Event {i}: " + "something happened. " * 5)
    everything = await load(db, max_tokens=4000)
    assert len(everything.entries) == 5 and len(everything.events) == 5
    assert not everything.truncated
    squeezed = await load(db, max_tokens=everything.tokens - 10)
    assert squeezed.truncated
    assert len(squeezed.entries) + len(squeezed.events) <= 10


async def test_unused_share_flows_over(db: TenantDb) -> None:
    for i in range(10):
        await remember(db, f"Entry {i}", "Budget and ROAS notes for this account. " * 20)
    only_entries = await load(db, max_tokens=1000)
    assert only_entries.tokens > 0.9 * 1000  # more than the entries' 70% share
    assert only_entries.events == [] and only_entries.truncated


async def test_events_use_what_entries_leave(db: TenantDb) -> None:
    for i in range(30):
        await log(db, f"Event {i}: " + "pacing check done. " * 10)
    only_events = await load(db, max_tokens=1000)
    assert only_events.tokens > 0.9 * 1000 and only_events.truncated
    times = [e.occurred_at for e in only_events.events]
    assert times == sorted(times, reverse=True)  # newest first


async def test_texts_are_read_page_by_page_in_rank_order(db: TenantDb) -> None:
    day = datetime(2026, 5, 1, tzinfo=UTC)
    made = [
        await remember(db, f"Tip {i}", "Short.", importance=1 + i % 5, at=day + timedelta(hours=i))
        for i in range(150)
    ]
    # 150 small entries fit in 8000 tokens but not in the first page read (88 items).
    result = await load(db, max_tokens=8000)
    expected = sorted(made, key=lambda e: (-e.importance, -e.updated_at.timestamp()))
    assert result.entries == expected and not result.truncated


# ----------------------------------------------------------------------------- scopes


async def test_institutional_inclusion_and_exclusion(db: TenantDb) -> None:
    acme = await remember(db, "Acme budget", "Budget $85k.")
    rule = await remember(
        db, "Budget approval policy", "Over 20%: ask.", scope=Scope.INSTITUTIONAL, ref=None
    )
    other = await remember(db, "Bluefin budget", "Budget $18k.", ref="bluefin-coffee")
    acme_ev = await log(db, "Acme call about budget.")
    inst_ev = await log(
        db, "Agency offsite about budget.", kind="note", scope=Scope.INSTITUTIONAL, ref=None
    )
    await log(db, "Bluefin call about budget.", ref="bluefin-coffee")

    for query in (None, "budget"):
        both = await load(db, query=query)
        assert {e.id for e in both.entries} == {acme.id, rule.id}
        assert {e.id for e in both.events} == {acme_ev.id, inst_ev.id}
        alone = await load(db, query=query, include_institutional=False)
        assert alone.entries == [acme] and alone.events == [acme_ev]
        inst = await load(db, scope=Scope.INSTITUTIONAL, scope_ref=None, query=query)
        assert inst.entries == [rule] and inst.events == [inst_ev]
        for result in (both, alone, inst):
            assert other.id not in result.markdown and "Bluefin" not in result.markdown


async def test_compressed_events_never_appear(db: TenantDb) -> None:
    summary = await remember(db, "Calls in April, summarised", "Three calls about tents.")
    kept = await log(db, "Call 3: tents ready.")
    folded = [await log(db, f"Call {i}: tents maybe.") for i in (1, 2)]
    for e in folded:
        await compress(db, e, summary)
    for query in (None, "tents call"):
        result = await load(db, query=query, max_tokens=8000)
        assert result.events == [kept] and not result.truncated
        assert summary in result.entries
        for e in folded:
            assert e.id not in result.markdown and e.body not in result.markdown
    tiny = await load(db, max_tokens=loader.MIN_TOKENS)
    assert all(e.id != f.id for e in tiny.events for f in folded)


async def test_another_tenants_memory_never_appears(container: Container, db: TenantDb) -> None:
    mine = await remember(db, "Acme budget", "Our tenant: $85k.")
    other = await make_tenant(container, "globex")
    async with container.tenants.lease(other.id) as other_db:
        theirs = await remember(other_db, "Acme budget", "Other tenant: $1M.", importance=5)
        their_ev = await log(other_db, "Other tenant call about Acme budget.")
        for query in (None, "Acme budget"):
            result = await load(db, query=query)
            assert result.entries == [mine] and result.events == []
            assert theirs.id not in result.markdown and their_ev.id not in result.markdown
            assert "Other tenant" not in result.markdown
            seen_by_them = await load(other_db, query=query)
            assert seen_by_them.entries == [theirs] and mine.id not in seen_by_them.markdown


# ------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kw", "field", "error"),
    [
        ({"scope_ref": None}, ["scopeRef"], InvalidInput),
        ({"scope": Scope.INSTITUTIONAL}, ["scopeRef"], InvalidInput),
        ({"scope_ref": " "}, ["scopeRef"], InvalidInput),
        ({"max_tokens": 0}, ["maxTokens"], InvalidInput),
        ({"max_tokens": loader.MIN_TOKENS - 1}, ["maxTokens"], InvalidInput),
        ({"max_tokens": loader.MAX_TOKENS + 1}, ["maxTokens"], InvalidInput),
        ({"query": "x" * 1001}, ["query"], TooLarge),
        ({"query": "?!"}, ["query"], InvalidInput),
    ],
)
async def test_invalid_input(
    db: TenantDb, kw: dict[str, Any], field: list[str], error: type[ExpectedError]
) -> None:
    with pytest.raises(error) as info:
        await load(db, **kw)
    assert info.value.field == field


async def test_blank_query_means_no_query(db: TenantDb) -> None:
    await remember(db, "Acme budget")
    assert await load(db, query="  ") == await load(db, query=None)


# --------------------------------------------------------------------- token bound


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    max_tokens=st.integers(loader.MIN_TOKENS, 6000),
    query=st.sampled_from([None, "budget", "ROAS target Dana", "日本 launch", "zzz nothing"]),
    institutional=st.booleans(),
)
async def test_tokens_never_exceed_max_tokens(
    db: TenantDb, max_tokens: int, query: str | None, institutional: bool
) -> None:
    async with read_transaction(db.engine) as conn:
        empty = (await conn.execute(select(func.count()).select_from(entries_table))).scalar() == 0
    if empty:  # the fixture is shared by every example: fill it once
        await fill_varied(db)
    # load() checks tokens == estimate_tokens(markdown) <= max_tokens on every answer.
    result = await load(db, max_tokens=max_tokens, query=query, include_institutional=institutional)
    assert result.truncated  # far more than 6000 tokens of memory


async def fill_varied(db: TenantDb) -> None:
    # Sizes from one line to several budgets, in scripts of 1 to 3 bytes per character.
    texts = ["ROAS budget note. ", "Dana approved the target. ", "日本 launch déjà vu. "]
    for i in range(40):
        size = [1, 5, 40, 400, 1000][i % 5]
        await remember(db, f"Entry {i} about budget", texts[i % 3] * size, importance=1 + i % 5)
    for i in range(3):
        await remember(db, f"Policy {i}", texts[i] * 30, scope=Scope.INSTITUTIONAL, ref=None)
    for i in range(60):
        await log(db, f"Event {i}: " + texts[i % 3] * [1, 10, 200, 2000][i % 4])


# ------------------------------------------------------------------ labelled ranking


def ndcg_at_5(ranked: list[str], relevant: list[str]) -> float:
    gain = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:5]) if key in relevant)
    return gain / sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 5)))


async def test_ranking_on_the_labelled_set(db: TenantDb) -> None:
    data = json.loads(LABELLED.read_text())
    now = datetime.fromisoformat(data["as_of"])
    by_id: dict[str, str] = {}
    async with write_transaction(db.engine) as conn:
        for e in data["entries"]:
            row = await entries.insert_entry(
                conn,
                EntryIn(
                    scope=Scope(e["scope"]),
                    scope_ref=e["scope_ref"],
                    title=e["title"],
                    summary=e["summary"],
                    tags=e["tags"],
                    importance=e["importance"],
                    source=EntrySource(e["source"]),
                ),
                now=datetime.fromisoformat(e["updated_at"]),
            )
            by_id[row.id] = e["key"]
        rows = await conn.execute(select(entries_table.c.seq, entries_table.c.id))
        key_of_seq = {r.seq: by_id[r.id] for r in rows}

    tuned, plain, complete = [], [], []
    bm25_only = ranking.Weights(importance=0.0, recency=0.0, half_life_days=1.0)
    for q in data["questions"]:
        result = await load(
            db,
            scope=Scope(q["scope"]),
            scope_ref=q["scope_ref"],
            query=q["query"],
            include_institutional=q["include_institutional"],
            max_tokens=16_000,
            now=now,
        )
        ranked = [by_id[e.id] for e in result.entries]
        relevant = q["relevant"]
        assert relevant[0] in ranked[:5], (q["query"], ranked[:5])
        complete.append(set(relevant) <= set(ranked[:5]))
        tuned.append(ndcg_at_5(ranked, relevant))
        async with read_transaction(db.engine) as conn:
            scopes = loader.scopes_of(Scope(q["scope"]), q["scope_ref"], q["include_institutional"])
            found = await loader.candidates(conn, scopes=scopes, query=q["query"], limit=1000)
        plain.append(
            ndcg_at_5([key_of_seq[c.seq] for c in ranking.rank(found, bm25_only, now)], relevant)
        )
    # The best answer always in the top 5, nearly always every answer; and importance and
    # recency must earn their place: nDCG@5 above bm25 alone (0.846 on this set).
    assert sum(complete) / len(complete) >= 0.9
    assert sum(tuned) / len(tuned) >= 0.88 > sum(plain) / len(plain)
