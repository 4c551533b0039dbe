"""Scale-out on PostgreSQL: 2 API processes and 2 workers on one PostgreSQL and one Redis.

Real processes: a PostgreSQL server (tests/support/postgres_server.py), a redis-server
(app.processes.embedded_redis), `jet-memory serve` twice on free 127.0.0.1 ports and
`jet-memory worker` twice, every one with JET_DATABASE_URL and JET_REDIS_URL and its own
JET_DATA_DIR. A tenant made by the CLI gets a few hundred events older than 90 days in
several scope buckets (its first compaction work), then:

- clients append through BOTH APIs at once (GraphQL and REST, single events and batches,
  recent and old ones, every event with a unique sourceRef, some with idempotency keys),
  the same idempotency key goes through both APIs at the same moment (same content: one
  event, both answers name it; different content: one event, the other answer a conflict);
- meanwhile both workers compact that tenant, again and again: compact_tenant_job is
  enqueued several times per round with distinct job ids (the daily id would dedupe), so
  both workers run jobs at once, and runCompaction goes through both APIs too.

Then PostgreSQL itself is asked: every acknowledged append is stored exactly once and
nothing else is (no event lost, none deleted); every folded event is in exactly one
entry's sources, every compactor entry's sources are exactly the events pointing at it;
the runs' counts add up to what was folded; the two workers compacted at the same time;
a last run alone leaves no bucket behind; no log shows an error. Whether two runs raced
for a bucket ("folded by another run meanwhile") is reported, not required (here they do,
a lot: a run that loses every bucket is recorded FAILED, with only race problems).
"""

import asyncio
import contextlib
import functools
import json
import os
import random
import re
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # no py.typed
import httpx
import pytest
from arq.connections import ArqRedis, create_pool
from arq.jobs import Job

from app.worker import redis_settings_for
from tests.support.postgres_server import (
    PostgresServer,
    asyncpg_dsn,
    create_database,
    drop_database,
    find_bin_dir,
)
from tests.support.servers import free_port
from tests.support.servers import stop as stop_process

pytestmark = pytest.mark.slow

JET = Path(sys.executable).parent / "jet-memory"
STARTUP_SECONDS = 120.0
JOB_SECONDS = 60.0  # the most one compaction job is waited for (a few seconds here)
MIN_EVENTS = 3  # JET_COMPACTION_MIN_EVENTS, set explicitly below
AGE_DAYS = 90  # JET_COMPACTION_AGE_DAYS
RACE = "folded by another run meanwhile"

# The workload. Seed: SEED_BUCKETS x SEED_PER_BUCKET old events. Then CLIENTS appenders
# (half per API) run until the compaction rounds are done; SHARED_PAIRS same-key sends.
Bucket = tuple[str, str | None]  # (scope, scopeRef)
SEED_BUCKETS: list[Bucket] = [("ENTITY", f"ent_{i:02d}") for i in range(8)] + [
    ("PROJECT", "prj_apollo"),
    ("PROJECT", "prj_zeus"),
    ("TEAM", "team_ops"),
    ("INSTITUTIONAL", None),
]
NEW_BUCKETS: list[Bucket] = [
    ("ENTITY", "ent_late_a"),
    ("ENTITY", "ent_late_b"),
    ("PROJECT", "prj_late"),
]
SEED_PER_BUCKET = 25
CLIENTS = 8
ROUNDS = 4  # compaction rounds while appending
JOBS_PER_ROUND = 6  # more than a worker's max_jobs (4): both workers get some
SHARED_PAIRS = 24  # same key, same content, through both APIs at once
CONFLICT_PAIRS = 6  # same key, different content, through both APIs at once

APPEND_ONE = """mutation($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) {
    event { id sourceRef } replayed errors { field code message } } }"""
APPEND_MANY = """mutation($input: [AppendMemoryEventInput!]!) {
  appendMemoryEvents(input: $input) { events { id sourceRef } errors { field code message } } }"""
