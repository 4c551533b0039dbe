"""The worker embeds the entries of the tenants whose embedder is their own gateway, through
its DLP and token budget (a real `arq` worker process and a stub gateway on 127.0.0.1),
while the local-model tenants are left to the API processes; the API then searches a
gateway tenant with the question embedded by the same gateway, and by words when it fails."""

import asyncio
import subprocess
import sys
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.config import Settings
from app.deps import Container
from app.services import entries
from app.services import tenants as tenant_service
from app.services.records import EntryFilter, EntryIn, Scope
from app.services.search import indexer
from app.storage.models import entry_vectors_table, llm_calls_table
from app.storage.transactions import read_statement
from tests.support.gateway_stub import FakeGateway, Received, Reply
from tests.worker.test_worker import GATEWAY_KEY, worker_env

CARD = "4111 1111 1111 1111"
DIM = 64
MODEL = "gateway:embed-small"


def bag_of_words(request: Received) -> Reply:
    """Each text a hashed bag of its words: texts sharing words are near."""
    texts = request.json["input"]
    assert isinstance(texts, list)
    data = []
    for i, text in enumerate(texts):
        vector = [0.0] * DIM
        for word in str(text).lower().split():
            vector[zlib.crc32(word.strip(".,?-").encode()) % DIM] += 1.0
        data.append({"index": i, "embedding": vector})
    return Reply(body={"data": data, "usage": {"prompt_tokens": 5 * len(texts)}})


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    gw = FakeGateway(bag_of_words)
    await gw.start()
    try:
        yield gw
    finally:
        await gw.stop()


async def jet(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "jet-memory"),
        *args,
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    return out.decode()


async def embedded(container: Container, tenant_id: str, model: str) -> int:
    async with container.tenants.lease(tenant_id) as db:
        return (await indexer.counts(db, model))[0]


@pytest.mark.slow
async def test_the_worker_embeds_gateway_tenants_through_dlp_and_budget(
    settings: Settings,
    container: Container,
    redis_url: str,
    gateway: FakeGateway,
    tmp_path: Path,
) -> None:
    c = container
    remote, _ = await tenant_service.create_tenant(c.control, c.tenants, "remote")
    local, _ = await tenant_service.create_tenant(c.control, c.tenants, "local")
    env = worker_env(settings, redis_url) | {"JET_EMBED_INTERVAL_SECONDS": "0.2"}
    shown = await jet(
        env | {"JET_GATEWAY_KEY": GATEWAY_KEY},
        tmp_path,
        "tenants",
        "configure",
        remote.id,
        "--gateway-url",
        gateway.base_url,
        "--model",
        "stub-model",
        "--embedder",
        "gateway",
        "--embeddings-model",
        "embed-small",
        "--budget-daily-tokens",
        "1000",
    )
    assert "embedder: gateway, model embed-small" in shown and GATEWAY_KEY not in shown
    notes = [
        EntryIn(Scope.ENTITY, "acme", "Refund request", f"- card {CARD} to be refunded"),
        EntryIn(Scope.ENTITY, "acme", "Banner sizes", "- new banner sizes for the launch"),
        EntryIn(Scope.ENTITY, "acme", "Weekly report", "- pacing on track"),
    ]
    for tenant_id in (remote.id, local.id):
        async with c.tenants.lease(tenant_id) as db:
            for e in notes:
                await entries.create_entry(db, e)

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
        deadline = asyncio.get_running_loop().time() + 60
        while await embedded(c, remote.id, MODEL) < len(notes):
            assert proc.returncode is None, log.read_text()
            assert asyncio.get_running_loop().time() < deadline, log.read_text()
            await asyncio.sleep(0.1)  # bounded polling, not a timing assumption
        # Another pass of the worker's indexer: the local-model tenant stays the API's.
        before = len(gateway.received)
        await asyncio.sleep(1.0)
        assert proc.returncode is None, log.read_text()
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
    status = await jet(env, tmp_path, "search", remote.id)
    assert f"fused with meaning; 3/3 entries embedded by {MODEL} (embedded by the worker" in status
    async with c.tenants.lease(local.id) as db, read_statement(db.engine) as conn:
        vectors = await conn.execute(select(func.count()).select_from(entry_vectors_table))
        assert vectors.scalar() == 0  # by no model: the local-model tenant is the API's
    assert len(gateway.received) == before  # nothing more to embed: no call
    # What left: every text after DLP (the card redacted), with the tenant's key and model.
    sent = [str(t) for r in gateway.received for t in r.json["input"]]  # type: ignore[attr-defined]
    assert len(sent) == len(notes) and not any(CARD in t for t in sent)
    assert all(CARD.encode() not in r.raw for r in gateway.received)
    assert {r.headers.get("authorization") for r in gateway.received} == {f"Bearer {GATEWAY_KEY}"}
    assert {r.json["model"] for r in gateway.received} == {"embed-small"}
    async with c.tenants.lease(remote.id) as db, read_statement(db.engine) as conn:
        calls = list(await conn.execute(select(llm_calls_table.c.status, llm_calls_table.c.model)))
    assert calls and all(call == ("done", MODEL) for call in calls)  # charged to its budget

    # The API searches the gateway tenant by meaning: the question through the same gateway.
    async with c.tenants.lease(remote.id) as db:
        page = await entries.list_entries(
            db, EntryFilter(search="launch banner"), first=3, after=None
        )
        assert page.edges[0].node.title == "Banner sizes"
        assert page.edges[0].similarity is not None  # ranked by meaning too
        asked = gateway.received[-1].json["input"]
        assert asked == ["launch banner"]
        # The gateway down: the search is by words, no error.
        gateway.script.append(Reply(status=503))
        page = await entries.list_entries(
            db, EntryFilter(search="weekly pacing"), first=3, after=None
        )
        assert [e.node.title for e in page.edges] == ["Weekly report"]
        assert page.edges[0].similarity is None
