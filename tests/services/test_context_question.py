"""The context loader asked a question: raw events ranked by relevance, the time the
question names, and long texts shown as the passages that answer it (app/services/
evidence.py, passages.py, time_phrases.py)."""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from app.errors import TooLarge
from app.services import entries, events
from app.services.context import evidence, passages, time_phrases
from app.services.context.loader import load_context
from app.services.records import Entry, EntryIn, Event, EventIn, Scope
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction, write_transaction

NOW = datetime(2026, 6, 1, 9, tzinfo=UTC)
ACME = "acme-outdoor"


async def log(db: TenantDb, body: str, at: datetime) -> Event:
    event = EventIn(Scope.ENTITY, ACME, "chat_turn", body, occurred_at=at)
    return (await events.append_event(db, event)).event


async def ask(db: TenantDb, query: str | None, max_tokens: int = 400) -> str:
    result = await load_context(
        db,
        scope=Scope.ENTITY,
        scope_ref=ACME,
        query=query,
        max_tokens=max_tokens,
        include_institutional=True,
        now=NOW,
    )
    return result.markdown


async def ranked_ids(db: TenantDb, query: str) -> list[str]:
    """The ids of the events the loader finds on `query`, best first (the Markdown shows
    them newest first)."""
    async with read_transaction(db.engine) as conn:
        q = evidence.question(query, NOW)
        seqs = await evidence.ranked_events(conn, [(Scope.ENTITY, ACME)], q, NOW)
        ids = {r.seq: r.id for r in await conn.execute(select(ev.c.seq, ev.c.id))}
    return [ids[s] for s in seqs]


async def chatter(db: TenantDb, n: int, since: datetime) -> None:
    for i in range(n):
        await log(db, f"Dana: thanks, speak soon ({i}).", since + timedelta(hours=i))


# The loader scores a scope's uncompressed events from their text up to SCAN_MAX of them,
# and asks the full-text index beyond: both ways must find the old answer.
@pytest.mark.parametrize("scan_max", [evidence.SCAN_MAX, 10], ids=["scanned", "indexed"])
async def test_an_old_event_that_answers_beats_recent_ones_that_do_not(
    db: TenantDb, scan_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "SCAN_MAX", scan_max)
    old = await log(db, "Priya: the Osprey brochure budget is $45,200.", NOW - timedelta(days=60))
    await chatter(db, 40, NOW - timedelta(days=2))
    markdown = await ask(db, "What is the Osprey brochure budget?", 200)
    assert old.id in markdown and "$45,200" in markdown
    # Without a question, today's order stands: the newest events, so not the old one.
    assert old.id not in await ask(db, None, 200)


