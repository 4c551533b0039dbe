"""The arq worker against a real Redis server: the cron schedule, the per-day fan-out,
jobs folding real tenants' events, two workers at once, and a worker killed mid-bucket."""

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis, create_pool
from arq.constants import in_progress_key_prefix
from arq.worker import Worker, get_kwargs
from sqlalchemy import text

from app.adapters.summarisers.builtin import BuiltinSummariser
from app.config import Settings
from app.deps import Container
from app.services import compaction
from app.services import events as event_service
from app.services import tenants as tenant_service
from app.services.compaction import CompactionRunRecord, RunStatus, RunTrigger
from app.services.policies import TenantPolicy
from app.services.records import EventIn, Scope
from app.storage.transactions import read_transaction
from app.storage.types import utcnow
from app.worker import WorkerSettings, fan_out, job_id, redis_settings_for, shutdown

OLD = timedelta(days=120)  # well past the 90-day default
GATEWAY_KEY = "sk-stub-0123456789"


# ------------------------------------------------------------------------------ helpers


@dataclasses.dataclass
class Seeded:
    tenant_id: str
    old: list[str]  # ids of the events the compactor must fold
    recent: list[str]  # ids it must leave alone
    buckets: int


async def seed(container: Container, name: str, *, buckets: int = 2, per_bucket: int = 3) -> Seeded:
    """A tenant with `buckets` entities of old events each, plus one recent event each."""
    tenant, _ = await tenant_service.create_tenant(container.control, container.tenants, name)
    now = utcnow()
    old: list[EventIn] = []
    recent: list[EventIn] = []
    for b in range(buckets):
        ref = f"ent_{b}"
        for i in range(per_bucket):
            old.append(
                EventIn(
                    scope=Scope.ENTITY,
                    scope_ref=ref,
                    kind="decision",
                    body=f"{name} client {b} approved a ${1_000 * (i + 1):,} budget"
                    f" for Q{i % 4 + 1}.",
                    occurred_at=now - OLD - timedelta(days=i),
                )
            )
        recent.append(
            EventIn(
                scope=Scope.ENTITY,
                scope_ref=ref,
                kind="call_summary",
                body=f"{name} client {b} asked for the new report.",
                occurred_at=now - timedelta(days=1),
            )
        )
    async with container.tenants.lease(tenant.id) as db:
        done_old = await event_service.append_events(db, old)
        done_recent = await event_service.append_events(db, recent)
    return Seeded(
        tenant.id,
        [a.event.id for a in done_old],
        [a.event.id for a in done_recent],
        buckets,
    )


@dataclasses.dataclass
class FoldState:
    compressed_into: dict[str, str | None]  # event id -> entry id
    compressed_at_set: dict[str, bool]
    provenance: list[tuple[str, str]]  # (entry id, event id)
    compactor_entries: list[str]


async def fold_state(container: Container, tenant_id: str) -> FoldState:
    async with container.tenants.lease(tenant_id) as db, read_transaction(db.engine) as conn:
        events = list(
            await conn.execute(text("SELECT id, compressed_at, compressed_into FROM memory_events"))
        )
        prov = list(await conn.execute(text("SELECT entry_id, event_id FROM memory_entry_sources")))
        entries = list(
            await conn.execute(text("SELECT id FROM memory_entries WHERE source = 'compactor'"))
        )
    return FoldState(
        compressed_into={r.id: r.compressed_into for r in events},
        compressed_at_set={r.id: r.compressed_at is not None for r in events},
        provenance=[(r.entry_id, r.event_id) for r in prov],
        compactor_entries=[r.id for r in entries],
    )


def assert_untouched(state: FoldState) -> None:
    assert not any(state.compressed_at_set.values())
    assert not any(state.compressed_into.values())
    assert state.provenance == [] and state.compactor_entries == []


