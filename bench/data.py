"""Tenants for the HTTP benchmarks, generated fast and reused between runs.

Databases are created and migrated by the services, then filled with raw sqlite3
`executemany` (entries indexed by the FTS triggers, events by the event writer's own
statement, see bench/context.py's insert_events). A marker file in the data dir remembers each
generated tenant, so `--data-dir` (default bench/results/data) reuses it next time.
"""

import hashlib
import json
import random
import secrets
import shutil
import sqlite3
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert
from sqlalchemy.dialects import sqlite

from app import ids
from app.services import tenants
from app.services.records import EntryFilter, Scope
from app.services.search import analysis, keywords
from app.storage import migrate
from app.storage.control import api_keys_table, tenants_table
from app.storage.search import fulltext, spec
from app.storage.transactions import write_transaction
from app.storage.types import utcnow
from bench import context as cb  # its Markdown generator and its tenant
from bench.harness import key_for, new_tenant, open_container

# ------------------------------------------------------------------ search (workload 4)

# Ten scopes, evenly filled: seven clients, a project, a team and the agency itself.
SEARCH_SCOPES: list[tuple[str, str | None]] = [
    ("entity", c)
    for c in (
        "acme-outdoor",
        "bluefin-coffee",
        "northwind-analytics",
        "globex-labs",
        "initech-foods",
        "umbrella-apparel",
        "hooli-health",
    )
] + [("project", "wayne-home-launch-1"), ("team", "paid-social"), ("institutional", None)]
# Words that occur in a few entries each (~25 of 100,000, two or three per scope): vendors,
# code names, tools that come up once in a while in an agency's notes.
RARE_WORDS = """Quillfeather Brightwater Marrowby Tessellate Okonkwo Vantablack Zephyrine
    Halvorsen Kettleburn Lumenfield Obsidio Paxington Ravelstone Solvaig Thistlecrown Umberfeld
    Wexcombe Yarrowdale Brambleton Corvantis Dunmore Elderquist Foxhallow Gilderoy Hawkridge
    Islington Juniperra Kestrelle Larkspire Mirehaven""".split()
RARE_RATE = 0.0075  # of entries carrying one rare word
COMMON_QUERIES = cb.QUERIES
RARE_QUERIES = [
    *RARE_WORDS[:14],
    "Quillfeather invoice",
    "Brightwater Marrowby",
    "who is Okonkwo",
    "Tessellate contract",
    "Halvorsen",
    "Vantablack feed",
]


def _rare_line(rng: random.Random) -> str:
    word = rng.choice(RARE_WORDS)
    return rng.choice(
        [
            f"- Vendor {word} quoted for the next production run.",
            f"- {word} is the code name for this test.",
            f"- Asked {word} for the raw export before the review.",
        ]
    )


