"""The compactor through its service, with the tenant's gateway as a real HTTP server."""

import asyncio
import re
import socket
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, insert, select

from app.adapters.dlp import DlpMode
from app.adapters.gateway import Gateway, GatewayConfig, estimate_messages_tokens
from app.adapters.summarisers.base import EventText
from app.adapters.summarisers.builtin import BUILTIN_SUMMARISER_NAME, BuiltinSummariser
from app.adapters.summarisers.gateway import GatewaySummariser
from app.config import Settings
from app.deps import Container
from app.errors import InvalidInput, NotFound
from app.services import budget, compaction, cursors, entries, events, limits, policies
from app.services.compaction import (
    CompactionRunRecord,
    RunStatus,
    Summariser,
    SummaryResult,
    compact_tenant,
)
from app.services.policies import TenantPolicy
from app.services.records import Entry, EntrySource, EventFilter, EventIn, Scope
from app.storage.models import compaction_runs_table, entry_sources_table, llm_calls_table
from app.storage.models import entries_table as en_t
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDatabases, TenantDb
from app.storage.transactions import read_transaction, write_transaction
from tests.conftest import TenantFixture
from tests.support.gateway_stub import FakeGateway, Reply, Sleeps, ok, summary_of

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CUTOFF = NOW - timedelta(days=90)


# ------------------------------------------------------------------------ fixtures


@pytest.fixture
async def gw() -> AsyncIterator[FakeGateway]:
    server = FakeGateway(auto=summary_of)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def via(
    gw: FakeGateway,
    http: httpx.AsyncClient,
    *,
    models: tuple[str, ...] = ("model-a", "model-b"),
    sleeps: Sleeps | None = None,
    **config: Any,
) -> GatewaySummariser:
    cfg = GatewayConfig(
        base_url=gw.base_url, api_key="sk-test-GATEWAYKEY0123456789", models=models, **config
    )
    return GatewaySummariser(Gateway(cfg, client=http, sleep=sleeps or Sleeps()))


async def seed(
    db: TenantDb,
    ref: str | None,
    days_ago: list[float],
    *,
    kind: str = "call_summary",
    body: str = "Acme approved the $45,000 budget; Priya will send the plan.",
) -> list[str]:
    scope = Scope.INSTITUTIONAL if ref is None else Scope.ENTITY
    batch = [
        EventIn(scope, ref, kind, f"{body} (#{i})", occurred_at=NOW - timedelta(days=d))
        for i, d in enumerate(days_ago)
    ]
    return [a.event.id for a in await events.append_events(db, batch)]


async def run(
    db: TenantDb,
    summariser: Summariser,
    settings: Settings,
    *,
    policy: TenantPolicy | None = None,
    dry_run: bool = False,
    **overrides: Any,
) -> CompactionRunRecord:
    return await compaction.run_compaction(
        db,
        policy=policy or TenantPolicy(db.tenant_id),
        summariser=summariser,
        settings=settings.model_copy(update=overrides),
        trigger="cli",
        dry_run=dry_run,
        now=NOW,
    )


@dataclass
class Folded:
    """What the database says about one event."""

    compressed_at: datetime | None
    compressed_into: str | None


async def folded(db: TenantDb) -> dict[str, Folded]:
    async with read_transaction(db.engine) as conn:
        rows = await conn.execute(select(ev.c.id, ev.c.compressed_at, ev.c.compressed_into))
        return {r.id: Folded(r.compressed_at, r.compressed_into) for r in rows}


async def provenance(db: TenantDb) -> list[tuple[str, str, int]]:
    async with read_transaction(db.engine) as conn:
        src = entry_sources_table
        rows = await conn.execute(
            select(src.c.entry_id, src.c.event_id, src.c.position).order_by(
                src.c.entry_id, src.c.position
            )
        )
        return [(r.entry_id, r.event_id, r.position) for r in rows]


async def llm_calls(db: TenantDb) -> list[dict[str, Any]]:
    async with read_transaction(db.engine) as conn:
        rows = await conn.execute(select(llm_calls_table).order_by(llm_calls_table.c.created_at))
        return [dict(r._mapping) for r in rows]


async def entry(db: TenantDb, entry_id: str) -> Entry:
    found = await entries.get_entry(db, entry_id)
    assert found is not None
    return found


async def untouched(db: TenantDb, event_ids: list[str]) -> bool:
    state = await folded(db)
    return all(state[i] == Folded(None, None) for i in event_ids)


# ------------------------------------------------------------------------ the fold