@pytest.mark.parametrize("scan_max", [evidence.SCAN_MAX, 10], ids=["scanned", "indexed"])
async def test_each_question_word_counts_by_its_rarity(
    db: TenantDb, scan_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event holding both words beats one holding the rare word, which beats those
    holding only the common one, on either path (the index asks a query per word)."""
    monkeypatch.setattr(evidence, "SCAN_MAX", scan_max)
    start = NOW - timedelta(days=20)
    rare = await log(db, "Kestrel launch slips to June.", start)
    both = await log(db, "Kestrel spend approved by Dana.", start + timedelta(days=1))
    for i in range(12):
        await log(db, f"Display spend paced at {i}0%.", start + timedelta(days=2, hours=i))
    ranked = await ranked_ids(db, "Kestrel spend?")
    assert ranked[:2] == [both.id, rare.id] and len(ranked) == 14


# Indexed beyond COUNT_MAX counted events, the word queries have no lower seq bound.
@pytest.mark.parametrize(
    ("scan_max", "count_max"),
    [(evidence.SCAN_MAX, evidence.COUNT_MAX), (10, evidence.COUNT_MAX), (10, 20)],
    ids=["scanned", "indexed", "indexed-unbounded"],
)
async def test_the_month_named_picks_that_months_event(
    db: TenantDb, scan_max: int, count_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "SCAN_MAX", scan_max)
    monkeypatch.setattr(evidence, "COUNT_MAX", count_max)
    for month, cpa in [(1, "$31.10"), (2, "$32.20"), (3, "$33.30"), (4, "$34.40")]:
        await log(
            db, f"Falcon CPA for the month came in at {cpa}.", datetime(2026, month, 9, tzinfo=UTC)
        )
    await chatter(db, 30, NOW - timedelta(days=3))
    markdown = await ask(db, "What was the Falcon CPA in February?", 120)
    others = [markdown.index(c) for c in ("$31.10", "$33.30", "$34.40") if c in markdown]
    assert "$32.20" in markdown and markdown.index("$32.20") < min(others, default=len(markdown))


async def test_a_long_summary_shows_its_matching_lines_and_says_what_was_left_out(
    db: TenantDb,
) -> None:
    lines = [
        f"- 2025-{m:02d}-03 · chat_turn: Sam: routine check-in number {m}, all fine."
        for m in range(1, 13)
    ]
    lines[7] = "- 2025-08-03 · chat_turn: Sam: the Heron venue is Pier 9 Warehouse."
    summary = "\n".join(lines)
    async with write_transaction(db.engine) as conn:
        entry: Entry = await entries.insert_entry(
            conn,
            EntryIn(Scope.ENTITY, ACME, "acme-outdoor: 2025 summary", summary, importance=4),
            now=NOW - timedelta(days=100),
        )
    markdown = await ask(db, "Which venue for Heron?", 300)
    assert "Pier 9 Warehouse" in markdown and "2025-08-03" in markdown
    assert "routine check-in number 1," not in markdown
    # The lines either side of the one holding the words come with it (a reply often
    # follows the line that holds the question's words).
    assert "number 7," in markdown and "number 9," in markdown
    assert f"[9 more lines or sentences not shown: see {entry.id}]" in markdown
    # Without a question the summary is shown from its start (cut if it must be).
    assert "routine check-in number 1," in await ask(db, None, 300)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What was the CPA in March 2026?", datetime(2026, 3, 1), datetime(2026, 4, 1)),
        ("what happened in May", datetime(2026, 5, 1), datetime(2026, 6, 1)),
        ("in December?", datetime(2025, 12, 1), datetime(2026, 1, 1)),
        ("What did Wren report last month?", datetime(2026, 5, 1), datetime(2026, 6, 1)),
        ("anything last week", datetime(2026, 5, 25), datetime(2026, 6, 1)),
        ("yesterday's call", datetime(2026, 5, 31), datetime(2026, 6, 1)),
        ("the plan in 2025", datetime(2025, 1, 1), datetime(2026, 1, 1)),
        ("the call 2 weeks ago", datetime(2026, 5, 15), datetime(2026, 5, 22)),
    ],
)
def test_time_phrases_read_as_windows(question: str, start: datetime, end: datetime) -> None:
    found = time_phrases.window(question, NOW)
    assert found is not None
    assert (found.start, found.end) == (start.replace(tzinfo=UTC), end.replace(tzinfo=UTC))
    assert found.phrase not in time_phrases.without(question, found)


@pytest.mark.parametrize("question", ["May I see the budget?", "What is the budget?", "When?"])
def test_no_time_phrase_no_window(question: str) -> None:
    assert time_phrases.window(question, NOW) is None


def test_passages_prefer_the_window_and_rare_words() -> None:
    text = "\n".join(
        [
            "- 2026-01-05 · chat_turn: Falcon CPA for the month came in at $31.10.",
            "- 2026-02-05 · chat_turn: Falcon CPA for the month came in at $32.20.",
            "- 2026-02-06 · chat_turn: Thanks Dana, speak soon.",
        ]
    )
    found = passages.units(text)
    feb = time_phrases.window("in February", NOW)
    choice = passages.choose(found, passages.pattern_of(["falcon", "cpa"]), feb, room=20)
    assert choice.shown == [1] and choice.total == 3
    assert passages.render(found, choice) == "…\n" + found[1].text + "\n…"
    assert passages.choose(found, passages.pattern_of(["nothing"]), None, room=100).shown == []


@pytest.mark.parametrize("scan_max", [evidence.SCAN_MAX, 10], ids=["scanned", "indexed"])
async def test_a_long_text_does_not_win_by_its_length(
    db: TenantDb, scan_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bm25 with its length term: a short turn holding the question's words ranks above a
    long answer holding the same words once among hundreds of others."""
    monkeypatch.setattr(evidence, "SCAN_MAX", scan_max)
    start = NOW - timedelta(days=30)
    filler = " ".join(f"Point {i} of the plan covers logistics and timing." for i in range(60))
    long = await log(db, f"Assistant: about the Osprey venue deposit, {filler}", start)
    short = await log(db, "User: the Osprey venue deposit was $900.", start - timedelta(days=1))
    await chatter(db, 12, NOW - timedelta(days=2))
    ranked = await ranked_ids(db, "Osprey venue deposit?")
    assert ranked[:2] == [short.id, long.id]


async def test_one_item_over_the_room_left_does_not_keep_the_next_ones_out(
    db: TenantDb,
) -> None:
    """First fit: the best item that does not fit is passed over and the shorter ones after
    it still go in (the budget never exceeded)."""
    start = NOW - timedelta(days=10)
    await log(db, "Kestrel: " + "the schedule is on track. " * 40, start)  # ~250 tokens
    for i in range(3):
        await log(db, f"Kestrel note {i}.", start - timedelta(days=1 + i))
    result = await load_context(
        db,
        scope=Scope.ENTITY,
        scope_ref=ACME,
        query="Kestrel schedule",
        max_tokens=200,
        include_institutional=True,
        now=NOW,
    )
    assert result.tokens <= 200 and result.truncated
    assert all(f"Kestrel note {i}." in result.markdown for i in range(3))


async def test_a_changed_fact_reads_newest_first_and_marked_newer(db: TenantDb) -> None:
    """Packed items on the question are laid out newest first, each dated, the newer of two
    that speak of the same words marked as newer than the older one."""
    first = await log(db, "Dana: the Falcon budget is $40,000.", NOW - timedelta(days=80))
    second = await log(db, "Dana: the Falcon budget moved to $55,000.", NOW - timedelta(days=20))
    await chatter(db, 2, NOW - timedelta(days=3))  # the first one is a neighbour of `second`
    await log(db, "Weather chat, nothing else.", NOW - timedelta(days=1))
    markdown = await ask(db, "What is the Falcon budget?", 600)
    assert markdown.startswith("## Events on the question, newest first")
    assert markdown.index("$55,000") < markdown.index("$40,000")
    heading = next(line for line in markdown.splitlines() if second.id in line)
    assert heading.endswith(" · newer") and "UTC" in heading
    assert not next(line for line in markdown.splitlines() if first.id in line).endswith("newer")
    assert markdown.index("## Other recent events") < markdown.index("Weather chat")


@pytest.mark.parametrize("scan_max", [evidence.SCAN_MAX, 10], ids=["scanned", "indexed"])
async def test_kinds_taken_and_left_out(
    db: TenantDb, scan_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "SCAN_MAX", scan_max)
    at = NOW - timedelta(days=3)
    for kind in ("user_turn", "assistant_turn", "call_summary"):
        event = EventIn(
            Scope.ENTITY, ACME, kind, f"Heron launch date, said in a {kind}.", occurred_at=at
        )
        await events.append_event(db, event)
    await chatter(db, 12, NOW - timedelta(days=2))

    async def kinds_shown(query: str | None, **kinds: list[str]) -> set[str]:
        result = await load_context(
            db,
            scope=Scope.ENTITY,
            scope_ref=ACME,
            query=query,
            max_tokens=2000,
            include_institutional=True,
            now=NOW,
            **kinds,  # type: ignore[arg-type]
        )
        return {e.kind for e in result.events}

    for query in ("Heron launch date", None):
        assert await kinds_shown(query, exclude_kinds=["assistant_turn", "chat_turn"]) == {
            "user_turn",
            "call_summary",
        }
        assert await kinds_shown(query, kinds=["assistant_turn"]) == {"assistant_turn"}
        assert await kinds_shown(query, kinds=[]) == set()
    with pytest.raises(TooLarge, match="excludeKinds has 101 values; the limit is 100"):
        await kinds_shown(None, exclude_kinds=[f"k{i}" for i in range(101)])


@pytest.mark.parametrize("scan_max", [evidence.SCAN_MAX, 10], ids=["scanned", "indexed"])
async def test_the_turn_after_the_one_holding_the_words_comes_with_it(
    db: TenantDb, scan_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a conversation the answer often follows the turn that holds the question's words:
    an event next to a matching one (in the same scope) is found, one elsewhere is not."""
    monkeypatch.setattr(evidence, "SCAN_MAX", scan_max)
    at = NOW - timedelta(days=40)
    await log(db, "Priya: how did the Osprey brochure print run go?", at)
    other = await event_elsewhere(db, "Dana: 9,000 copies, delivered Monday.", at)
    answer = await log(db, "Dana: 12,000 copies, delivered Friday.", at + timedelta(minutes=1))
    await chatter(db, 14, NOW - timedelta(days=2))
    ranked = await ranked_ids(db, "Osprey brochure print run")
    assert answer.id in ranked[:2] and other.id not in ranked


async def event_elsewhere(db: TenantDb, body: str, at: datetime) -> Event:
    """An event of another scope, appended between the two of the conversation."""
    event = EventIn(Scope.ENTITY, "other-client", "chat_turn", body, occurred_at=at)
    return (await events.append_event(db, event)).event


async def test_no_room_for_an_event_leaves_no_header_alone(db: TenantDb) -> None:
    """A budget the entries nearly fill leaves the events too little room for one item:
    the context then has no events section at all, not a header over nothing."""
    async with write_transaction(db.engine) as conn:
        await entries.insert_entry(
            conn,
            EntryIn(
                Scope.ENTITY, ACME, "Osprey plan", "Osprey: " + "plan step. " * 30, importance=5
            ),
            now=NOW - timedelta(days=1),
        )
    await log(db, "Osprey call went well.", NOW - timedelta(days=1))
    for budget in range(64, 140, 4):
        result = await load_context(
            db,
            scope=Scope.ENTITY,
            scope_ref=ACME,
            query="Osprey plan",
            max_tokens=budget,
            include_institutional=True,
            now=NOW,
        )
        headers = [line for line in result.markdown.splitlines() if line.startswith("## ")]
        assert (headers != ["## Memory"]) == bool(result.events), (budget, headers)
        assert result.tokens <= budget