def assert_folded_once(state: FoldState, seeded: Seeded) -> None:
    """Every old event folded into exactly one entry, one entry per bucket, none twice."""
    for event_id in seeded.old:
        assert state.compressed_at_set[event_id], event_id
        assert state.compressed_into[event_id] is not None, event_id
    for event_id in seeded.recent:
        assert not state.compressed_at_set[event_id] and state.compressed_into[event_id] is None
    folded_events = [event_id for _, event_id in state.provenance]
    assert sorted(folded_events) == sorted(seeded.old)  # each exactly once
    assert len(state.compactor_entries) == seeded.buckets  # no duplicate entry
    for entry_id, event_id in state.provenance:
        assert state.compressed_into[event_id] == entry_id


def worker_kwargs(**overrides: Any) -> dict[str, Any]:
    """Worker arguments from WorkerSettings, with copies of its cron jobs: arq keeps each
    job's next run on the CronJob itself, so workers sharing one would share a schedule."""
    cron_jobs = [dataclasses.replace(job) for job in WorkerSettings.cron_jobs or []]
    return {**get_kwargs(WorkerSettings), "cron_jobs": cron_jobs, **overrides}


async def run_burst(redis_url: str, settings: Settings, **overrides: Any) -> Worker:
    """Run an arq Worker from WorkerSettings in burst mode, in this process, on its own pool."""
    redis = await create_pool(redis_settings_for(redis_url))
    worker = Worker(
        **worker_kwargs(
            redis_pool=redis,
            burst=True,
            handle_signals=False,
            poll_delay=0.05,
            ctx={"settings": settings},
            **overrides,
        )
    )
    try:
        await worker.async_run()
    finally:
        # Worker.close() would close the pool with Redis.close(), deprecated in redis-py 5;
        # the pool is ours, so run the shutdown hook and close it with aclose().
        await shutdown(worker.ctx)
        await redis.aclose()
    return worker


# ------------------------------------------------------------------------ the schedule


def test_one_cron_job_daily_at_0617_utc() -> None:
    [job] = WorkerSettings.cron_jobs or []
    assert job.name == "cron:fan_out"
    assert (job.month, job.day, job.weekday) == (None, None, None)
    assert (job.hour, job.minute, job.second) == (6, 17, 0)
    assert job.unique and not job.run_at_startup
    assert WorkerSettings.timezone is UTC


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (datetime(2026, 3, 10, 6, 0, tzinfo=UTC), datetime(2026, 3, 10, 6, 17, tzinfo=UTC)),
        (datetime(2026, 3, 10, 6, 18, tzinfo=UTC), datetime(2026, 3, 11, 6, 17, tzinfo=UTC)),
        (datetime(2026, 12, 31, 23, 59, tzinfo=UTC), datetime(2027, 1, 1, 6, 17, tzinfo=UTC)),
    ],
)
def test_next_run_is_0617_utc(now: datetime, expected: datetime) -> None:
    job = dataclasses.replace((WorkerSettings.cron_jobs or [])[0])  # a copy: arq mutates it
    job.calculate_next(now)
    assert job.next_run is not None
    # arq starts cron jobs at .123456 s past the second to dodge the top-of-second rush.
    assert job.next_run.replace(microsecond=0) == expected


