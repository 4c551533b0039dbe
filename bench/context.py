"""memoryContext latency at the server: one tenant with 1,000,000 events and 100,000 entries.

Usage: .venv/bin/python -m bench.context [--events N] [--entries N] [--calls 200]
       [--data-dir DIR (reuses the tenant generated there)] [--search-cache-pages N]
       [--same-question] [--profile]
Times load_context itself (the service call a request makes), p50/p95/p99; target p95 < 30 ms.
"""

import argparse
import asyncio
import cProfile
import json
import pstats
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app import ids
from app.config import Settings
from app.deps import Container, build
from app.services import tenants
from app.services.context import loader
from app.services.records import Scope
from app.storage.search import fulltext

NOW = datetime(2026, 6, 1, 9, tzinfo=UTC)
COMPRESSED_AFTER_DAYS = 30  # the daily compactor folds what is older than this
BATCH = 20_000

CLIENTS = [
    f"{a}-{b}"
    for a in (
        "acme",
        "bluefin",
        "northwind",
        "globex",
        "initech",
        "umbrella",
        "hooli",
        "stark",
        "wayne",
        "wonka",
        "cyberdyne",
        "soylent",
        "tyrell",
        "vandelay",
        "pied-piper",
        "dunder",
        "gringotts",
        "oscorp",
        "monarch",
        "aperture",
    )
    for b in (
        "outdoor",
        "coffee",
        "analytics",
        "labs",
        "foods",
        "apparel",
        "health",
        "travel",
        "home",
        "pets",
    )
]
PEOPLE = [
    "Dana Whitfield",
    "Sam Okafor",
    "Elena Brooks",
    "Raj Patel",
    "Mark Olsen",
    "Priya Natarajan",
    "Tomás Reyes",
    "Lena Fischer",
    "Kofi Mensah",
    "Jordan Lee",
]
CHANNELS = ["Meta", "Google Ads", "TikTok", "LinkedIn", "Pinterest", "YouTube", "Microsoft Ads"]
# Topic -> sentences. Each entry or event is mostly about one topic, so a topic's words
# sit in a few percent of the memory, as in a real agency's notes (not in all of them).
TOPICS = {
    "budget": [
        "Monthly budget set to ${n}k across {channel}; {person} approved the split.",
        "Budget pacing at {n}% mid-month; holding spend flat until the review.",
    ],
    "ROAS target": [
        "Blended ROAS target {x} agreed with {person}; platform ROAS tracked apart.",
        "ROAS floor lowered to {x} to buy new-customer growth.",
    ],
    "CPA guardrail": ["CPA guardrail ${n} on first orders; pause ad sets above it for 3 days."],
    "TikTok test": [
        "TikTok Spark Ads test with creator videos: CPA ${n} against a goal of ${m}.",
        "TikTok hooks refreshed; gear demo videos had the best thumb-stop rate.",
    ],
    "Shopping feed": [
        "Merchant Center disapproved {n} SKUs for missing GTINs; feed app fix due.",
        "Shopping impression share fell to {n}% after the feed errors.",
    ],
    "attribution": [
        "We report 7-day click / 1-day view; Triple Whale first-click for comparison.",
        "Data-driven attribution in Google Ads; reconcile with store revenue weekly.",
    ],
    "creative refresh": [
        "Frequency {x} over 7 days: refresh hooks, thumbnails and headlines.",
        "Creative fatigue on the top ad set; three new concepts in production.",
    ],
    "landing page": [
        "Landing page conversion rate {x}% after the new hero section.",
        "Page speed 4.1 s on mobile; developers moving the reviews widget below.",
    ],
    "offline conversions": [
        "HubSpot offline conversion upload for SQL and closed-won stages.",
        "Offline conversions imported daily; LinkedIn CAPI still pending.",
    ],
    "Black Friday": [
        "Black Friday plan: bids up {n}%, no structural changes in freeze week.",
        "Black Friday results: revenue ${n}k at ROAS {x}, best day on record.",
    ],
    "churn": [
        "Subscription churn {x}% this month; a skip-a-month option is being tested.",
        "Churn spikes after the third box; retention emails are the client's.",
    ],
    "contract renewal": [
        "Contract renewal on the 1st of next quarter; retainer 10% of spend.",
        "{person} wants a performance bonus clause at renewal.",
    ],
    "UGC videos": [
        "UGC videos from {n} creators: unboxing and field-test formats.",
        "Best UGC video: pitch a tent in 60 seconds, ROAS {x} on prospecting.",
    ],
    "brand search": [
        "Brand search CPC ${x}; incrementality test against organic planned.",
        "Competitors bidding on the brand; impression share {n}%.",
    ],
    "retargeting": [
        "Retargeting pool: 30-day site visitors, frequency cap 3 a week.",
        "Dynamic product ads for cart abandoners at ROAS {x}.",
    ],
    "lookalike audiences": [
        "Lookalike 1% of purchasers; seed list refreshed monthly.",
        "Broad targeting beat lookalikes by {n}% on CPA.",
    ],
    "pricing": [
        "Price test on the hero product: ${n} against ${m}.",
        "Free shipping threshold raised to ${n}; AOV up {x}%.",
    ],
    "people": [
        "{person} is the main contact: prefers Slack, no calls before 10:00.",
        "{person} joins the monthly review and asks about contribution margin.",
    ],
    "reporting": [
        "Weekly report every Monday: spend, revenue, ROAS and CPA against target.",
        "Monthly review deck sent; {person} asked for a one-page summary.",
    ],
    "YouTube": ["YouTube demand gen for awareness; view rate {x}%, CPV ${x}."],
    "LinkedIn": ["LinkedIn lead gen forms at ${n} per lead; Audience Network excluded."],
    "Pinterest": ["Pinterest shopping ads for home decor; CTR {x}%."],
    "Amazon ads": ["Amazon sponsored products ACoS {n}%; the client runs it in-house."],
    "promo calendar": ["Promo calendar: spring sale on the 15th, {n}% off sitewide."],
    "inventory": ["Stock-outs on best sellers; pause ads for out-of-stock variants."],
    "returns": ["Apparel returns {n}%; optimise on net revenue after returns."],
    "CAC and LTV": ["New-customer CAC ${n} against LTV ${m}; payback within 4 months."],
    "pixel and CAPI": ["Pixel and Conversions API deduplication fixed; event match quality {x}."],
    "GA4": ["GA4 sessions undercount paid social; use UTMs on every ad."],
    "consent mode": ["Consent mode v2 live; modelled conversions fill about {n}% of the gap."],
    "agency fee": ["Retainer 10% of ad spend with a ${m}00 minimum; creative billed apart."],
    "QBR": ["QBR agenda: results, next-quarter budget proposal, testing roadmap."],
    "onboarding": ["Onboarding checklist: access to ad accounts, pixel audit, KPI sign-off."],
    "naming convention": ["Naming: client_channel_objective_audience_yyyymm for every campaign."],
    "approval policy": ["Budget changes above 20% need written client approval first."],
}
QUERIES = [
    "What is the monthly ad budget?",
    "What ROAS target did we agree?",
    "Who is the main contact and how do they like to be contacted?",
    "How is the TikTok test going?",
    "Can we move budget between channels without approval?",
    "What should I prepare for the monthly review?",
    "Which attribution window do we use?",
    "Any problems with the Shopping feed?",
    "What CPA should campaigns hit?",
    "When should we refresh creatives?",
    "What did we decide about Black Friday?",
    "Are offline conversions set up?",
    "How did the UGC videos perform?",
    "What is the contract renewal date and the retainer?",
    "Why did churn go up?",
    "Is brand search cannibalising organic?",
    "retargeting lookalike audiences",
    "landing page conversion rate",
    "What is our new-customer CAC against LTV?",
    "Is consent mode set up?",
]
KINDS = [
    "call_summary",
    "decision",
    "campaign_change",
    "sentiment_shift",
    "email_summary",
    "budget_change",
    "report_sent",
    "creative_review",
    "note",
]