async def test_fold_writes_an_entry_with_provenance_in_one_go(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    old = await seed(db, "ent_acme", [200, 150, 120], kind="call_summary")
    old += await seed(db, "ent_acme", [100], kind="decision")
    recent = await seed(db, "ent_acme", [10, 1])
    too_few = await seed(db, "ent_beta", [300, 200])

    result = await run(db, via(gw, http), settings)

    assert result.status is RunStatus.SUCCEEDED and result.problems == []
    assert (result.buckets_considered, result.buckets_compacted, result.buckets_skipped) == (
        1,
        1,
        0,
    )
    assert (result.periods, result.events_compressed) == (1, 4)
    assert (result.prompt_tokens, result.completion_tokens) == (100, 20)
    assert result.summariser == "model-a" and result.cutoff == CUTOFF
    [entry_id] = result.entries_created

    entry = await entries.get_entry(db, entry_id)
    assert entry is not None
    assert entry.source is EntrySource.COMPACTOR and entry.importance == 4
    assert entry.tags == ["compactor", "call_summary", "decision"]
    assert (entry.scope, entry.scope_ref) == (Scope.ENTITY, "ent_acme")
    assert entry.title == "entity ent_acme: 2025-11-13 to 2026-02-21"
    assert entry.summary.endswith("_Folded 4 events from 2025-11-13 to 2026-02-21 by model-a._")

    state = await folded(db)
    for event_id in old:
        assert state[event_id].compressed_into == entry_id
        at = state[event_id].compressed_at
        assert at is not None and NOW <= at < NOW + timedelta(minutes=1)
    assert await untouched(db, recent + too_few)
    assert await provenance(db) == [(entry_id, e, i) for i, e in enumerate(old)]
    # The same, as the API reads it: sourceEvents forward, compressedInto back.
    page = await entries.source_events(db, entry_id, first=10, after=None)
    assert [e.node.id for e in page.edges] == old
    back = await events.get_event(db, old[0])
    assert back is not None and back.compressed_into == entry_id

    [request] = gw.received
    assert request.json["model"] == "model-a"
    assert request.headers["authorization"] == "Bearer sk-test-GATEWAYKEY0123456789"
    assert request.prompt.count("<event n=") == 4 and "Events: 4" in request.prompt
    assert [
        (c["status"], c["model"], c["prompt_tokens"], c["completion_tokens"])
        for c in await llm_calls(db)
    ] == [("done", "model-a", 100, 20)]
    # A second run finds nothing left to do.
    again = await run(db, via(gw, http), settings)
    assert again.buckets_considered == 0 and again.status is RunStatus.SUCCEEDED


async def test_the_age_boundary_is_strict(db: TenantDb, settings: Settings) -> None:
    at_cutoff = await seed(db, "ent_acme", [90])
    older = await seed(db, "ent_acme", [90.0001, 95])
    nothing = await run(db, BuiltinSummariser(), settings)
    assert nothing.buckets_considered == 0  # 2 eligible events; the one at the cutoff is not
    assert await untouched(db, at_cutoff + older)

    older += await seed(db, "ent_acme", [91])
    done = await run(db, BuiltinSummariser(), settings)
    assert done.events_compressed == 3
    state = await folded(db)
    assert all(state[e].compressed_into for e in older)
    assert state[at_cutoff[0]] == Folded(None, None)


async def test_thresholds_are_settings(db: TenantDb, settings: Settings) -> None:
    ids = await seed(db, "ent_acme", [40, 50])
    assert (await run(db, BuiltinSummariser(), settings)).buckets_considered == 0
    result = await run(
        db, BuiltinSummariser(), settings, compaction_age_days=30, compaction_min_events=2
    )
    assert result.events_compressed == 2 and not await untouched(db, ids)


async def test_oldest_bucket_first(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    await seed(db, "ent_middle", [300, 200, 100])
    await seed(db, None, [250, 240, 230])  # institutional
    await seed(db, "ent_oldest", [400, 100, 99])
    result = await run(db, via(gw, http), settings, compaction_concurrency=1)
    scopes = [re.findall(r"^Scope: (.*)$", r.prompt, re.M)[0] for r in gw.received]
    assert scopes == ["entity ent_oldest", "entity ent_middle", "institutional"]
    titles = [(await entry(db, e)).title for e in result.entries_created]
    assert [t.split(":")[0] for t in titles] == scopes


async def test_a_huge_bucket_is_split_into_periods_never_truncated(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    bodies = [f"Week {i}: Acme reviewed campaign C-{i:03d}. " + "Detail " * 50 for i in range(30)]
    batch = [
        EventIn(
            Scope.ENTITY,
            "ent_acme",
            "call_summary",
            b,
            occurred_at=NOW - timedelta(days=400 - 7 * i),
        )
        for i, b in enumerate(bodies)
    ]
    appended = [a.event for a in await events.append_events(db, batch)]
    ids = [e.id for e in appended]

    result = await run(db, via(gw, http), settings, compaction_max_input_tokens=1000)

    assert result.status is RunStatus.SUCCEEDED
    assert result.periods == len(result.entries_created) == len(gw.received) > 3
    assert result.events_compressed == 30 and result.buckets_compacted == 1
    for request in gw.received:  # every request fits, measured as the budget measures it
        assert estimate_messages_tokens(request.messages) <= 1000
    # Every body went out whole, in exactly one request, oldest first.
    sent = "".join(r.prompt for r in gw.received)
    assert all(sent.count(b.strip()) == 1 for b in bodies)
    assert [sent.index(f"Week {i}:") for i in range(30)] == sorted(
        sent.index(f"Week {i}:") for i in range(30)
    )

    links = await provenance(db)
    assert sorted(e for _, e, _ in links) == sorted(ids)  # each event folded exactly once
    by_entry: dict[str, list[str]] = {}
    for entry_id, event_id, _ in links:
        by_entry.setdefault(entry_id, []).append(event_id)
    assert set(by_entry) == set(result.entries_created)
    occurred = {e.id: e.occurred_at for e in appended}
    previous_end: datetime | None = None
    for entry_id in result.entries_created:
        first, last = occurred[by_entry[entry_id][0]], occurred[by_entry[entry_id][-1]]
        assert f"{first:%Y-%m-%d} to {last:%Y-%m-%d}" in (await entry(db, entry_id)).title
        assert previous_end is None or previous_end < first  # consecutive periods
        previous_end = last


async def test_an_event_too_large_for_one_request_is_a_problem(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    ids = await seed(db, "ent_acme", [300, 200])
    [big] = await seed(db, "ent_acme", [100], body="Long transcript. " * 400)
    result = await run(db, via(gw, http), settings, compaction_max_input_tokens=1000)
    assert result.status is RunStatus.FAILED and result.periods == 0
    [problem] = result.problems
    assert problem.startswith(f"entity ent_acme: event {big} alone needs ~")
    assert "compaction_max_input_tokens (1,000)" in problem
    assert gw.received == [] and await untouched(db, [*ids, big])


async def test_an_entry_never_carries_more_tags_than_the_limit(
    db: TenantDb, settings: Settings
) -> None:
    for i in range(25):
        await seed(db, "ent_acme", [100 + i], kind=f"kind_{i:02d}")
    result = await run(db, BuiltinSummariser(), settings)
    assert result.periods == 2 and result.events_compressed == 25
    tags = [(await entry(db, e)).tags for e in result.entries_created]
    # compactor and the kinds first (the 19 oldest, then 6), then recurring names if room
    assert len(tags[0]) == limits.TAGS_MAX and tags[0][1:] == [
        f"kind_{i:02d}" for i in range(6, 25)
    ]
    assert tags[1][:7] == ["compactor", *(f"kind_{i:02d}" for i in range(6))]
    assert len(tags[1]) <= limits.TAGS_MAX and all(t[0] == "compactor" for t in tags)


# ----------------------------------------------------------------- gateway failures


async def test_429_with_retry_after_then_success(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    await seed(db, "ent_acme", [200, 150, 120])
    gw.script = [Reply(status=429, headers={"Retry-After": "2"})]
    sleeps = Sleeps()
    result = await run(db, via(gw, http, sleeps=sleeps), settings)
    assert result.status is RunStatus.SUCCEEDED and result.events_compressed == 3
    assert sleeps.calls == [2.0]
    assert [r.json["model"] for r in gw.received] == ["model-a", "model-a"]


async def test_5xx_moves_on_to_the_fallback_model(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    await seed(db, "ent_acme", [200, 150, 120])
    gw.script = [Reply(status=500), Reply(status=503)]
    result = await run(db, via(gw, http, max_retries=1), settings)
    assert result.status is RunStatus.SUCCEEDED and result.summariser == "model-b"
    assert [r.json["model"] for r in gw.received] == ["model-a", "model-a", "model-b"]
    entry = await entries.get_entry(db, result.entries_created[0])
    assert entry is not None and entry.summary.endswith("by model-b._")
    assert [(c["status"], c["model"]) for c in await llm_calls(db)] == [("done", "model-b")]


async def test_a_stall_past_the_timeout_leaves_the_bucket(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    stuck = await seed(db, "ent_stuck", [300, 200, 100])
    gw.script = [Reply(stall=True)]
    summariser = via(gw, http, models=("model-a",), timeout_s=0.3, max_retries=0)
    result = await run(db, summariser, settings)
    assert result.status is RunStatus.FAILED and result.entries_created == []
    assert result.problems == [
        "entity ent_stuck: gateway unavailable after 1 attempts over 1 model(s); "
        "last: model-a: timed out after 0.3s"
    ]
    assert await untouched(db, stuck)
    assert [(c["status"], c["prompt_tokens"]) for c in await llm_calls(db)] == [("failed", 0)]
    async with read_transaction(db.engine) as conn:
        assert (await conn.execute(select(func.count()).select_from(en_t))).scalar() == 0


async def test_an_undecodable_answer_fails_only_its_bucket(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    bad = await seed(db, "ent_bad", [300, 200, 100])
    good = await seed(db, "ent_one", [250, 240, 230])
    good += await seed(db, "ent_two", [220, 210, 205])
    garbled = Reply(body=b"\x1f\x8b not gzip at all", headers={"content-encoding": "gzip"})
    gw.auto = lambda r: garbled if "ent_bad" in r.prompt else summary_of(r)

    result = await run(db, via(gw, http), settings)

    assert result.status is RunStatus.PARTIAL
    assert result.problems == [
        "entity ent_bad: model 'model-a' gave an unusable answer: "
        "its body could not be decoded (content-encoding)"
    ]
    assert (result.buckets_compacted, result.buckets_skipped) == (2, 1)
    assert await untouched(db, bad) and not await untouched(db, good)
    assert len(gw.received) == 3  # an answer, not retried: its tokens were spent
    calls = await llm_calls(db)
    assert Counter(c["status"] for c in calls) == {"done": 2, "failed": 1}
    [failed] = [c for c in calls if c["status"] == "failed"]
    assert failed["prompt_tokens"] > 0  # charged at its prompt's estimate


@dataclass
class Unreliable:
    """A remote summariser with a bug that shows for one bucket only."""

    name: str = "flaky-model"
    remote: bool = True

    async def summarise(
        self, events: list[EventText], *, scope_label: str, period_label: str, **_: Any
    ) -> SummaryResult:
        if "ent_bad" in scope_label:
            raise ZeroDivisionError("Priya's $45,000")  # its text must never be recorded
        return SummaryResult(
            title=f"{scope_label}: {period_label}",
            body="- Summarised.",
            model=self.name,
            prompt_tokens=100,
            completion_tokens=20,
        )


async def test_an_unexpected_error_fails_only_its_bucket(db: TenantDb, settings: Settings) -> None:
    bad = await seed(db, "ent_bad", [300, 200, 100])
    good = await seed(db, "ent_good", [250, 240, 230])
    result = await run(db, Unreliable(), settings, compaction_max_output_tokens=200)
    assert result.status is RunStatus.PARTIAL
    assert result.problems == ["entity ent_bad: unexpected error: ZeroDivisionError"]
    assert await untouched(db, bad) and not await untouched(db, good)
    # The call it was making stays charged, at its estimate: it may have been billed.
    calls = {c["status"]: c for c in await llm_calls(db)}
    assert set(calls) == {"done", "failed"}
    failed = calls["failed"]
    assert failed["prompt_tokens"] + failed["completion_tokens"] == failed["estimated_tokens"]
    assert failed["completion_tokens"] == 200


@pytest.mark.parametrize(
    ("reply", "why", "tokens"),
    [
        (Reply(body=b"<html>502 Bad Gateway</html>"), "body is not JSON", None),
        (ok(""), "empty content", None),
        (ok("Just a title, no body"), "gave an unusable answer: body is empty", (42, 7)),
        (ok("\n\n   \n"), "empty content", None),
        (
            ok("Title\n\nCut off mid-sen", finish_reason="length"),
            "was cut off at max_tokens",
            (42, 7),
        ),
    ],
    ids=["not-json", "empty", "no-body", "blank", "cut-off"],
)
async def test_unusable_answers_are_failures_never_stored(
    db: TenantDb,
    settings: Settings,
    gw: FakeGateway,
    http: httpx.AsyncClient,
    reply: Reply,
    why: str,
    tokens: tuple[int, int] | None,
) -> None:
    bad = await seed(db, "ent_bad", [300, 200, 100])
    good = await seed(db, "ent_good", [250, 240, 230])
    gw.script = [reply]  # the first request is ent_bad's (oldest first); then good answers
    result = await run(db, via(gw, http), settings, compaction_concurrency=1)
    assert result.status is RunStatus.PARTIAL
    [problem] = result.problems
    assert problem.startswith("entity ent_bad: ") and why in problem
    assert await untouched(db, bad) and not await untouched(db, good)
    [entry_id] = result.entries_created
    assert {link[0] for link in await provenance(db)} == {entry_id}
    calls = await llm_calls(db)
    assert [c["status"] for c in calls] == ["failed", "done"]
    if tokens is not None:  # usage spent on an unusable answer is still charged
        assert (calls[0]["prompt_tokens"], calls[0]["completion_tokens"]) == tokens


# ------------------------------------------------------------------------------ DLP


SECRETS = {
    "email": "priya.shah@acme-corp.com",
    "card": "4111 1111 1111 1111",
    "iban": "GB82 WEST 1234 5698 7654 32",
    "secret": "sk-live-4f9aB2cD8eF1gH7iJ3kL",
    "custom": "PRJ-4821",
}


async def test_dlp_redacts_before_any_byte_leaves(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    body = (
        f"Priya ({SECRETS['email']}) paid by card {SECRETS['card']} for project "
        f"{SECRETS['custom']}; refunds go to {SECRETS['iban']}. Their key: {SECRETS['secret']}."
    )
    ids = await seed(db, "ent_acme", [300, 200, 100], body=body)
    policy = TenantPolicy(db.tenant_id, dlp_patterns=(r"PRJ-\d{4}",))
    result = await run(db, via(gw, http), settings, policy=policy)
    assert result.status is RunStatus.SUCCEEDED

    [request] = gw.received
    for value in SECRETS.values():
        assert value.encode() not in request.raw
        assert value not in request.prompt
    for marker in ("email", "card", "iban", "secret", "custom"):
        assert f"[REDACTED:{marker}]" in request.prompt
    assert "Priya" in request.prompt and "refunds go to" in request.prompt
    # The log itself is immutable: the raw events still say what they said.
    stored = await events.get_event(db, ids[0])
    assert stored is not None and SECRETS["email"] in stored.body


async def test_dlp_block_skips_the_bucket_and_sends_nothing_of_it(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    leaky = await seed(db, "ent_leaky", [300, 200], body=f"Mail {SECRETS['email']}.")
    leaky += await seed(db, "ent_leaky", [100], body=f"Card {SECRETS['card']} on file.")
    clean = await seed(db, "ent_clean", [250, 240, 230])
    policy = TenantPolicy(db.tenant_id, dlp_mode=DlpMode.BLOCK)
    result = await run(db, via(gw, http), settings, policy=policy)
    assert result.status is RunStatus.PARTIAL
    assert result.problems == ["entity ent_leaky: blocked by DLP: 2 email, 1 card"]
    assert await untouched(db, leaky) and not await untouched(db, clean)
    [request] = gw.received
    assert "ent_clean" in request.prompt and b"acme" not in request.raw.replace(b"Acme", b"")


async def test_dlp_off_sends_the_text_as_it_is(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    await seed(db, "ent_acme", [300, 200, 100], body=f"Mail {SECRETS['email']}.")
    policy = TenantPolicy(db.tenant_id, dlp_mode=DlpMode.OFF)
    await run(db, via(gw, http), settings, policy=policy)
    assert SECRETS["email"] in gw.received[0].prompt


async def test_the_builtin_summariser_sends_nothing_so_dlp_does_not_apply(
    db: TenantDb, settings: Settings
) -> None:
    await seed(db, "ent_acme", [300, 200, 100], body=f"Priya signed; mail {SECRETS['email']}.")
    policy = TenantPolicy(db.tenant_id, dlp_mode=DlpMode.BLOCK)
    result = await run(db, BuiltinSummariser(), settings, policy=policy)
    assert result.status is RunStatus.SUCCEEDED and result.events_compressed == 3


# --------------------------------------------------------------------------- budget


async def test_a_call_that_would_exceed_the_budget_is_not_made(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    first = await seed(db, "ent_first", [300, 200, 100])
    second = await seed(db, "ent_second", [250, 240, 230])
    # Each bucket reserves ~710 tokens (prompt estimate + max output); the first call then
    # settles at its actual 120, so the second would need ~830 of the 800.
    policy = TenantPolicy(db.tenant_id, budget_daily_tokens=800)
    result = await run(
        db,
        via(gw, http),
        settings,
        policy=policy,
        compaction_max_output_tokens=200,
        compaction_concurrency=1,
    )
    assert result.status is RunStatus.PARTIAL and result.budget_exceeded
    [problem] = result.problems
    assert re.fullmatch(
        rf"entity ent_second: budget: needs ~\d+ tokens, daily budget 800 \(jet-memory "
        rf"tenants configure {db.tenant_id} --budget-daily-tokens\) has \d+ left; "
        r"the model was not called",
        problem,
    ), problem
    assert len(gw.received) == 1 and "ent_first" in gw.received[0].prompt
    assert not await untouched(db, first) and await untouched(db, second)
    calls = await llm_calls(db)
    assert [(c["status"], c["prompt_tokens"] + c["completion_tokens"]) for c in calls] == [
        ("done", 120)
    ]

    # Tomorrow the daily budget is fresh; the monthly one remembers today.
    tomorrow = await compaction.run_compaction(
        db,
        policy=replace(policy, budget_monthly_tokens=800),
        summariser=via(gw, http),
        settings=settings.model_copy(update={"compaction_max_output_tokens": 200}),
        trigger="cron",
        now=NOW + timedelta(days=1),
    )
    assert tomorrow.budget_exceeded
    assert "monthly budget 800 (jet-memory tenants configure " in tomorrow.problems[0]
    assert "--budget-monthly-tokens) has " in tomorrow.problems[0]
    assert len(gw.received) == 1
    next_month = await compaction.run_compaction(
        db,
        policy=replace(policy, budget_monthly_tokens=800),
        summariser=via(gw, http),
        settings=settings.model_copy(update={"compaction_max_output_tokens": 200}),
        trigger="cron",
        now=NOW + timedelta(days=30),
    )
    assert next_month.status is RunStatus.SUCCEEDED and len(gw.received) == 2


async def test_a_zero_budget_never_calls(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    ids = await seed(db, "ent_acme", [300, 200, 100])
    policy = TenantPolicy(db.tenant_id, budget_monthly_tokens=0)
    result = await run(db, via(gw, http), settings, policy=policy)
    assert result.status is RunStatus.FAILED and result.budget_exceeded
    assert gw.received == [] and await llm_calls(db) == [] and await untouched(db, ids)


async def test_unsettled_reservations_count_against_the_budget(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    await seed(db, "ent_acme", [300, 200, 100])
    async with write_transaction(db.engine) as conn:  # a call whose worker died mid-call
        await conn.execute(
            insert(llm_calls_table).values(
                id="llm_crashed",
                created_at=NOW - timedelta(hours=1),
                model="model-a",
                status="reserved",
                estimated_tokens=5500,
                prompt_tokens=0,
                completion_tokens=0,
            )
        )
    policy = TenantPolicy(db.tenant_id, budget_daily_tokens=6000)
    result = await run(db, via(gw, http), settings, policy=policy)
    assert result.budget_exceeded and gw.received == []


# -------------------------------------------------------------- dry run, re-folding


async def test_a_dry_run_sends_and_writes_nothing_but_its_run(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    ids = await seed(db, "ent_acme", [300, 200, 100])
    ids += await seed(db, "ent_beta", [300, 200, 100, 99])
    result = await run(db, via(gw, http), settings, dry_run=True)
    assert result.dry_run and result.status is RunStatus.SUCCEEDED
    assert (result.buckets_compacted, result.periods, result.events_compressed) == (2, 2, 7)
    assert result.entries_created == [] and result.prompt_tokens == 0
    assert gw.received == [] and await llm_calls(db) == [] and await untouched(db, ids)
    async with read_transaction(db.engine) as conn:
        assert (await conn.execute(select(func.count()).select_from(en_t))).scalar() == 0
    stored = await compaction.get_run(db, result.id)
    assert stored == result


async def test_a_dry_run_reports_the_budget_it_would_hit(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    await seed(db, "ent_acme", [300, 200, 100])
    policy = TenantPolicy(db.tenant_id, budget_daily_tokens=10)
    result = await run(db, via(gw, http), settings, policy=policy, dry_run=True)
    assert result.budget_exceeded and result.status is RunStatus.FAILED and gw.received == []


async def test_deleting_a_summary_releases_its_events_to_the_next_run(
    db: TenantDb, settings: Settings
) -> None:
    ids = await seed(db, "ent_acme", [300, 200, 100])
    first = await run(db, BuiltinSummariser(), settings)
    [summary] = first.entries_created
    await entries.delete_entry(db, summary, by="key_test")
    assert await untouched(db, ids) and await provenance(db) == []

    second = await run(db, BuiltinSummariser(), settings)
    [again] = second.entries_created
    assert again != summary
    assert await provenance(db) == [(again, e, i) for i, e in enumerate(ids)]
    assert {f.compressed_into for f in (await folded(db)).values()} == {again}


async def test_two_runs_at_once_never_fold_an_event_twice(
    container: Container,
    tenant: TenantFixture,
    db: TenantDb,
    settings: Settings,
    http: httpx.AsyncClient,
) -> None:
    buckets = [f"ent_{i:02d}" for i in range(12)]
    bucket_of = {e: ref for ref in buckets for e in await seed(db, ref, [300, 250, 200, 150])}
    slow = FakeGateway(auto=lambda r: replace(summary_of(r), delay=0.05))
    await slow.start()
    # A second registry: its own engine on the same file, as a second worker process has.
    other = TenantDatabases(settings)
    try:
        async with other.lease(tenant.id) as db2:
            a, b = await asyncio.gather(
                run(db, via(slow, http), settings, compaction_concurrency=4),
                run(db2, via(slow, http), settings, compaction_concurrency=4),
            )
    finally:
        await other.aclose()
        await slow.stop()

    # The runs may race for every bucket or for none (one finds them folded by the other):
    # whichever way they interleave, these hold.
    links = await provenance(db)
    # Nothing lost and nothing folded twice: every old event in exactly one summary.
    assert sorted(e for _, e, _ in links) == sorted(bucket_of)
    state = await folded(db)
    assert all(state[e].compressed_into == entry for entry, e, _ in links)
    # A whole bucket or none of it: one summary a bucket, of all its events, in its scope.
    by_entry: dict[str, list[str]] = {}
    for entry, e, _ in links:
        by_entry.setdefault(entry, []).append(bucket_of[e])
    assert sorted(by_entry.values()) == [[ref] * 4 for ref in buckets]
    async with read_transaction(db.engine) as conn:
        rows = (await conn.execute(select(en_t.c.id, en_t.c.scope_ref))).all()
    stored: dict[str, str] = {r[0]: r[1] for r in rows}
    assert stored == {entry: refs[0] for entry, refs in by_entry.items()}
    # The runs' records add up to it: each bucket counted once, by the run that folded it.
    assert sorted(a.entries_created + b.entries_created) == sorted(by_entry)
    assert a.buckets_compacted + b.buckets_compacted == len(buckets)
    assert a.events_compressed + b.events_compressed == len(bucket_of)
    for one, winner in ((a, b), (b, a)):
        # A bucket a run skipped is one it lost to the other, which folded it; losing a
        # race is not a failure.
        assert one.buckets_skipped == len(one.problems)
        won = {f"entity {by_entry[entry][0]}" for entry in winner.entries_created}
        for line in one.problems:
            label, why = line.split(": ", 1)
            assert label in won and why.endswith("folded by another run meanwhile; left to it")
        assert one.status is RunStatus.SUCCEEDED


class Held:
    """The built-in summariser, held at its first call until released."""

    name = "held"
    remote = False

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def summarise(self, events: list[EventText], **kw: Any) -> SummaryResult:
        self.asked.set()
        await self.release.wait()
        return await BuiltinSummariser().summarise(events, **kw)


async def test_a_run_that_loses_a_race_leaves_the_bucket_whole_to_the_winner(
    tenant: TenantFixture, db: TenantDb, settings: Settings
) -> None:
    event_ids = await seed(db, "ent_acme", [300, 250, 200, 150])
    held = Held()
    other = TenantDatabases(settings)
    try:
        async with other.lease(tenant.id) as db2:
            # The loser has read the bucket and waits for its summary while the winner folds.
            loser = asyncio.create_task(run(db, held, settings))
            await asyncio.wait_for(held.asked.wait(), timeout=60)
            winner = await run(db2, BuiltinSummariser(), settings)
            held.release.set()
            lost = await loser
    finally:
        await other.aclose()
    [entry] = winner.entries_created
    assert await provenance(db) == [(entry, e, i) for i, e in enumerate(event_ids)]
    assert {f.compressed_into for f in (await folded(db)).values()} == {entry}
    assert lost.status is RunStatus.SUCCEEDED and lost.entries_created == []
    assert (lost.buckets_considered, lost.buckets_compacted, lost.events_compressed) == (1, 0, 0)
    assert lost.problems == [
        "entity ent_acme: 4 of its events were folded by another run meanwhile; left to it"
    ]
    async with read_transaction(db.engine) as conn:
        assert (await conn.execute(select(func.count()).select_from(en_t))).scalar() == 1


# ------------------------------------------------------------------- run records


async def insert_running(db: TenantDb, run_id: str, *, started: timedelta, **values: Any) -> None:
    """A RUNNING run row as a worker writes it at its start (or as one from before 0006)."""
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            insert(compaction_runs_table).values(
                id=run_id,
                status="running",
                trigger="cron",
                dry_run=False,
                started_at=NOW - started,
                cutoff=NOW - started - timedelta(days=90),
                problems=[],
                entries_created=[],
                summariser="model-a",
                **values,
            )
        )


async def test_a_dead_running_run_is_marked_interrupted(db: TenantDb, settings: Settings) -> None:
    here = socket.gethostname()
    exited = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await exited.wait()  # reaped: its pid names no process any more
    alive = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(60)"
    )
    window = timedelta(seconds=settings.compaction_stale_run_seconds)
    try:
        # From before migration 0006: no owner, no heartbeat; judged by started_at.
        await insert_running(db, "run_legacy_old", started=window * 2)
        await insert_running(db, "run_legacy_young", started=window / 2)
        # Another host's runs: only the heartbeat tells.
        elsewhere = {"owner_host": f"not-{here}", "owner_pid": exited.pid}
        await insert_running(
            db,
            "run_away_silent",
            started=window * 3,
            **elsewhere,
            heartbeat_at=NOW - window - timedelta(seconds=1),
        )
        await insert_running(
            db, "run_away_beating", started=window * 30, **elsewhere, heartbeat_at=NOW - window / 2
        )
        # This host's: a gone process is marked at once, however fresh its heartbeat.
        await insert_running(
            db,
            "run_here_gone",
            started=timedelta(seconds=5),
            owner_host=here,
            owner_pid=exited.pid,
            heartbeat_at=NOW,
            buckets_considered=5,
            buckets_compacted=2,
            periods=3,
            events_compressed=9,
        )
        await insert_running(
            db,
            "run_here_alive",
            started=timedelta(seconds=5),
            owner_host=here,
            owner_pid=alive.pid,
            heartbeat_at=NOW,
        )
        await run(db, BuiltinSummariser(), settings)
    finally:
        alive.kill()
        await alive.wait()
    got = {
        r: await compaction.get_run(db, r)
        for r in (
            "run_legacy_old",
            "run_legacy_young",
            "run_away_silent",
            "run_away_beating",
            "run_here_gone",
            "run_here_alive",
        )
    }
    status = {r: (g.status if g else None) for r, g in got.items()}
    assert status == {
        "run_legacy_old": RunStatus.FAILED,
        "run_legacy_young": RunStatus.RUNNING,
        "run_away_silent": RunStatus.FAILED,
        "run_away_beating": RunStatus.RUNNING,
        "run_here_gone": RunStatus.FAILED,
        "run_here_alive": RunStatus.RUNNING,
    }
    gone = got["run_here_gone"]
    assert gone is not None and gone.problems == [compaction.INTERRUPTED]
    assert gone.finished_at == NOW
    # What it committed before it died stays counted.
    assert (gone.buckets_compacted, gone.buckets_skipped, gone.periods) == (2, 3, 3)
    assert gone.events_compressed == 9


async def test_a_running_run_beats_its_heart(db: TenantDb, settings: Settings) -> None:
    beats: list[datetime | None] = []

    class Slow:
        name = "slow"
        remote = False

        async def summarise(self, events: list[EventText], **kw: Any) -> SummaryResult:
            async with read_transaction(db.engine) as conn:
                beats.append(await conn.scalar(select(compaction_runs_table.c.heartbeat_at)))
            await asyncio.sleep(0.3)
            async with read_transaction(db.engine) as conn:
                beats.append(await conn.scalar(select(compaction_runs_table.c.heartbeat_at)))
            return await BuiltinSummariser().summarise(events, **kw)

    await seed(db, "ent_acme", [300, 200, 100])
    result = await run(db, Slow(), settings, compaction_stale_run_seconds=0.2)
    assert result.status is RunStatus.SUCCEEDED
    # Beats every 0.05 s: 0.3 s later the heartbeat has moved on.
    first, second = beats
    assert first is not None and second is not None and second > first


class Exploding:
    """A summariser with a bug in it: not an expected failure."""

    name = "exploding"
    remote = False

    async def summarise(self, events: list[EventText], **_: Any) -> SummaryResult:
        raise ZeroDivisionError


async def test_an_unexpected_error_in_every_bucket_fails_the_run(
    db: TenantDb, settings: Settings
) -> None:
    await seed(db, "ent_acme", [300, 200, 100])
    result = await run(db, Exploding(), settings)
    page = await compaction.list_runs(db, first=1, after=None)
    [latest] = [e.node for e in page.edges]
    assert latest == result and latest.status is RunStatus.FAILED
    assert latest.problems == ["entity ent_acme: unexpected error: ZeroDivisionError"]
    assert latest.finished_at is not None


async def test_a_cancelled_run_keeps_its_call_in_flight_charged(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    # One bucket in several periods, every call reserved up front; the first one stalls.
    ids = await seed(db, "ent_acme", [300 - i for i in range(30)], body="Detail " * 60)
    gw.script = [Reply(stall=True)]
    task = asyncio.create_task(
        run(db, via(gw, http, timeout_s=60), settings, compaction_max_input_tokens=1000)
    )
    for _ in range(200):  # bounded: until the first call is at the gateway
        if gw.received:
            break
        await asyncio.sleep(0.025)
    [_] = gw.received
    reserved = await llm_calls(db)
    assert len(reserved) > 1 and {c["status"] for c in reserved} == {"reserved"}

    task.cancel()  # an arq job timeout, a worker shutting down
    with pytest.raises(asyncio.CancelledError):
        await task

    # The call in flight may have been billed: settled failed, charged at its estimate.
    # Only the periods never started are released.
    [in_flight] = await llm_calls(db)
    assert in_flight["id"] in {c["id"] for c in reserved}
    assert in_flight["status"] == "failed"
    assert (
        in_flight["prompt_tokens"] + in_flight["completion_tokens"]
        == in_flight["estimated_tokens"]
        > 0
    )
    async with read_transaction(db.engine) as conn:
        charged = await budget.tokens_used(conn, NOW - timedelta(days=1), NOW + timedelta(days=1))
    assert charged == in_flight["estimated_tokens"]
    # The run says what happened to it; its events are left for the next run.
    [stopped] = [e.node for e in (await compaction.list_runs(db, first=1, after=None)).edges]
    assert stopped.status is RunStatus.FAILED and stopped.finished_at is not None
    assert stopped.problems == [compaction.CANCELLED]
    assert await untouched(db, ids)


async def test_runs_are_listed_newest_first(db: TenantDb, settings: Settings) -> None:
    made = []
    for day in range(5):
        made.append(
            await compaction.run_compaction(
                db,
                policy=TenantPolicy(db.tenant_id),
                summariser=BuiltinSummariser(),
                settings=settings,
                trigger="cron",
                now=NOW + timedelta(days=day),
            )
        )
    seen: list[str] = []
    after = None
    while True:
        page = await compaction.list_runs(db, first=2, after=after)
        seen += [e.node.id for e in page.edges]
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert seen == [r.id for r in reversed(made)]


# ------------------------------------------------------ the composition root (deps)


async def test_compact_tenant_uses_the_builtin_without_a_gateway(
    container: Container, tenant: TenantFixture, db: TenantDb
) -> None:
    ids = await seed(db, "ent_acme", [300, 200, 100])
    result = await compact_tenant(container, tenant.id, trigger="api", now=NOW)
    assert result.summariser == BUILTIN_SUMMARISER_NAME and result.status is RunStatus.SUCCEEDED
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)
    entry = await entries.get_entry(db, result.entries_created[0])
    assert entry is not None and entry.summary.endswith(
        f"_Summarised by {BUILTIN_SUMMARISER_NAME} from 3 events._"
    )
    assert await llm_calls(db) == [] and not await untouched(db, ids)


async def test_compact_tenant_uses_the_tenants_gateway_policy(
    container: Container,
    tenant: TenantFixture,
    db: TenantDb,
    gw: FakeGateway,
    http: httpx.AsyncClient,
) -> None:
    await seed(db, "ent_acme", [300, 200, 100], body=f"Write to {SECRETS['email']}.")
    await policies.configure_tenant(
        container.control,
        tenant.id,
        gateway_url=gw.base_url,
        gateway_key="gk-secret-123",
        models=["tenant-model", "tenant-fallback"],
        gateway_timeout_s=5,
    )
    result = await compact_tenant(container, tenant.id, trigger="cron", now=NOW, http=http)
    assert result.summariser == "tenant-model" and result.status is RunStatus.SUCCEEDED
    [request] = gw.received
    assert request.headers["authorization"] == "Bearer gk-secret-123"
    assert SECRETS["email"] not in request.prompt  # the default policy redacts


async def test_compact_tenant_without_a_client_makes_and_closes_its_own(
    container: Container, tenant: TenantFixture, db: TenantDb, gw: FakeGateway
) -> None:
    await seed(db, "ent_acme", [300, 200, 100])
    await policies.configure_tenant(
        container.control, tenant.id, gateway_url=gw.base_url, models=["m"]
    )
    result = await compact_tenant(container, tenant.id, trigger="cli", now=NOW)
    assert result.status is RunStatus.SUCCEEDED and len(gw.received) == 1


async def test_an_answer_over_the_settings_cap_is_recorded_and_leaves_the_bucket(
    container: Container,
    tenant: TenantFixture,
    db: TenantDb,
    gw: FakeGateway,
    http: httpx.AsyncClient,
) -> None:
    ids = await seed(db, "ent_acme", [300, 200, 100])
    await policies.configure_tenant(
        container.control, tenant.id, gateway_url=gw.base_url, models=["m"]
    )
    capped = replace(
        container, settings=container.settings.model_copy(update={"gateway_max_answer_bytes": 1024})
    )
    gw.script = [ok("Acme: Q1\n\n" + "x" * 4096)]
    result = await compact_tenant(capped, tenant.id, trigger="cli", now=NOW, http=http)
    assert result.status is RunStatus.FAILED and result.buckets_compacted == 0
    assert result.problems == [
        "entity ent_acme: model 'm' gave an unusable answer: over 1,024 bytes "
        "(gateway_max_answer_bytes)"
    ]
    assert await untouched(db, ids) and len(gw.received) == 1


async def test_compact_tenant_refuses_an_unknown_tenant(container: Container) -> None:
    with pytest.raises(NotFound):
        await compact_tenant(container, "ten_nope", trigger="cli")
    assert not container.tenants.path("ten_nope").exists()


async def test_the_redacted_events_are_what_a_period_is_sized_by(
    db: TenantDb, settings: Settings, gw: FakeGateway, http: httpx.AsyncClient
) -> None:
    # "a@b.io" (6 bytes) becomes "[REDACTED:email]" (16): the sent request must still fit.
    await seed(db, "ent_acme", [300 - i for i in range(60)], body="x@y.io " * 40)
    result = await run(db, via(gw, http), settings, compaction_max_input_tokens=1000)
    assert result.status is RunStatus.SUCCEEDED and result.periods > 1
    for request in gw.received:
        assert estimate_messages_tokens(request.messages) <= 1000
    assert Counter(
        e.node.compressed_into is not None
        for e in (await events.list_events(db, EventFilter(), first=100, after=None)).edges
    ) == {True: 60}


@pytest.mark.parametrize("at", ["2026-01-01T00:00:00", "not-a-date", "9999-99-99"])
async def test_a_forged_runs_cursor_is_a_client_error(db: TenantDb, at: str) -> None:
    with pytest.raises(InvalidInput) as info:
        await compaction.list_runs(db, first=5, after=cursors.encode("runs", [at, "run_x"]))
    assert info.value.field == ["after"]
