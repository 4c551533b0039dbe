"""Operations of the worker: its own Prometheus endpoint, compaction run metrics (status,
buckets, tokens, budget and DLP stops), and /readyz against a real Redis."""

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from arq.connections import ArqRedis
from prometheus_client import REGISTRY

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from app.services.compaction import CompactionRunRecord, RunStatus, RunTrigger, jobs
from app.worker import shutdown, startup
from tests.support.servers import free_port


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def a_run(**changes: Any) -> CompactionRunRecord:
    now = datetime.now(UTC)
    values: dict[str, Any] = dict(
        id="run_x",
        status=RunStatus.PARTIAL,
        trigger=RunTrigger.CRON,
        dry_run=False,
        started_at=now,
        finished_at=now,
        cutoff=now,
        buckets_considered=5,
        buckets_compacted=2,
        buckets_skipped=3,
        periods=2,
        events_compressed=9,
        prompt_tokens=1000,
        completion_tokens=150,
        budget_exceeded=True,
        problems=[
            "entity ent_a: blocked by DLP: 1 email",
            "entity ent_b: gateway timeout",
            "entity ent_c: blocked by DLP: 2 phone",
        ],
        entries_created=["mem_1", "mem_2"],
        summariser="m1",
    )
    values.update(changes)
    return CompactionRunRecord(**values)


def test_a_run_counts_status_buckets_tokens_and_stops() -> None:
    names = [
        ("jet_compaction_runs_total", {"status": "partial", "trigger": "cron"}),
        ("jet_compaction_buckets_total", {"outcome": "compacted"}),
        ("jet_compaction_buckets_total", {"outcome": "skipped"}),
        ("jet_compaction_tokens_total", {"kind": "prompt"}),
        ("jet_compaction_tokens_total", {"kind": "completion"}),
        ("jet_compaction_budget_stops_total", {}),
        ("jet_compaction_dlp_stops_total", {}),
    ]
    before = [sample(n, **labels) for n, labels in names]
    jobs.record_run(a_run())
    after = [sample(n, **labels) for n, labels in names]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 2, 3, 1000, 150, 1, 2]
    # A dry run spends and folds nothing: only counted as a run.
    jobs.record_run(a_run(dry_run=True))
    assert [sample(n, **labels) for n, labels in names][1:] == after[1:]


async def test_the_worker_serves_its_metrics_on_its_port(settings: Settings) -> None:
    port = free_port()
    ctx: dict[str, Any] = {
        "settings": settings.model_copy(update={"worker_metrics_port": port}),
        "redis": _FakeRedis(),
    }
    await startup(ctx)
    try:
        async with httpx.AsyncClient() as client:
            r = await client.get(f"http://127.0.0.1:{port}/metrics")
        assert r.status_code == 200 and "jet_compaction_runs_total" in r.text
    finally:
        await shutdown(ctx)
    # Stopped with the worker: nothing answers there any more.
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/metrics")


async def test_no_metrics_port_no_server(settings: Settings) -> None:
    ctx: dict[str, Any] = {"settings": settings, "redis": _FakeRedis()}
    await startup(ctx)
    try:
        assert "metrics_server" not in ctx
    finally:
        await shutdown(ctx)


async def test_readyz_checks_a_real_redis(
    settings: Settings, redis_url: str, pool: ArqRedis
) -> None:
    container = await build(settings.model_copy(update={"redis_url": redis_url}))
    transport = httpx.ASGITransport(app=create_app(container=container))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            r = await c.get("/readyz")
    finally:
        await container.aclose()
    assert r.status_code == 200
    assert r.json() == {"status": "ready", "checks": {"control_db": "ok", "redis": "ok"}}


class _FakeRedis:
    """What startup reads of arq's pool: only where it is, for the log line."""

    class connection_pool:
        connection_kwargs = {"host": "127.0.0.1", "port": 6379, "db": 0}