def ts(dt: datetime) -> str:
    # How UTCDateTime stores a timestamp in SQLite (naive UTC, SQLAlchemy's format).
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def scopes(rng: random.Random) -> tuple[str, str | None]:
    """Mostly clients, then projects, teams and the agency itself (weights as in real use)."""
    r = rng.random()
    if r < 0.85:
        return "entity", rng.choice(CLIENTS)
    if r < 0.95:
        return "project", f"{rng.choice(CLIENTS)}-launch-{rng.randint(1, 3)}"
    if r < 0.99:
        return "team", rng.choice(["paid-social", "search", "creative", "analytics"])
    return "institutional", None


def sentence(rng: random.Random, topic: str) -> str:
    return rng.choice(TOPICS[topic]).format(
        n=rng.randint(3, 95),
        m=rng.randint(20, 140),
        x=f"{rng.uniform(0.5, 5):.1f}",
        person=rng.choice(PEOPLE),
        channel=rng.choice(CHANNELS),
    )


def markdown(rng: random.Random, topic: str, sentences: int) -> str:
    """A few lines on one topic, sometimes touching another, as notes are."""
    lines = [sentence(rng, topic)]
    for _ in range(sentences):
        other = topic if rng.random() < 0.6 else rng.choice(list(TOPICS))
        lines.append(f"- {sentence(rng, other)}")
    return "\n".join(lines)