async def test_the_worker_schedules_in_utc_whatever_the_local_zone(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30: 06:17 local would be 00:47 UTC
    time.tzset()
    try:
        worker = Worker(**worker_kwargs(redis_pool=pool, handle_signals=False))
        job = worker.cron_jobs[0]

        def heartbeat_at(utc: datetime) -> datetime:
            # The worker's heartbeat passes `now` in its own zone: datetime.now(tz=timezone).
            return utc.astimezone(worker.timezone)

        # The first heartbeat computes the next run; a later one enqueues the job once
        # it falls within the next second.
        await worker.run_cron(heartbeat_at(datetime(2026, 3, 10, 6, 0, tzinfo=UTC)), delay=0.5)
        assert job.next_run is not None
        assert job.next_run.astimezone(UTC).replace(microsecond=0) == datetime(
            2026, 3, 10, 6, 17, tzinfo=UTC
        )
        await worker.run_cron(
            heartbeat_at(datetime(2026, 3, 10, 6, 16, 59, 500_000, tzinfo=UTC)), delay=0.5
        )
        [queued] = await pool.queued_jobs()
        assert queued.function == "cron:fan_out"
        assert job.next_run.astimezone(UTC).replace(microsecond=0) == datetime(
            2026, 3, 11, 6, 17, tzinfo=UTC
        )
    finally:
        monkeypatch.undo()
        time.tzset()


# ------------------------------------------------------------------------------ fan-out


async def test_fan_out_enqueues_one_job_per_active_tenant_per_day(
    container: Container, pool: ArqRedis
) -> None:
    seeded = [await seed(container, name) for name in ("acme", "globex", "initech")]
    now = datetime(2026, 3, 10, 6, 17, tzinfo=UTC)
    ctx = {"redis": pool, "container": container}

    assert await fan_out(ctx, now=now) == 3
    queued = await pool.queued_jobs()
    assert sorted((j.job_id, j.function, tuple(j.args)) for j in queued) == sorted(
        (f"compact:{s.tenant_id}:2026-03-10", "compact_tenant_job", (s.tenant_id, "2026-03-10"))
        for s in seeded
    )

    # A repeated cron (another worker, a restart) on the same day adds nothing ...
    assert await fan_out(ctx, now=now + timedelta(hours=5)) == 0
    assert len(await pool.queued_jobs()) == 3
    # ... and the next day is a new job per tenant.
    assert await fan_out(ctx, now=now + timedelta(days=1)) == 3
    assert job_id(seeded[0].tenant_id, (now + timedelta(days=1)).date()) in {
        j.job_id for j in await pool.queued_jobs()
    }


# --------------------------------------------------------------------------- the worker


async def test_worker_runs_the_cron_fan_out_and_folds_old_events(
    settings: Settings, container: Container, pool: ArqRedis, redis_url: str
) -> None:
    acme = await seed(container, "acme")
    globex = await seed(container, "globex", buckets=3)
    await pool.enqueue_job("cron:fan_out")  # what the 06:17 heartbeat enqueues

    worker = await run_burst(redis_url, settings)

    assert (worker.jobs_complete, worker.jobs_failed) == (3, 0)  # fan-out + two tenants
    for s in (acme, globex):
        assert_folded_once(await fold_state(container, s.tenant_id), s)
        result = await pool.get(f"arq:result:{job_id(s.tenant_id, utcnow().date())}")
        assert result is not None  # kept past the day: the id stays taken
    # The job ids are still taken today: a second fan-out enqueues nothing.
    assert await fan_out({"redis": pool, "container": container}) == 0


async def test_two_workers_at_once_fold_every_event_exactly_once(
    settings: Settings, container: Container, pool: ArqRedis, redis_url: str
) -> None:
    seeded = [await seed(container, f"t{i}", buckets=8) for i in range(3)]
    day = utcnow().date().isoformat()
    # Two jobs per tenant under different ids, so arq's own dedup cannot hide a race:
    # only the compactor's guard stands between two runs folding the same bucket.
    for suffix in ("", ":again"):
        for s in seeded:
            await pool.enqueue_job(
                "compact_tenant_job",
                s.tenant_id,
                day,
                _job_id=f"compact:{s.tenant_id}:{day}{suffix}",
            )

    a, b = await asyncio.gather(run_burst(redis_url, settings), run_burst(redis_url, settings))

    assert a.jobs_complete + b.jobs_complete == 6 and a.jobs_failed + b.jobs_failed == 0
    assert a.jobs_complete and b.jobs_complete  # both workers took jobs
    overlapped = []
    for s in seeded:
        assert_folded_once(await fold_state(container, s.tenant_id), s)
        first, second = await runs(container, s.tenant_id)
        # Across the tenant's two runs, each event and bucket was counted once.
        assert first.events_compressed + second.events_compressed == len(s.old)
        assert first.buckets_compacted + second.buckets_compacted == s.buckets
        assert first.finished_at is not None and second.finished_at is not None
        overlapped.append(second.started_at < first.finished_at)
    assert any(overlapped)  # the runs of a tenant did race (else this test proves little)


# ------------------------------------------------------------------------ the crash test


class StallingGateway:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, in a thread.

    It answers the first `free` requests at once, then holds every request open without
    answering until `answer()`; from then on it answers each with a well-formed summary.
    """

    def __init__(self, free: int = 0) -> None:
        self.free = free
        self.requests = 0
        self.authorization: set[str] = set()
        self._answer = threading.Event()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub._lock:
                    stub.requests += 1
                    stub.authorization.add(self.headers.get("Authorization", ""))
                    free = stub.requests <= stub.free
                if not free and not stub._answer.wait(timeout=60):
                    return
                content = f"{request['model']} summary\n\n- Budgets approved as recorded."
                body = json.dumps(
                    {
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 12},
                    }
                ).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed while this request stalled

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self) -> None:
        self._answer.set()

    def __enter__(self) -> "StallingGateway":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._answer.set()  # releases stalled handler threads
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


@pytest.fixture
def stalling_gateway() -> Iterator[StallingGateway]:
    with StallingGateway() as stub:
        yield stub


def worker_env(settings: Settings, redis_url: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    return environ | {
        "JET_DATA_DIR": str(settings.data_dir),
        "JET_REDIS_URL": redis_url,
        "PYTHONUNBUFFERED": "1",
    }


async def wait_for(
    predicate: Any, *, within: float, what: str, proc: asyncio.subprocess.Process
) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if proc.returncode is not None:
            raise AssertionError(f"worker exited early ({proc.returncode}) while waiting: {what}")
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        await asyncio.sleep(0.05)  # bounded polling, not a timing assumption


@pytest.mark.slow
async def test_kill_9_mid_bucket_then_rerun_folds_each_event_once(
    settings: Settings,
    container: Container,
    pool: ArqRedis,
    redis_url: str,
    stalling_gateway: StallingGateway,
    tmp_path: Path,
) -> None:
    seeded = await seed(container, "acme", buckets=3)
    env = worker_env(settings, redis_url)
    await configure_gateway(env, tmp_path, seeded.tenant_id, stalling_gateway.base_url)
    day = utcnow().date()
    jid = job_id(seeded.tenant_id, day)

    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "arq"),
            "app.worker.WorkerSettings",
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        await pool.enqueue_job("compact_tenant_job", seeded.tenant_id, day.isoformat(), _job_id=jid)
        await wait_for(
            lambda: stalling_gateway.requests > 0, within=30, what="a gateway request", proc=proc
        )
        os.kill(proc.pid, signal.SIGKILL)  # mid-bucket: the gateway has not answered
        assert await asyncio.wait_for(proc.wait(), 10) == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    assert stalling_gateway.authorization == {f"Bearer {GATEWAY_KEY}"}
    assert_untouched(await fold_state(container, seeded.tenant_id))
    assert await pool.exists(in_progress_key_prefix + jid)  # arq still sees it running

    # Redis expires the dead worker's in-progress key JOB_TIMEOUT + 10 s after it took the
    # job; expire it now, and the next worker takes the same job again, as its 2nd try.
    await pool.delete(in_progress_key_prefix + jid)
    stalling_gateway.answer()
    # The dead run is seconds old and its heartbeat fresh, but its process is gone from
    # this host: the rerun marks it interrupted at once.
    worker = await run_burst(redis_url, settings)

    assert (worker.jobs_complete, worker.jobs_failed) == (1, 0)
    assert_folded_once(await fold_state(container, seeded.tenant_id), seeded)
    interrupted, rerun = await runs(container, seeded.tenant_id)
    assert (interrupted.status, interrupted.trigger) == (RunStatus.FAILED, RunTrigger.CRON)
    assert interrupted.problems == [compaction.INTERRUPTED]
    assert (rerun.status, rerun.trigger) == (RunStatus.SUCCEEDED, RunTrigger.CRON)
    assert rerun.events_compressed == len(seeded.old)
    assert rerun.summariser == "stub-model"


@pytest.mark.slow
async def test_a_run_killed_after_some_folds_shows_them_and_the_next_run_marks_it(
    settings: Settings, container: Container, tmp_path: Path
) -> None:
    seeded = await seed(container, "acme", buckets=4)
    env = worker_env(settings, "redis://127.0.0.1:1")  # the CLI needs no Redis
    env["JET_COMPACTION_CONCURRENCY"] = "1"  # one summary at a time: folds come in order
    with StallingGateway(free=2) as gateway:
        await configure_gateway(env, tmp_path, seeded.tenant_id, gateway.base_url)
        proc = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "jet-memory"),
            *("compact", "--tenant", seeded.tenant_id),
            env=env,
            cwd=tmp_path,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            # Two buckets answered (and folded), the third stalls at the gateway.
            await wait_for(lambda: gateway.requests > 2, within=30, what="a 3rd request", proc=proc)
            os.kill(proc.pid, signal.SIGKILL)
            assert await asyncio.wait_for(proc.wait(), 10) == -signal.SIGKILL
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    state = await fold_state(container, seeded.tenant_id)
    assert len(state.compactor_entries) == 2
    [killed] = await runs(container, seeded.tenant_id)
    # Its counters moved with each fold, in the fold's transaction.
    assert killed.status is RunStatus.RUNNING and killed.trigger is RunTrigger.CLI
    assert (killed.buckets_considered, killed.buckets_compacted, killed.periods) == (4, 2, 2)
    assert killed.events_compressed == 6 and killed.prompt_tokens == 200

    # The next run, seconds later, in this process on the same host: the killed one's
    # process is gone, so it is marked interrupted without waiting out the window.
    async with container.tenants.lease(seeded.tenant_id) as db:
        await compaction.run_compaction(
            db,
            policy=TenantPolicy(seeded.tenant_id),
            summariser=BuiltinSummariser(),
            settings=settings,
            trigger="cli",
        )
    interrupted, rerun = await runs(container, seeded.tenant_id)
    assert interrupted.id == killed.id and interrupted.status is RunStatus.FAILED
    assert interrupted.problems == [compaction.INTERRUPTED]
    assert (interrupted.buckets_compacted, interrupted.buckets_skipped) == (2, 2)
    assert interrupted.events_compressed == 6 and interrupted.entries_created == []
    assert rerun.status is RunStatus.SUCCEEDED and rerun.buckets_compacted == 2
    assert_folded_once(await fold_state(container, seeded.tenant_id), seeded)


# ------------------------------------------------------------------- policy and runs


async def configure_gateway(env: dict[str, str], cwd: Path, tenant_id: str, url: str) -> None:
    """`jet-memory tenants configure`, as an operator runs it (the key from the env)."""
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "jet-memory"),
        *("tenants", "configure", tenant_id, "--gateway-url", url, "--model", "stub-model"),
        env=env | {"JET_GATEWAY_KEY": GATEWAY_KEY},
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    assert GATEWAY_KEY not in out.decode()


async def runs(container: Container, tenant_id: str) -> list[CompactionRunRecord]:
    """The tenant's compaction runs, oldest first."""
    async with container.tenants.lease(tenant_id) as db:
        page = await compaction.list_runs(db, first=100, after=None)
    return [edge.node for edge in reversed(page.edges)]
