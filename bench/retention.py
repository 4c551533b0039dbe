"""Retention: what compaction keeps. A year of agency events for a few clients, with facts
planted in the old part (amounts, dates, names, decisions, commitments), compacted with
the built-in summariser; then one question per fact through the entry search and the
context loader, and the fraction of facts whose answer is in what comes back.

Usage: .venv/bin/python -m bench.retention [--clients 4] [--top 3] [--context-tokens 2000]
"""

import argparse
import asyncio
import random
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.config import Settings
from app.deps import build
from app.services import entries, events, tenants
from app.services.compaction import compact_tenant
from app.services.records import EntryFilter, EntrySource, EventFilter, EventIn, Scope
from app.tokens import estimate_tokens

CLIENTS = [
    ("ent_acme", "Acme Foods", "Priya Shah", "Spring Harvest"),
    ("ent_globex", "Globex Travel", "Marco Bellini", "Summer Escapes"),
    ("ent_initech", "Initech Software", "Lena Vogel", "Cloud Launch"),
    ("ent_umbrella", "Umbrella Pharma", "Tomasz Nowak", "Flu Season"),
    ("ent_hooli", "Hooli Phones", "Aiko Tanaka", "Pixel Drop"),
    ("ent_wonka", "Wonka Sweets", "Sofia Ramos", "Golden Ticket"),
]
NEW_HEADS = ["Dmitri Orlov", "Kwame Mensah", "Ines Duarte", "Raj Patel", "Nora Lind", "Ole Berg"]
COMPETITORS = ["Ogilvy", "Publicis", "WPP", "Havas", "Dentsu", "Omnicom"]
CITIES = ["Lisbon", "Berlin", "Austin", "Lyon", "Porto", "Oslo"]

FILLER = [
    "Weekly sync with {person}; we walked through the dashboard together.",
    "Small talk about the {city} offsite and the weather there.",
    "{person} said thanks for the quick turnaround on last week's edits.",
    "CTR held at {ctr}% and CPC at ${cpc} this week.",
    "Impressions were up {pct}% week over week, in line with the seasonal trend.",
    "We reviewed creative variants A and B; no decision yet.",
    "{person} joined late because of an internal meeting.",
    "Nothing else to report, next call same time.",
    "Spend pacing is on track for the month at {pct}% of plan.",
    "Went through the search term report and added {n} negative keywords.",
    "The landing page load time is still around {secs} seconds on mobile.",
    "Quick check-in by email about the shared drive permissions.",
]
KINDS = ["call_summary", "call_summary", "email", "campaign_change", "status_update"]


@dataclass(frozen=True)
class Fact:
    client: str  # scope_ref
    sentence: str  # planted verbatim into one old event
    question: str
    answers: tuple[str, ...]  # all must appear in what a question brings back
    kind: str


def facts_for(i: int, ref: str, client: str, person: str, campaign: str) -> list[Fact]:
    rng = random.Random(i)
    amount = f"${rng.randrange(20, 400) * 500:,}"
    launch = f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}"
    due = f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}"
    fee = f"€{rng.randrange(8, 40) * 500:,}"
    cpa = f"${rng.randint(12, 60)}.{rng.randint(10, 99)}"
    po = f"PO-{rng.randint(10000, 99999)}"
    head, rival = NEW_HEADS[i], COMPETITORS[i]
    return [
        Fact(
            ref,
            f"{person} approved a {amount} budget for the {campaign} campaign.",
            f"What budget was approved for the {campaign} campaign?",
            (amount,),
            "decision",
        ),
        Fact(
            ref,
            f"The {campaign} launch date is fixed for {launch}.",
            f"When does {campaign} launch?",
            (launch,),
            "decision",
        ),
        Fact(
            ref,
            f"{head} replaces {person} as head of marketing at {client}.",
            f"Who is the new head of marketing at {client}?",
            (head,),
            "relationship",
        ),
        Fact(
            ref,
            f"{client} decided to drop TikTok ads and move that budget to YouTube.",
            f"What did {client} decide about TikTok ads?",
            ("TikTok", "YouTube"),
            "decision",
        ),
        Fact(
            ref,
            f"We committed to deliver the brand lift study by {due}.",
            "When is the brand lift study due?",
            (due,),
            "commitment",
        ),
        Fact(
            ref,
            f"The agency retainer was renewed at {fee} per month.",
            "What is the monthly agency retainer?",
            (fee,),
            "decision",
        ),
        Fact(
            ref,
            f"{client} agreed on a target CPA of {cpa} for paid social.",
            "What target CPA was agreed for paid social?",
            (cpa,),
            "decision",
        ),
        Fact(
            ref,
            f"Purchase order {po} covers the {campaign} media spend.",
            f"Which purchase order covers the {campaign} media spend?",
            (po,),
            "identifier",
        ),
        Fact(
            ref,
            f"{person} prefers the weekly report as a PDF every Monday at 9am.",
            f"How does {person} want the weekly report?",
            ("PDF", "Monday"),
            "preference",
        ),
        Fact(
            ref,
            f"{person} warned that {client} could move the account to {rival} if "
            "results slip again.",
            f"Which agency could {client} move the account to?",
            (rival,),
            "risk",
        ),
    ]


def filler(rng: random.Random, person: str, k: int) -> list[str]:
    return [
        rng.choice(FILLER).format(
            person=person.split()[0],
            city=rng.choice(CITIES),
            ctr=f"{rng.uniform(0.8, 4.5):.1f}",
            cpc=f"{rng.uniform(0.3, 3.5):.2f}",
            pct=rng.randint(2, 30),
            n=rng.randint(3, 40),
            secs=f"{rng.uniform(1.5, 6):.1f}",
        )
        for _ in range(k)
    ]