def entry_rows(n: int, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    for _ in range(n):
        scope, ref = scopes(rng)
        at = NOW - timedelta(days=rng.uniform(0, 730))
        topic = rng.choice(list(TOPICS))
        title = f"{(ref or 'Agency').split('-')[0].title()}: {topic}"
        tags = json.dumps([topic.lower(), rng.choice(["decision", "note", "people", "results"])])
        yield (
            ids.new_id(ids.ENTRY),
            scope,
            ref,
            title,
            markdown(rng, topic, rng.randint(1, 6)),
            tags,
            rng.randint(1, 5),
            rng.choice(["chat", "call", "email", "manual"]),
            ts(at),
            ts(at),
            1,
        )


def event_rows(n: int, rng: random.Random, summary_of: dict[Any, str]) -> Iterator[tuple[Any, ...]]:
    cutoff = NOW - timedelta(days=COMPRESSED_AFTER_DAYS)
    # In recording order, as the server appends them: the log's seq follows recorded_at,
    # so the uncompressed events are its newest seqs.
    days = sorted((rng.uniform(0, 365) for _ in range(n)), reverse=True)
    for day in days:
        scope, ref = scopes(rng)
        at = NOW - timedelta(days=day)
        folded = summary_of.get((scope, ref)) if at < cutoff else None
        body = markdown(rng, rng.choice(list(TOPICS)), rng.randint(0, 4))
        yield (
            ids.new_id(ids.EVENT),
            scope,
            ref,
            rng.choice(KINDS),
            body,
            rng.choice(["inbox", "automation"]),
            None,
            ts(at),
            ts(at),
            ts(cutoff) if folded else None,
            folded,
        )


def insert_events(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """executemany `sql` (an INSERT INTO memory_events) inside the caller's transaction and
    index the new rows for search, as the server's event writer does (app/storage/
    event_log.py): the highest seq before, one INSERT ... SELECT into the FTS5 index after."""
    (after,) = conn.execute(fulltext.LAST_EVENT_SEQ_SQL).fetchone()
    conn.executemany(sql, rows)
    conn.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})


def insert_entries(conn: sqlite3.Connection, rows: Iterator[tuple[Any, ...]]) -> None:
    """Bulk-insert entry rows (the FTS triggers index them), BATCH rows per transaction."""
    while chunk := [r for _, r in zip(range(BATCH), rows, strict=False)]:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO memory_entries (id, scope, scope_ref, title, summary, tags, importance,"
            " source, created_at, updated_at, version) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            chunk,
        )
        conn.execute("COMMIT")


