"""The gateway embedder (app/adapters/gateway.py) behind the tenant's DLP and token
budget (app/services/search/embedders.py), against a real HTTP stub on 127.0.0.1: vectors
from an answer, each failure its gateway error, a stalled gateway timed out, DLP applied
before any byte leaves, and an exhausted budget sending nothing."""

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from app.adapters.dlp import DlpMode
from app.adapters.gateway import (
    EmbeddingsConfig,
    GatewayBadAnswer,
    GatewayEmbedder,
    GatewayRejected,
    GatewayUnavailable,
)
from app.errors import BudgetExceeded
from app.services.policies import TenantPolicy
from app.services.search.embedders import PolicyEmbedder
from app.storage.models import llm_calls_table
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement
from tests.support.gateway_stub import FakeGateway, Received, Reply

KEY = "sk-test-EMBEDKEY0123456789"
CARD = "4111 1111 1111 1111"


def vectors(request: Received) -> Reply:
    texts = request.json["input"]
    assert isinstance(texts, list)
    data = [{"index": i, "embedding": [1.0, float(i), 0.5]} for i in range(len(texts))]
    return Reply(body={"data": data, "usage": {"prompt_tokens": 11, "total_tokens": 11}})


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    gw = FakeGateway(vectors)
    await gw.start()
    try:
        yield gw
    finally:
        await gw.stop()


def embedder(gw: FakeGateway, db: TenantDb, timeout_s: float = 30, **policy: Any) -> PolicyEmbedder:
    client = GatewayEmbedder(EmbeddingsConfig(gw.base_url, KEY, "embed-small", timeout_s))

    @contextlib.asynccontextmanager
    async def lease() -> AsyncIterator[TenantDb]:
        yield db

    return PolicyEmbedder(TenantPolicy(db.tenant_id, **policy), client, lease)


async def _calls(db: TenantDb) -> list[tuple[str, int]]:
    async with read_statement(db.engine) as conn:
        rows = await conn.execute(select(llm_calls_table.c.status, llm_calls_table.c.prompt_tokens))
        return [tuple(r) for r in rows]  # type: ignore[misc]


async def test_vectors_dlp_first_and_the_budget_charged(gateway: FakeGateway, db: TenantDb) -> None:
    e = embedder(gateway, db, dlp_mode=DlpMode.REDACT)
    out = await e.embed(["pay with card " + CARD, "plain words"])
    assert out.shape == (2, 3) and np.allclose(np.linalg.norm(out, axis=1), 1)
    (request,) = gateway.received
    assert request.path == "/v1/embeddings" and request.headers["authorization"] == f"Bearer {KEY}"
    assert CARD.encode() not in request.raw and b"4111" not in request.raw
    assert request.json["model"] == "embed-small" and e.model == "gateway:embed-small"
    assert await _calls(db) == [("done", 11)]


async def test_a_blocked_text_sends_nothing_of_it(gateway: FakeGateway, db: TenantDb) -> None:
    await embedder(gateway, db, dlp_mode=DlpMode.BLOCK).embed(["card " + CARD, "fine"])
    assert gateway.received[0].json["input"] == ["", "fine"]


async def test_an_exhausted_budget_sends_nothing(gateway: FakeGateway, db: TenantDb) -> None:
    with pytest.raises(BudgetExceeded):
        await embedder(gateway, db, budget_daily_tokens=1).embed(["a long enough text " * 5])
    assert gateway.received == [] and await _calls(db) == []


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(status=503), GatewayUnavailable),
        (Reply(status=429), GatewayUnavailable),
        (Reply(status=401), GatewayRejected),
        (Reply(body={"data": [{"index": 0, "embedding": "x"}]}), GatewayBadAnswer),
        (Reply(body={"data": []}), GatewayBadAnswer),
        (Reply(body=b"not json"), GatewayBadAnswer),
        (Reply(stall=True), GatewayUnavailable),
    ],
)
async def test_failures_are_gateway_errors_charged_at_their_estimate(
    gateway: FakeGateway, db: TenantDb, reply: Reply, error: type[Exception]
) -> None:
    gateway.script.append(reply)
    with pytest.raises(error) as raised:
        await embedder(gateway, db, timeout_s=0.5).embed(["one text"])
    assert KEY not in str(raised.value) and "one text" not in str(raised.value)
    assert [status for status, _ in await _calls(db)] == ["failed"]
