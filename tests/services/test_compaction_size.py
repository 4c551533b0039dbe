"""Compactor summaries bounded in size (compaction_summary_max_tokens): a long bucket folds
into several small entries, every event once, each entry findable by the names it holds."""

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from app.adapters import dlp
from app.adapters.summarisers.base import EventText, SummaryResult
from app.adapters.summarisers.builtin import BuiltinSummariser
from app.config import Settings
from app.services import compaction, entries, events
from app.services.context import loader
from app.services.context.markdown import render_entry
from app.services.policies import TenantPolicy
from app.services.records import EntryFilter, EntrySource, EventIn, Scope
from app.storage.models import entry_sources_table as src_t
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction
from app.tokens import estimate_tokens

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
PEOPLE = ["Dana Whitfield", "Sam Okafor", "Raj Patel"]


def turn(i: int) -> str:
    who = PEOPLE[i % len(PEOPLE)]
    return (
        f"{who}: Yesterday we agreed the Falcon budget line {i} at ${1000 + i * 17:,}, "
        f"with the invoice PO-{40000 + i} due in {5 + i % 20} days; "
        f"{PEOPLE[(i + 1) % len(PEOPLE)]} owns the follow-up for region {i % 7}."
    )


async def test_a_long_bucket_folds_into_entries_that_fit_three_to_a_context(
    db: TenantDb, settings: Settings
) -> None:
    batch = [
        EventIn(
            Scope.ENTITY,
            "acme",
            "chat_turn",
            turn(i),
            occurred_at=NOW - timedelta(days=400 - i * 0.5),
        )
        for i in range(300)
    ]
    appended = await events.append_events(db, batch)
    run = await compaction.run_compaction(
        db,
        policy=TenantPolicy(db.tenant_id),
        summariser=BuiltinSummariser(),
        settings=settings,
        trigger="cli",
        now=NOW,
    )
    assert run.events_compressed == 300 and not run.problems
    assert len(run.entries_created) >= 4  # by period, not one entry for the bucket
    shown = []
    for entry_id in run.entries_created:
        e = await entries.get_entry(db, entry_id)
        assert e is not None
        assert e.source is EntrySource.COMPACTOR and e.importance == 4
        assert e.tags[:2] == ["compactor", "chat_turn"]
        assert set(e.tags[2:]) <= {*PEOPLE, "Falcon"} and "Dana Whitfield" in e.tags
        tokens = estimate_tokens(render_entry(e))
        assert tokens <= settings.compaction_summary_max_tokens, (e.title, tokens)
        shown.append(tokens)
        # Self-contained, dated facts: "Yesterday" carries its absolute date.
        assert "Yesterday (20" in e.summary
    assert sum(sorted(shown)[:3]) < 2000
    async with read_transaction(db.engine) as conn:
        sources = Counter(r.event_id for r in await conn.execute(select(src_t.c.event_id)))
    assert sources == Counter({a.event.id: 1 for a in appended})  # every event folded once

    # Findable by tag, and three of them fit a 2,000-token context.
    page = await entries.list_entries(db, EntryFilter(tags=["Sam Okafor"]), first=50, after=None)
    assert page.edges and {e.node.id for e in page.edges} <= set(run.entries_created)
    found = await loader.load_context(
        db,
        scope=Scope.ENTITY,
        scope_ref="acme",
        query="Falcon budget line",
        max_tokens=2000,
        include_institutional=False,
        now=NOW,
    )
    assert len(found.entries) >= 3


@dataclass
class Recording:
    """A remote summariser (so DLP runs) that keeps the texts of each call."""

    name: str = "recording-model"
    remote: bool = True
    calls: list[list[str]] = field(default_factory=list)

    async def summarise(
        self, events: list[EventText], *, scope_label: str, period_label: str, **_: Any
    ) -> SummaryResult:
        self.calls.append([e.body for e in events])
        return SummaryResult(
            title=f"{scope_label}: {period_label}",
            body="- Summarised.",
            model=self.name,
            prompt_tokens=100,
            completion_tokens=20,
        )


async def test_a_bucket_of_several_periods_is_read_and_redacted_once(
    db: TenantDb, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planning keeps the redacted texts of a bucket's periods for their calls, rather than
    reading and scanning them again while a gateway slot waits."""
    batch = [
        EventIn(
            Scope.ENTITY,
            "acme",
            "chat_turn",
            turn(i),
            occurred_at=NOW - timedelta(days=400 - i * 0.5),
        )
        for i in range(60)
    ]
    await events.append_events(db, batch)
    scanned: Counter[str] = Counter()
    real_scan = dlp.scan

    def counting_scan(text: str, **kwargs: Any) -> dlp.DlpResult:
        scanned[text] += 1
        return real_scan(text, **kwargs)

    monkeypatch.setattr(dlp, "scan", counting_scan)
    summariser = Recording()
    run = await compaction.run_compaction(
        db,
        policy=TenantPolicy(db.tenant_id),
        summariser=summariser,
        settings=settings,
        trigger="cli",
        now=NOW,
    )
    assert run.events_compressed == 60 and not run.problems
    assert 2 <= len(summariser.calls) <= 8  # several periods, all kept from planning
    sent = [body for call in summariser.calls for body in call]
    assert sorted(sent) == sorted(e.body for e in batch)  # each event in one call
    assert all(scanned[e.body] == 1 for e in batch)


def chat_turn(i: int) -> tuple[str, str]:
    """A turn as LoCoMo's are (a reply to the other speaker, then news of one's own), and
    its fact."""
    who = ("Dana", "Sam")[i % 2]
    fact = f"I spent {i + 2} days in Lisbon and bought {i + 1} ceramic jugs for my mother."
    return f"{who}: Wow, you must be so excited about the trip, what a time! {fact}", fact


async def test_a_chats_facts_survive_compaction(db: TenantDb, settings: Settings) -> None:
    """Every turn's own statement is kept verbatim by the default summariser, a session's
    turns folded a few hundred tokens at a time."""
    # A session of 20 turns a day, a minute apart.
    at = [NOW - timedelta(days=200 - i // 20) + timedelta(minutes=i) for i in range(120)]
    batch = [
        EventIn(Scope.ENTITY, "chat", "utterance", chat_turn(i)[0], occurred_at=at[i])
        for i in range(120)
    ]
    await events.append_events(db, batch)
    policy = TenantPolicy(db.tenant_id)
    run = await compaction.run_compaction(
        db, policy=policy, summariser=BuiltinSummariser(), settings=settings, trigger="cli", now=NOW
    )
    assert run.events_compressed == 120 and not run.problems
    text = ""
    for entry_id in run.entries_created:
        e = await entries.get_entry(db, entry_id)
        assert e is not None
        assert estimate_tokens(render_entry(e)) <= settings.compaction_summary_max_tokens
        text += e.summary
    missing = [i for i in range(120) if chat_turn(i)[1] not in text]
    assert missing == []