def generate(path: Path, n_events: int, n_entries: int) -> None:
    rng = random.Random(42)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # a bulk load, not a durability test
    started = time.perf_counter()
    rows = entry_rows(n_entries, rng)
    insert_entries(conn, rows)
    # Compressed events point at a summary entry of their own scope, as the compactor does.
    summary_of = {
        (s, r): i for i, s, r in conn.execute("SELECT id, scope, scope_ref FROM memory_entries")
    }
    print(f"  {n_entries:,} entries in {time.perf_counter() - started:.0f}s", flush=True)
    events = event_rows(n_events, rng, summary_of)
    done = 0
    while chunk := [r for _, r in zip(range(BATCH), events, strict=False)]:
        conn.execute("BEGIN")
        insert_events(
            conn,
            "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source, source_ref,"
            " occurred_at, recorded_at, compressed_at, compressed_into)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            chunk,
        )
        conn.execute("COMMIT")
        done += len(chunk)
        if done % 200_000 == 0:
            print(f"  {done:,} events, {time.perf_counter() - started:.0f}s", flush=True)
    conn.close()
    print(f"  generated in {time.perf_counter() - started:.0f}s", flush=True)


async def tenant_for(container: Container, data_dir: Path, n_events: int, n_entries: int) -> str:
    marker = data_dir / f"bench-tenant-{n_events}-{n_entries}.txt"
    if marker.exists():
        return marker.read_text().strip()
    tenant, _ = await tenants.create_tenant(container.control, container.tenants, "bench")
    print(f"generating {n_events:,} events and {n_entries:,} entries ...", flush=True)
    generate(container.tenants.path(tenant.id), n_events, n_entries)
    marker.write_text(tenant.id)
    return tenant.id


def percentiles(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100, method="inclusive")
    return f"p50 {q[49]:5.1f}  p95 {q[94]:5.1f}  p99 {q[98]:5.1f}  max {max(samples):5.1f}"


async def run(args: argparse.Namespace, data_dir: Path) -> None:
    # The search cache off unless asked for: each call then finds its candidates, as a
    # question new to the process does.
    settings = Settings(
        _env_file=None, data_dir=data_dir, search_cache_pages=args.search_cache_pages
    )
    container = await build(settings)
    try:
        tenant_id = await tenant_for(container, data_dir, args.events, args.entries)
        rng = random.Random(7)
        profiler = cProfile.Profile() if args.profile else None
        async with container.tenants.lease(tenant_id) as db:
            for label, query in (("without a query", False), ("with a query", True)):
                for max_tokens in args.max_tokens:
                    wall: list[float] = []
                    cpu: list[float] = []
                    sizes: list[int] = []
                    for i in range(args.calls + 20):
                        kind, ref = rng.choice(
                            [("entity", c) for c in CLIENTS] + [("team", "paid-social")]
                        )
                        asked = rng.choice(QUERIES)
                        if args.same_question:  # one scope, one question, every call
                            kind, ref, asked = "entity", CLIENTS[0], QUERIES[0]
                        started, started_cpu = time.perf_counter(), time.process_time()
                        if profiler is not None and query and i >= 20:
                            profiler.enable()
                        result = await loader.load_context(
                            db,
                            scope=Scope(kind),
                            scope_ref=ref,
                            query=asked if query else None,
                            max_tokens=max_tokens,
                            include_institutional=True,
                            now=NOW,
                        )
                        if profiler is not None:
                            profiler.disable()
                        if i >= 20:  # the first calls warm the connection pool and caches
                            wall.append((time.perf_counter() - started) * 1000)
                            # CPU of the whole process (the SQLite thread too): the work,
                            # apart from waiting for a CPU on a busy machine.
                            cpu.append((time.process_time() - started_cpu) * 1000)
                            sizes.append(len(result.entries) + len(result.events))
                    print(
                        f"{label:16} maxTokens={max_tokens:<5} ~{statistics.fmean(sizes):2.0f}"
                        f" items | wall ms {percentiles(wall)} | CPU ms {percentiles(cpu)}",
                        flush=True,
                    )
        if profiler is not None:  # the calls with a question, their timings skewed by it
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    finally:
        await container.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--max-tokens", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--data-dir", type=Path, help="keep (and reuse) the tenant here")
    parser.add_argument(
        "--search-cache-pages",
        type=int,
        default=0,
        help="JET_SEARCH_CACHE_PAGES for the run (default 0: every call finds its candidates)",
    )
    parser.add_argument(
        "--same-question",
        action="store_true",
        help="ask every call the same question in the same scope (with --search-cache-pages:"
        " the cache's hits)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the calls with a question and print where their time goes",
    )
    args = parser.parse_args()
    if args.data_dir:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        asyncio.run(run(args, args.data_dir))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