RUN_COMPACTION = """mutation { runCompaction {
  run { id status bucketsCompacted eventsCompressed problems } errors { code message } } }"""


# --------------------------------------------------------------------------- processes


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("JET_")}


@pytest.fixture(scope="module")
def pg_server_url(postgres_server: str | None) -> Iterator[str]:
    """The session's server with `--backend postgresql`; otherwise one of this module's own
    (or JET_TEST_POSTGRES_URL's), so that the default (SQLite) run covers this too."""
    if postgres_server is not None:
        yield postgres_server
        return
    if find_bin_dir() is None and not os.environ.get("JET_TEST_POSTGRES_URL"):
        reason = "no PostgreSQL server binaries (`make postgres` installs them)"
        if os.environ.get("JET_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"JET_REQUIRE_POSTGRES=1: {reason}")
        pytest.skip(reason)
    with PostgresServer() as server:
        yield server.url


@dataclass
class Cluster:
    apis: list[str]  # base URLs of the two API processes
    key: str
    tenant_id: str
    dsn: str  # asyncpg DSN of the database
    redis_url: str
    worker_logs: list[Path]
    api_logs: list[Path]

    @property
    def schema(self) -> str:
        return f"t_{self.tenant_id.lower()}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def _wait_until(
    what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while not ready():
        assert proc.poll() is None, f"{log.name} exited early:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {what} in time:\n{log.read_text()[-3000:]}"
        time.sleep(0.05)  # bounded polling, until the deadline above


def _logged(log: Path, needle: str) -> bool:
    return needle in log.read_text(errors="replace")


def _healthy(url: str) -> bool:
    with contextlib.suppress(httpx.TransportError):
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    return False


@pytest.fixture
def cluster(pg_server_url: str, redis_url: str, tmp_path: Path) -> Iterator[Cluster]:
    """A fresh database; 2 workers, 2 APIs and the CLI (making the tenant) started at once,
    each with its own data dir and log; all stopped by PID afterwards."""
    name = f"jet_scale_{uuid.uuid4().hex[:12]}"
    db_url = asyncio.run(create_database(pg_server_url, name))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        common = _base_env() | {
            "JET_DATABASE_URL": db_url,
            "JET_REDIS_URL": redis_url,
            "JET_LOG_LEVEL": "info",
            "JET_COMPACTION_MIN_EVENTS": str(MIN_EVENTS),
            "JET_COMPACTION_AGE_DAYS": str(AGE_DAYS),
            "PYTHONUNBUFFERED": "1",
        }

        def env(role: str) -> dict[str, str]:
            data = tmp_path / role / "data"
            data.mkdir(parents=True)
            return common | {"JET_DATA_DIR": str(data)}

        def spawn(role: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
            role_env = env(role)  # cwd: its own dir, so no stray .env is read
            log = tmp_path / role / f"{role}.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [str(JET), *args],
                    env=role_env,
                    cwd=log.parent,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            procs.append(proc)
            return proc, log

        workers = [spawn(f"worker{i}", "worker") for i in range(2)]
        apis = []
        for i in range(2):
            port = free_port()
            proc, log = spawn(f"api{i}", "serve", "--host", "127.0.0.1", "--port", str(port))
            apis.append((f"http://127.0.0.1:{port}", proc, log))
        # Meanwhile (every process migrates the fresh database as it starts, as replicas
        # deployed together would): the tenant and its key, by the CLI.
        made = subprocess.run(
            [str(JET), "tenants", "create", "scale"],
            env=env("cli"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert made.returncode == 0, made.stderr
        tenant_id = re.search(r"\btenant (ten_[0-9a-z]+)\b", made.stdout)
        assert tenant_id, made.stdout
        key = made.stdout.strip().splitlines()[-1]
        for url, proc, log in apis:
            _wait_until("/healthz", functools.partial(_healthy, url), proc, log)
        for proc, log in workers:
            _wait_until("worker ready", functools.partial(_logged, log, "worker ready"), proc, log)
        yield Cluster(
            apis=[url for url, _, _ in apis],
            key=key,
            tenant_id=tenant_id[1],
            dsn=asyncpg_dsn(db_url),
            redis_url=redis_url,
            worker_logs=[log for _, log in workers],
            api_logs=[log for _, _, log in apis],
        )
    finally:
        for proc in procs:  # SIGTERM to all first: they shut down in parallel
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            stop_process(proc)  # waits; SIGKILL after 10 s
        asyncio.run(drop_database(pg_server_url, name))


# ----------------------------------------------------------------------------- clients


@dataclass
class Ledger:
    """What the APIs acknowledged: sourceRef -> event id, and every answer's facts."""

    acked: dict[str, str] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    shared: list[tuple[str, str, list[str], list[bool]]] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # key, winner's sourceRef

    def ack(self, source_ref: str, event_id: str) -> None:
        assert source_ref not in self.acked, f"{source_ref} acknowledged twice"
        self.acked[source_ref] = event_id


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Workload:
    def __init__(self, cluster: Cluster, clients: list[httpx.AsyncClient]) -> None:
        self.cluster, self.clients = cluster, clients
        self.ledger = Ledger()
        self.now = datetime.now(UTC)
        self._n = 0

    def event(
        self, *, old: bool, rng: random.Random, bucket: Bucket | None = None
    ) -> dict[str, Any]:
        self._n += 1
        scope, ref = bucket or rng.choice(SEED_BUCKETS + NEW_BUCKETS)
        days = rng.uniform(AGE_DAYS + 5, 700) if old else rng.uniform(0, AGE_DAYS - 30)
        kind = rng.choice(["call_summary", "decision", "campaign_change", "sentiment_shift"])
        return {
            "scope": scope,
            "scopeRef": ref,
            "kind": kind,
            "body": f"Event {self._n}: {kind.replace('_', ' ')} for {ref or 'the agency'}, "
            f"budget {rng.randint(1, 90)}k, follow-up on day {rng.randint(1, 28)}.",
            "source": "scale-test",
            "sourceRef": f"src-{self._n:06d}",
            "occurredAt": _iso(self.now - timedelta(days=days)),
        }

    # --- one request, through GraphQL or REST, to one API

    async def gql(self, api: int, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        res = await self.clients[api].post(
            "/graphql", json={"query": query, "variables": variables}
        )
        assert res.status_code == 200, res.text
        body = res.json()
        assert "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data

    async def append_gql(self, api: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.ledger.requests[f"api{api} graphql"] += 1
        if len(events) == 1:
            got = (await self.gql(api, APPEND_ONE, {"input": events[0]}))["appendMemoryEvent"]
            assert got["errors"] == [], got
            return [got["event"] | {"replayed": got["replayed"]}]
        got = (await self.gql(api, APPEND_MANY, {"input": events}))["appendMemoryEvents"]
        assert got["errors"] == [], got
        return [e | {"replayed": False} for e in got["events"]]

    async def append_rest(self, api: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.ledger.requests[f"api{api} rest"] += 1
        rest = [_rest_shape(e) for e in events]
        if len(events) == 1:
            headers = {}
            key = rest[0].pop("idempotencyKey", None)
            if key is not None:
                headers["Idempotency-Key"] = key
            res = await self.clients[api].post("/memory/events", json=rest[0], headers=headers)
            assert res.status_code in (200, 201), res.text
            return [res.json() | {"replayed": res.status_code == 200}]
        res = await self.clients[api].post("/memory/events", json=rest)
        assert res.status_code == 201, res.text
        items: list[dict[str, Any]] = res.json()["items"]
        return [e | {"replayed": False} for e in items]

    async def append(self, api: int, rest: bool, events: list[dict[str, Any]]) -> None:
        answers = await (self.append_rest if rest else self.append_gql)(api, events)
        assert [a["sourceRef"] for a in answers] == [e["sourceRef"] for e in events]
        for answer in answers:
            assert answer["replayed"] is False, answer
            self.ledger.ack(answer["sourceRef"], answer["id"])

    # --- the phases

    async def seed(self) -> None:
        """SEED_PER_BUCKET old events per seed bucket, in batches through both APIs."""
        rng = random.Random(1)
        old = [
            self.event(old=True, bucket=b, rng=rng)
            for b in SEED_BUCKETS
            for _ in range(SEED_PER_BUCKET)
        ]
        rng.shuffle(old)
        batches = [old[i : i + 25] for i in range(0, len(old), 25)]
        await asyncio.gather(
            *(self.append(i % 2, bool(i // 2 % 2), batch) for i, batch in enumerate(batches))
        )

    async def client(self, n: int, stop: asyncio.Event) -> None:
        """Appends through API n % 2 until told to stop: singles and batches, GraphQL and
        REST, recent and old events, some with (unique) idempotency keys."""
        rng = random.Random(100 + n)
        api = n % 2
        ops = 0
        while not stop.is_set() or ops < 10:
            ops += 1
            size = 1 if rng.random() < 0.6 else rng.randint(2, 6)
            events = [self.event(old=rng.random() < 0.5, rng=rng) for _ in range(size)]
            for e in events:
                if rng.random() < 0.3:
                    e["idempotencyKey"] = f"key-{e['sourceRef']}"
            await self.append(api, rng.random() < 0.5, events)
            await asyncio.sleep(rng.uniform(0, 0.01))

    async def shared_keys(self) -> None:
        """The same idempotency key through both APIs at the same moment."""
        rng = random.Random(7)
        for i in range(SHARED_PAIRS):
            e = self.event(old=i % 2 == 0, rng=rng)
            key = e["idempotencyKey"] = f"shared-{i}-{uuid.uuid4().hex[:8]}"
            if i % 3 == 0:
                del e["occurredAt"]  # left to the server: both sends still agree
            # One API by GraphQL, the other by REST (swapped every other pair).
            first = i % 2
            answers = await asyncio.gather(
                self.append_gql(first, [dict(e)]), self.append_rest(1 - first, [dict(e)])
            )
            ids = [a[0]["id"] for a in answers]
            replayed = [a[0]["replayed"] for a in answers]
            self.ledger.shared.append((key, e["sourceRef"], ids, replayed))
            self.ledger.acked[e["sourceRef"]] = ids[0]
        for i in range(CONFLICT_PAIRS):
            key = f"conflict-{i}-{uuid.uuid4().hex[:8]}"
            one, two = (self.event(old=True, rng=rng) | {"idempotencyKey": key} for _ in "ab")
            results = await asyncio.gather(self._try_append(0, one), self._try_append(1, two))
            won = [e for e, ok in zip((one, two), results, strict=True) if ok is not None]
            assert len(won) == 1, f"same key, different content: {results}"
            winner_id = next(ok for ok in results if ok is not None)
            self.ledger.acked[won[0]["sourceRef"]] = winner_id
            self.ledger.conflicts.append((key, won[0]["sourceRef"]))

    async def _try_append(self, api: int, e: dict[str, Any]) -> str | None:
        """GraphQL through `api`: the event id, or None for a CONFLICT."""
        self.ledger.requests[f"api{api} graphql"] += 1
        got = (await self.gql(api, APPEND_ONE, {"input": e}))["appendMemoryEvent"]
        if got["errors"]:
            assert [x["code"] for x in got["errors"]] == ["CONFLICT"], got
            assert got["event"] is None, got
            return None
        assert got["replayed"] is False, got
        event_id: str = got["event"]["id"]
        return event_id

    async def run_compaction_api(self, api: int) -> dict[str, Any]:
        got = (await self.gql(api, RUN_COMPACTION, {}))["runCompaction"]
        assert got["errors"] == [], got
        run: dict[str, Any] = got["run"]
        return run


def _rest_shape(e: dict[str, Any]) -> dict[str, Any]:
    out = dict(e)
    out["scope"] = e["scope"].lower()
    if out.get("scopeRef") is None:
        out.pop("scopeRef", None)
    return out


# ------------------------------------------------------------------------- compaction


async def _compaction_round(pool: ArqRedis, tenant_id: str, tag: str, jobs: int) -> list[Any]:
    """Enqueue `jobs` compaction jobs of the tenant at once (distinct ids), await them all."""
    day = datetime.now(UTC).date().isoformat()
    ids = [f"scale:{tenant_id}:{tag}:{j}:{uuid.uuid4().hex[:6]}" for j in range(jobs)]
    for jid in ids:
        job = await pool.enqueue_job("compact_tenant_job", tenant_id, day, _job_id=jid)
        assert job is not None
    # result() raises the job's own exception if it failed.
    return list(
        await asyncio.gather(
            *(Job(jid, pool).result(timeout=JOB_SECONDS, poll_delay=0.1) for jid in ids)
        )
    )


_ARQ_LINE = re.compile(
    r"^(\S+ \S+) INFO arq\.worker +[\d.]+s ([→←]) (scale:\S+?):compact_tenant_job", re.M
)


def _jobs_per_worker(cluster: Cluster) -> list[dict[str, tuple[datetime, datetime]]]:
    """Per worker, from arq's own log lines: job id -> (started, finished)."""
    out = []
    for log in cluster.worker_logs:
        started, jobs = {}, {}
        for at, arrow, jid in _ARQ_LINE.findall(log.read_text(errors="replace")):
            when = datetime.strptime(at, "%Y-%m-%d %H:%M:%S,%f")
            if arrow == "→":
                started[jid] = when
            else:
                jobs[jid] = (started[jid], when)
        out.append(jobs)
    return out


def _overlaps(cluster: Cluster) -> int:
    """Pairs of jobs, one on each worker, that ran at the same time."""
    first, second = _jobs_per_worker(cluster)
    return sum(a0 < b1 and b0 < a1 for a0, a1 in first.values() for b0, b1 in second.values())


# ------------------------------------------------------------------------------- test


async def test_two_apis_and_two_workers_lose_nothing_and_fold_nothing_twice(
    cluster: Cluster,
) -> None:
    started = time.monotonic()
    limits = httpx.Limits(max_connections=20)
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=api, headers=cluster.headers, timeout=60, limits=limits)
            )
            for api in cluster.apis
        ]
        pool = await create_pool(redis_settings_for(cluster.redis_url))
        stack.push_async_callback(pool.aclose)
        work = Workload(cluster, clients)

        await work.seed()
        seeded = len(work.ledger.acked)

        # Appends through both APIs while both workers (and both APIs) compact.
        stop = asyncio.Event()
        summaries: list[Any] = []
        api_runs: list[dict[str, Any]] = []

        async def compact() -> None:
            try:
                for r in range(ROUNDS):
                    summaries.extend(
                        await _compaction_round(pool, cluster.tenant_id, f"r{r}", JOBS_PER_ROUND)
                    )
                    if r == 1:
                        api_runs.extend(
                            await asyncio.gather(
                                work.run_compaction_api(0), work.run_compaction_api(1)
                            )
                        )
            finally:
                stop.set()

        await asyncio.gather(
            compact(),
            work.shared_keys(),
            *(work.client(n, stop) for n in range(CLIENTS)),
        )
        appended_meanwhile = len(work.ledger.acked) - seeded

        # Appends are over: one more concurrent round folds the late old events; more
        # rounds (bounded) only if the two workers have not yet compacted at the same time.
        summaries.extend(await _compaction_round(pool, cluster.tenant_id, "after", JOBS_PER_ROUND))
        for extra in range(5):
            if _overlaps(cluster) > 0:
                break
            summaries.extend(
                await _compaction_round(pool, cluster.tenant_id, f"x{extra}", JOBS_PER_ROUND)
            )
        # Then one run alone: nothing can race it, so it leaves no bucket behind.
        [last] = await _compaction_round(pool, cluster.tenant_id, "last", 1)
        summaries.append(last)
        assert last["status"] == "succeeded", last
        ledger = work.ledger

    per_worker = [len(jobs) for jobs in _jobs_per_worker(cluster)]
    overlaps = _overlaps(cluster)
    report = await _verify(cluster, ledger, summaries, api_runs)
    print(
        f"\nscale: {len(ledger.acked)} events acknowledged ({seeded} seeded, "
        f"{appended_meanwhile} while compacting; {SHARED_PAIRS} same-key pairs, "
        f"{CONFLICT_PAIRS} conflicting pairs); requests {dict(ledger.requests)}; "
        f"{report['compressed']} folded into {report['entries']} entries; "
        f"{report['runs']} runs ({dict(report['statuses'])}), jobs per worker {per_worker} "
        f"({overlaps} pairs of jobs on both workers at once), "
        f"api runs {len(api_runs)}; races: {report['races']} buckets in "
        f"{report['raced_runs']} runs; {time.monotonic() - started:.1f}s"
    )
    assert sum(per_worker) == len(summaries), (per_worker, len(summaries))
    assert overlaps > 0, f"the workers never compacted at the same time: {per_worker}"
    # The worker's own line per run (its summary, never event text), one per job.
    finished = re.compile(rf"compaction run_\w+ of tenant {cluster.tenant_id} for ")
    logged = [len(finished.findall(log.read_text())) for log in cluster.worker_logs]
    assert logged == per_worker, (logged, per_worker)

    # No unexpected error anywhere: the logs carry no traceback, no ERROR, no 5xx.
    for log in cluster.worker_logs + cluster.api_logs:
        text = log.read_text(errors="replace")
        for bad in ("Traceback", " ERROR ", " CRITICAL ", "unexpected error", '" 500'):
            assert bad not in text, f"{bad!r} in {log}:\n{text[-4000:]}"
        for line in text.splitlines():
            if " WARNING " in line:
                assert RACE in line, f"unexpected warning in {log.name}: {line}"


async def _verify(
    cluster: Cluster, ledger: Ledger, summaries: list[Any], api_runs: list[dict[str, Any]]
) -> dict[str, Any]:
    conn = await asyncpg.connect(cluster.dsn, timeout=30)
    try:
        s = cluster.schema
        events = await conn.fetch(
            f"SELECT id, scope, scope_ref, source_ref, occurred_at, compressed_at, "
            f"compressed_into, idempotency_key FROM {s}.memory_events"
        )
        sources = await conn.fetch(
            f"SELECT entry_id, event_id, position FROM {s}.memory_entry_sources"
        )
        entries = await conn.fetch(
            f"SELECT id, scope, scope_ref, source, tags FROM {s}.memory_entries"
        )
        runs = await conn.fetch(
            f"SELECT id, status, trigger, events_compressed, periods, problems, "
            f"entries_created, cutoff FROM {s}.compaction_runs"
        )
    finally:
        await conn.close()

    # Every acknowledged append is stored exactly once, and nothing else is: no event lost,
    # none duplicated, none deleted.
    by_ref = Counter(e["source_ref"] for e in events)
    twice = {ref: n for ref, n in by_ref.items() if n != 1}
    assert not twice, f"sourceRefs stored more than once: {twice}"
    stored = {e["source_ref"]: e["id"] for e in events}
    other = [r for r in stored if r in ledger.acked and stored[r] != ledger.acked[r]]
    assert stored == ledger.acked, (
        f"lost: {sorted(set(ledger.acked) - set(stored))[:10]}, "
        f"unacknowledged: {sorted(set(stored) - set(ledger.acked))[:10]}, "
        f"stored under another id: {other[:10]}"
    )
    assert len(events) == len(ledger.acked)

    # The same key through both APIs at once: one event, both answers name it.
    by_key = {e["idempotency_key"]: e for e in events if e["idempotency_key"]}
    for key, ref, ids, replayed in ledger.shared:
        assert ids[0] == ids[1] == by_key[key]["id"], (key, ids)
        assert by_key[key]["source_ref"] == ref
        assert sorted(replayed) == [False, True], (key, replayed)
    for key, ref in ledger.conflicts:
        assert by_key[key]["source_ref"] == ref

    # Nothing folded twice: a folded event is in exactly one entry's sources, that of the
    # entry it points at; an entry's sources are exactly the events pointing at it.
    compactor = {e["id"]: e for e in entries if e["source"] == "compactor"}
    assert {e["id"] for e in entries} == set(compactor)  # this test curates nothing by hand
    sources_of: dict[str, list[Any]] = defaultdict(list)
    entries_of_event: dict[str, list[str]] = defaultdict(list)
    for row in sources:
        sources_of[row["entry_id"]].append(row)
        entries_of_event[row["event_id"]].append(row["entry_id"])
    in_two = {ev: es for ev, es in entries_of_event.items() if len(es) > 1}
    assert not in_two, f"events in two entries' sources: {list(in_two.items())[:5]}"
    pointing: dict[str, set[str]] = defaultdict(set)
    cutoff_max = max(r["cutoff"] for r in runs)
    for e in events:
        if e["compressed_into"] is None:
            assert e["compressed_at"] is None
            assert e["id"] not in entries_of_event, e
            continue
        assert e["compressed_at"] is not None
        assert entries_of_event[e["id"]] == [e["compressed_into"]], e
        pointing[e["compressed_into"]].add(e["id"])
        assert e["occurred_at"] < cutoff_max, e  # only old events are folded
    assert set(pointing) == set(compactor), "an entry without events, or events without one"
    by_id = {e["id"]: e for e in events}
    for entry_id, rows in sources_of.items():
        assert {r["event_id"] for r in rows} == pointing[entry_id], entry_id
        assert sorted(r["position"] for r in rows) == list(range(len(rows)))
        entry = compactor[entry_id]
        for r in rows:
            folded = by_id[r["event_id"]]
            assert (folded["scope"], folded["scope_ref"]) == (entry["scope"], entry["scope_ref"])

    # The runs: all finished; what they say they folded is what was folded, each entry
    # created by exactly one run; the only problems are lost races.
    statuses = Counter(r["status"] for r in runs)
    assert statuses["running"] == 0, statuses
    assert set(statuses) == {"succeeded"}, statuses  # a lost race is not a failure
    assert len(runs) == len(summaries) + len(api_runs)
    assert Counter(r["trigger"] for r in runs) == {"cron": len(summaries), "api": len(api_runs)}
    compressed = sum(e["compressed_into"] is not None for e in events)
    assert sum(r["events_compressed"] for r in runs) == compressed
    assert sum(r["periods"] for r in runs) == len(compactor)
    created = Counter(eid for r in runs for eid in _json_list(r["entries_created"]))
    assert created == Counter(set(compactor)), "an entry created twice, or by no run"
    races = raced_runs = 0
    for r in runs:
        problems = _json_list(r["problems"])
        assert all(RACE in p for p in problems), problems
        races += len(problems)
        raced_runs += bool(problems)
        assert r["status"] in ("succeeded", "partial", "failed"), r
        assert r["status"] == "succeeded" or problems, r
    assert statuses["succeeded"] + statuses["partial"] >= 2, statuses

    # The last run ran alone after the appends: no bucket has enough old events left.
    left = Counter(
        (e["scope"], e["scope_ref"])
        for e in events
        if e["compressed_into"] is None and e["occurred_at"] < cutoff_max
    )
    assert all(n < MIN_EVENTS for n in left.values()), left
    return {
        "compressed": compressed,
        "entries": len(compactor),
        "runs": len(runs),
        "statuses": statuses,
        "races": races,
        "raced_runs": raced_runs,
    }


def _json_list(value: Any) -> list[str]:
    """A JSON column as asyncpg returns it (text, without a codec)."""
    if isinstance(value, str):
        loaded: list[str] = json.loads(value)
        return loaded
    return list(value)