def year_of_events(clients: int, now: datetime) -> tuple[list[EventIn], list[Fact]]:
    """~3 events a week per client over 365 days; facts only in events over 100 days old."""
    rng = random.Random(42)
    out: list[EventIn] = []
    planted: list[Fact] = []
    for i, (ref, client, person, campaign) in enumerate(CLIENTS[:clients]):
        days = sorted(rng.sample(range(1, 366), 156), reverse=True)
        facts = facts_for(i, ref, client, person, campaign)
        old_slots = [d for d in days if d > 100]
        fact_days = dict(zip(rng.sample(old_slots, len(facts)), facts, strict=True))
        for day in days:
            sentences = filler(rng, person, rng.randint(3, 7))
            fact = fact_days.get(day)
            if fact is not None:
                sentences.insert(rng.randint(0, len(sentences)), fact.sentence)
                planted.append(fact)
            out.append(
                EventIn(
                    scope=Scope.ENTITY,
                    scope_ref=ref,
                    kind=fact.kind if fact else rng.choice(KINDS),
                    body=" ".join(sentences),
                    source="bench",
                    occurred_at=now - timedelta(days=day, hours=rng.randint(0, 10)),
                )
            )
    return out, planted


def found(answers: tuple[str, ...], text: str) -> bool:
    return all(a in text for a in answers)


async def main(clients: int, top: int, context_tokens: int) -> None:
    from app.services.context.loader import load_context  # another engineer's; present since #3

    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="jet-retention-") as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data")
        container = await build(settings)
        try:
            tenant, _ = await tenants.create_tenant(container.control, container.tenants, "r")
            log, facts = year_of_events(clients, now)
            async with container.tenants.lease(tenant.id) as db:
                for start in range(0, len(log), 500):
                    await events.append_events(db, log[start : start + 500])

            run = await compact_tenant(container, tenant.id, trigger="cli", now=now)

            async with container.tenants.lease(tenant.id) as db:
                folded_tokens = raw_left = 0
                for ref, *_ in CLIENTS[:clients]:
                    flt = EventFilter(scope=Scope.ENTITY, scope_ref=ref)
                    after = None
                    while True:
                        page = await events.list_events(db, flt, first=100, after=after)
                        for edge in page.edges:
                            if edge.node.compressed_at is not None:
                                folded_tokens += estimate_tokens(edge.node.body)
                            else:
                                raw_left += 1
                        if not page.has_next_page:
                            break
                        after = page.end_cursor
                summary_tokens = 0
                all_summaries: list[str] = []
                flt_c = EntryFilter(sources=[EntrySource.COMPACTOR])
                after = None
                while True:
                    page_e = await entries.list_entries(db, flt_c, first=100, after=after)
                    for e in page_e.edges:
                        summary_tokens += estimate_tokens(e.node.title + "\n" + e.node.summary)
                        all_summaries.append(e.node.title + "\n" + e.node.summary)
                    if not page_e.has_next_page:
                        break
                    after = page_e.end_cursor

                in_search = in_context = 0
                missed: list[str] = []
                for fact in facts:
                    hits = await entries.list_entries(
                        db,
                        EntryFilter(
                            scope=Scope.ENTITY, scope_ref=fact.client, search=fact.question
                        ),
                        first=top,
                        after=None,
                    )
                    text = "\n".join(h.node.title + "\n" + h.node.summary for h in hits.edges)
                    ok_search = found(fact.answers, text)
                    ctx = await load_context(
                        db,
                        scope=Scope.ENTITY,
                        scope_ref=fact.client,
                        query=fact.question,
                        max_tokens=context_tokens,
                        include_institutional=True,
                    )
                    ok_context = found(fact.answers, ctx.markdown)
                    in_search += ok_search
                    in_context += ok_context
                    if not (ok_search and ok_context):
                        kept = any(found(fact.answers, t) for t in all_summaries)
                        missed.append(
                            f"{'S' if ok_search else '-'}{'C' if ok_context else '-'} "
                            f"{'kept' if kept else 'DROPPED'} {fact.sentence}"
                        )
        finally:
            await container.aclose()

    n = len(facts)
    print(
        f"{len(log)} events for {clients} clients over a year; run {run.status}: "
        f"{run.buckets_compacted} buckets, {run.periods} entries, "
        f"{run.events_compressed} events folded ({raw_left} recent events left raw)"
    )
    print(
        f"tokens of the folded events {folded_tokens:,} -> of their entries "
        f"{summary_tokens:,}: {folded_tokens / max(summary_tokens, 1):.1f}x smaller"
    )
    print(f"planted facts: {n}")
    print(f"  in the top {top} of memoryEntries(search): {in_search}/{n} = {in_search / n:.0%}")
    print(
        f"  in memoryContext(query, {context_tokens} tokens): {in_context}/{n} = "
        f"{in_context / n:.0%}"
    )
    for line in missed:
        print(f"  missed [found by S=search C=context; kept/DROPPED by the summary]: {line}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=4, choices=range(1, len(CLIENTS) + 1))
    p.add_argument("--top", type=int, default=3, help="search results read per question")
    p.add_argument("--context-tokens", type=int, default=2000)
    a = p.parse_args()
    asyncio.run(main(a.clients, a.top, a.context_tokens))