def search_entry_rows(n: int, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    topics = list(cb.TOPICS)
    for i in range(n):
        scope, ref = SEARCH_SCOPES[i % len(SEARCH_SCOPES)]
        at = cb.NOW - timedelta(days=rng.uniform(0, 730))
        topic = rng.choice(topics)
        title = f"{(ref or 'Agency').split('-')[0].title()}: {topic}"
        summary = cb.markdown(rng, topic, rng.randint(1, 6))
        if rng.random() < RARE_RATE:
            summary += "\n" + _rare_line(rng)
        tags = json.dumps([topic.lower(), rng.choice(["decision", "note", "people", "results"])])
        yield (
            ids.new_id(ids.ENTRY),
            scope,
            ref,
            title,
            summary,
            tags,
            rng.randint(1, 5),
            rng.choice(["chat", "call", "email", "manual"]),
            cb.ts(at),
            cb.ts(at),
            1,
        )


def fill_entries(path: Path, rows: Iterator[tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # a bulk load, not a durability test
    cb.insert_entries(conn, rows)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


async def search_tenant(data_dir: Path, n_entries: int) -> tuple[str, str]:
    """A tenant with `n_entries` entries across SEARCH_SCOPES (reused), and a new key."""
    marker = data_dir / f"search-tenant-{n_entries}.txt"
    if marker.exists():
        tenant_id = marker.read_text().strip()
        return tenant_id, await key_for(data_dir, tenant_id)
    tenant_id, key = await new_tenant(data_dir, f"bench-search-{n_entries}-{time.time_ns()}")
    container = await open_container(data_dir)
    path = container.tenants.path(tenant_id)
    await container.aclose()
    started = time.perf_counter()
    print(f"  generating {n_entries:,} entries ...", flush=True)
    fill_entries(path, search_entry_rows(n_entries, random.Random(42)))
    print(f"  generated in {time.perf_counter() - started:.0f}s", flush=True)
    marker.write_text(tenant_id)
    return tenant_id, key


def fts_sql(
    question: str,
    scope: str,
    scope_ref: str | None,
    hwm: int,
    first: int,
    *,
    first_page: bool = True,
) -> str:
    """The exact SELECT the entry search runs (app/services/entries.py, the statement of a
    first page, which reads the high-water mark itself; `first_page=False`: of a later
    page, under `hwm`), as SQL text with its values inline."""
    flt = EntryFilter(search=question, scope=Scope(scope), scope_ref=scope_ref)
    query = spec.Search(analysis.words(question, "filter.search"), scope=scope, scope_ref=scope_ref)
    stmt = keywords.search_statement("sqlite", flt, query, cursor=not first_page)
    values = fulltext.params(spec.Target("sqlite"), query)
    values.update(page_offset=0, page_limit=first + 1)
    if not first_page:
        values["hwm"] = hwm
    return str(
        stmt.params(values).compile(
            dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}
        )
    )


# ------------------------------------------------------------------ events (workload 5)


async def events_tenant(data_dir: Path, n_events: int, n_entries: int) -> tuple[str, str]:
    """A tenant filled by bench/context.py's generator with `n_events` events (reused), a key."""
    marker = data_dir / f"events-tenant-{n_events}-{n_entries}.txt"
    if marker.exists():
        tenant_id = marker.read_text().strip()
        return tenant_id, await key_for(data_dir, tenant_id)
    tenant_id, key = await new_tenant(data_dir, f"bench-events-{n_events}-{time.time_ns()}")
    container = await open_container(data_dir)
    path = container.tenants.path(tenant_id)
    await container.aclose()
    print(f"  generating {n_events:,} events and {n_entries:,} entries ...", flush=True)
    cb.generate(path, n_events, n_entries)
    marker.write_text(tenant_id)
    return tenant_id, key


EVENTS_SQL = (
    "SELECT id, scope, scope_ref, kind, body, source, source_ref, occurred_at, recorded_at,"
    " compressed_at, compressed_into, idempotency_key FROM memory_events"
    " WHERE scope = ? AND scope_ref = ? ORDER BY occurred_at DESC, id DESC LIMIT ?"
)  # what app/services/events.py list_events runs for a scope and scopeRef


# ---------------------------------------------------------------- tenants (workload 6)


async def many_tenants(data_dir: Path, n: int) -> list[tuple[str, str]]:
    """`n` tenants with a key each and a migrated (empty) database each (reused).

    One tenant is created by the services; the others are its database file copied and
    rows inserted into the control database in one transaction (the same tables). The
    marker names the tenant schema's head revision: copies made at an older one would be
    migrated by the first request to each, which workload 6 would then measure.
    """
    marker = data_dir / f"tenants-{n}-{migrate.head_revision('tenant')}.json"
    if marker.exists():
        return [tuple(t) for t in json.loads(marker.read_text())]
    started = time.perf_counter()
    print(f"  creating {n:,} tenants ...", flush=True)
    first_id, first_key = await new_tenant(data_dir, f"bench-many-{n}-{time.time_ns()}-0")
    out = [(first_id, first_key)]
    container = await open_container(data_dir)
    try:
        template = container.tenants.path(first_id)
        t_rows: list[dict[str, Any]] = []
        k_rows: list[dict[str, Any]] = []
        now = utcnow()
        stamp = time.time_ns()
        for i in range(1, n):
            tenant_id = ids.new_id(ids.TENANT)
            secret = tenants.KEY_PREFIX + secrets.token_urlsafe(32)
            t_rows.append(
                {
                    "id": tenant_id,
                    "name": f"bench-many-{n}-{stamp}-{i}",
                    "status": "active",
                    "created_at": now,
                }
            )
            k_rows.append(
                {
                    "id": ids.new_id(ids.API_KEY),
                    "tenant_id": tenant_id,
                    "key_hash": hashlib.sha256(secret.encode()).hexdigest(),
                    "prefix": secret[:10],
                    "created_at": now,
                }
            )
            out.append((tenant_id, secret))
        async with write_transaction(container.control.engine) as conn:
            await conn.execute(insert(tenants_table), t_rows)
            await conn.execute(insert(api_keys_table), k_rows)
        for tenant_id, _ in out[1:]:
            shutil.copyfile(template, container.tenants.path(tenant_id))
    finally:
        await container.aclose()
    marker.write_text(json.dumps(out))
    print(f"  created in {time.perf_counter() - started:.0f}s", flush=True)
    return out


# The search workload's request and cases, shared by bench/search.py and bench/backends.py.
SEARCH_QUERY = (
    "query($f: MemoryEntryFilter!) { memoryEntries(filter: $f, first: 20) { edges {"
    " score node { id scope scopeRef title summary tags importance updatedAt } }"
    " pageInfo { hasNextPage endCursor } } }"
)


def search_cases() -> list[tuple[str, str, str, str | None]]:
    """(tag, question, scope, scopeRef): every common and rare question in every scope,
    in a fixed shuffled order."""
    cases: list[tuple[str, str, str, str | None]] = []
    for scope, ref in SEARCH_SCOPES:
        cases += [("common", q, scope, ref) for q in COMMON_QUERIES]
        cases += [("rare", q, scope, ref) for q in RARE_QUERIES]
    random.Random(3).shuffle(cases)
    return cases
