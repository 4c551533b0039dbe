"""The gateway client against a real HTTP/1.1 server on 127.0.0.1, scripted per test."""

import json
import socket
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from app.adapters.gateway import (
    Completion,
    Gateway,
    GatewayBadAnswer,
    GatewayConfig,
    GatewayError,
    GatewayRejected,
    GatewayUnavailable,
    estimate_messages_tokens,
)
from app.tokens import estimate_tokens
from tests.support.gateway_stub import FakeGateway, Reply, Sleeps, ok

KEY = "sk-test-SECRETKEY0123456789"
PROMPT = [
    {"role": "system", "content": "Summarise."},
    {"role": "user", "content": "Priya approved $45,000 on 2024-03-12."},
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeGateway]:
    server = FakeGateway()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def gateway(
    fake: FakeGateway,
    http: httpx.AsyncClient,
    sleeps: Sleeps,
    *,
    models: tuple[str, ...] = ("model-a", "model-b"),
    **config: Any,
) -> Gateway:
    cfg = GatewayConfig(base_url=fake.base_url, api_key=KEY, models=models, **config)
    return Gateway(cfg, client=http, sleep=sleeps, rand=lambda: 0.5)


def assert_safe(exc: GatewayError) -> None:
    assert KEY not in str(exc) and "SECRETKEY" not in str(exc)
    assert "Priya" not in str(exc) and "45,000" not in str(exc)


async def test_good_answer_sends_the_exact_request(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [ok()]
    sleeps = Sleeps()
    result = await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=300, temperature=0.2)

    assert result == Completion(
        text="Acme: Q1 2024\n\n- Renewal approved.",
        model="model-a",
        prompt_tokens=42,
        completion_tokens=7,
        finish_reason="stop",
    )
    [request] = fake.received
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {
        "model": "model-a",
        "messages": PROMPT,
        "max_tokens": 300,
        "temperature": 0.2,
    }
    assert sleeps.calls == []


async def test_base_url_without_v1_and_trailing_slash(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [ok()]
    cfg = GatewayConfig(base_url=f"http://127.0.0.1:{fake.port}/", api_key=None, models=("m",))
    await Gateway(cfg, client=http).complete(PROMPT, max_tokens=10)
    assert fake.received[0].path == "/chat/completions"
    assert "authorization" not in fake.received[0].headers


async def test_429_honours_retry_after_seconds(fake: FakeGateway, http: httpx.AsyncClient) -> None:
    fake.script = [Reply(status=429, headers={"Retry-After": "1"}), ok()]
    sleeps = Sleeps()
    result = await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert result.model == "model-a"
    assert sleeps.calls == [pytest.approx(1.0)]
    assert [r.json["model"] for r in fake.received] == ["model-a", "model-a"]


async def test_retry_after_http_date_is_capped(fake: FakeGateway, http: httpx.AsyncClient) -> None:
    in_an_hour = formatdate(time.time() + 3600, usegmt=True)
    fake.script = [Reply(status=503, headers={"Retry-After": in_an_hour}), ok()]
    sleeps = Sleeps()
    await gateway(fake, http, sleeps, backoff_max_s=5.0).complete(PROMPT, max_tokens=10)
    assert sleeps.calls == [5.0]


async def test_5xx_exhausts_a_model_then_falls_back(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [Reply(status=500), Reply(status=502), Reply(status=503), ok()]
    sleeps = Sleeps()
    gw = gateway(fake, http, sleeps, max_retries=2, backoff_base_s=0.5)
    result = await gw.complete(PROMPT, max_tokens=10)

    assert result.model == "model-b"
    assert [r.json["model"] for r in fake.received] == ["model-a"] * 3 + ["model-b"]
    # Equal jitter with rand()=0.5: 3/4 of 0.5*2**attempt; no sleep when switching model.
    assert sleeps.calls == [pytest.approx(0.375), pytest.approx(0.75)]


async def test_all_models_down_is_unavailable(fake: FakeGateway, http: httpx.AsyncClient) -> None:
    fake.script = [Reply(status=500, body=b'{"error": {"message": "' + KEY.encode() + b'"}}')] * 4
    sleeps = Sleeps()
    with pytest.raises(GatewayUnavailable) as info:
        await gateway(fake, http, sleeps, max_retries=1).complete(PROMPT, max_tokens=10)
    assert len(fake.received) == 4
    assert info.value.attempts == ("model-a: HTTP 500",) * 2 + ("model-b: HTTP 500",) * 2
    assert info.value.status == 500
    assert_safe(info.value)


async def test_stall_past_timeout_is_retried_then_unavailable(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [Reply(stall=True), Reply(stall=True)]
    sleeps = Sleeps()
    gw = gateway(fake, http, sleeps, models=("model-a",), timeout_s=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(GatewayUnavailable, match="timed out") as info:
        await gw.complete(PROMPT, max_tokens=10)
    # At least the two attempts' deadlines; far less than the stalls (a busy machine adds).
    assert 0.5 < time.monotonic() - started < 30
    assert len(fake.received) == 2 and len(sleeps.calls) == 1
    assert_safe(info.value)


async def test_a_trickled_answer_is_cut_at_the_attempt_deadline(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    # A byte every 0.2 s never trips httpx's per-read timeout (1 s); the attempt's deadline
    # does, though the whole answer would take over a minute.
    fake.script = [Reply(body=ok().body, trickle=0.2), Reply(body=ok().body, trickle=0.2)]
    sleeps = Sleeps()
    gw = gateway(fake, http, sleeps, models=("model-a",), timeout_s=1.0, max_retries=1)
    started = time.monotonic()
    with pytest.raises(GatewayUnavailable, match="timed out after 1s") as info:
        await gw.complete(PROMPT, max_tokens=10)
    # At least the two attempts' deadlines; far less than the trickled answers (over a minute).
    assert 1.9 < time.monotonic() - started < 30
    assert len(fake.received) == 2 and len(sleeps.calls) == 1
    assert_safe(info.value)


def huge(status: int = 200, *, length: bool) -> Reply:
    """An answer twice the default cap, with or without a Content-Length to go by."""
    text = "Acme: Q1\n\n" + "x" * (2 << 20)
    return Reply(status=status, body=ok(text).body, length=length)


@pytest.mark.parametrize("length", [True, False], ids=["declared", "streamed"])
async def test_an_answer_over_the_cap_is_a_bad_answer_not_retried(
    fake: FakeGateway, http: httpx.AsyncClient, length: bool
) -> None:
    fake.script = [huge(length=length), ok()]
    sleeps = Sleeps()
    with pytest.raises(GatewayBadAnswer, match=r"over 1,048,576 bytes") as info:
        await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert len(fake.received) == 1 and sleeps.calls == []  # an answer: the tokens were spent
    assert info.value.model == "model-a" and info.value.status == 200
    assert_safe(info.value)


async def test_the_cap_is_a_setting_and_an_answer_at_it_is_read(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    answer = ok("Acme: Q1\n\n- Renewal approved.")
    size = len(json.dumps(answer.body).encode())
    fake.script = [Reply(body=answer.body, length=False)]
    result = await gateway(fake, http, Sleeps(), max_answer_bytes=size).complete(
        PROMPT, max_tokens=10
    )
    assert result.text.startswith("Acme")
    fake.script = [Reply(body=answer.body, length=False)]
    with pytest.raises(GatewayBadAnswer, match=f"over {size - 1:,} bytes"):
        await gateway(fake, http, Sleeps(), max_answer_bytes=size - 1).complete(
            PROMPT, max_tokens=10
        )


async def test_an_error_page_over_the_cap_is_judged_by_its_status(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [huge(502, length=False), ok()]
    sleeps = Sleeps()
    result = await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert result.model == "model-a" and len(fake.received) == 2 and len(sleeps.calls) == 1


async def test_connection_refused_is_unavailable(http: httpx.AsyncClient) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = GatewayConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, models=("m",))
    sleeps = Sleeps()
    with pytest.raises(GatewayUnavailable, match="connection error"):
        await Gateway(cfg, client=http, sleep=sleeps).complete(PROMPT, max_tokens=10)
    assert len(sleeps.calls) == 3


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"<html>502 Bad Gateway</html>"),
        Reply(body={"choices": []}),
        Reply(body={"choices": [{"message": {}}]}),
        Reply(body=[1, 2]),
    ],
    ids=["not-json", "no-choices", "no-content", "wrong-shape"],
)
async def test_garbage_is_a_bad_answer(
    fake: FakeGateway, http: httpx.AsyncClient, reply: Reply
) -> None:
    fake.script = [reply]
    sleeps = Sleeps()
    with pytest.raises(GatewayBadAnswer) as info:
        await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert len(fake.received) == 1 and sleeps.calls == []
    assert_safe(info.value)


GARBLED = {"content-encoding": "gzip"}  # and a body that is not gzip at all


async def test_an_undecodable_200_is_a_bad_answer_not_retried(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [Reply(body=b"\x00not gzip " + KEY.encode(), headers=GARBLED), ok()]
    sleeps = Sleeps()
    with pytest.raises(GatewayBadAnswer, match="could not be decoded") as info:
        await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert len(fake.received) == 1 and sleeps.calls == []  # an answer: the tokens were spent
    assert info.value.model == "model-a"
    assert_safe(info.value)


async def test_an_undecodable_error_status_is_judged_by_its_status(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    fake.script = [Reply(status=503, body=b"garbage", headers=GARBLED), ok()]
    sleeps = Sleeps()
    result = await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert result.model == "model-a" and len(fake.received) == 2 and len(sleeps.calls) == 1

    fake.script = [Reply(status=401, body=b"garbage", headers=GARBLED), ok()]
    with pytest.raises(GatewayRejected) as info:
        await gateway(fake, http, Sleeps()).complete(PROMPT, max_tokens=10)
    assert str(info.value) == "model 'model-a' was rejected: HTTP 401"
    assert_safe(info.value)


async def test_a_connection_dropped_mid_body_is_retried(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    # Content-Length promises more than arrives: the read fails after the status line.
    fake.script = [Reply(body=b"{}", headers={"content-length": "500"}), ok()]
    sleeps = Sleeps()
    result = await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert result.text.startswith("Acme") and len(fake.received) == 2 and len(sleeps.calls) == 1


@pytest.mark.parametrize("content", ["", "  \n "])
async def test_empty_content_is_a_bad_answer(
    fake: FakeGateway, http: httpx.AsyncClient, content: str
) -> None:
    fake.script = [ok(content)]
    with pytest.raises(GatewayBadAnswer, match="empty content"):
        await gateway(fake, http, Sleeps()).complete(PROMPT, max_tokens=10)


async def test_401_is_rejected_without_retry_or_fallback(
    fake: FakeGateway, http: httpx.AsyncClient
) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
    fake.script = [Reply(status=401, body=body), ok()]
    sleeps = Sleeps()
    with pytest.raises(GatewayRejected) as info:
        await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert len(fake.received) == 1 and sleeps.calls == []
    assert info.value.status == 401 and "invalid_api_key" in str(info.value)
    assert_safe(info.value)


async def test_404_moves_to_the_next_model(fake: FakeGateway, http: httpx.AsyncClient) -> None:
    fake.script = [Reply(status=404), ok()]
    sleeps = Sleeps()
    result = await gateway(fake, http, sleeps).complete(PROMPT, max_tokens=10)
    assert result.model == "model-b"
    assert [r.json["model"] for r in fake.received] == ["model-a", "model-b"]
    assert sleeps.calls == []


async def test_404_on_every_model_is_rejected(fake: FakeGateway, http: httpx.AsyncClient) -> None:
    fake.script = [Reply(status=404), Reply(status=404)]
    with pytest.raises(GatewayRejected) as info:
        await gateway(fake, http, Sleeps()).complete(PROMPT, max_tokens=10)
    assert info.value.status == 404


async def test_missing_usage_is_estimated(fake: FakeGateway, http: httpx.AsyncClient) -> None:
    fake.script = [ok("Title\n\nBody text.", usage=None)]
    result = await gateway(fake, http, Sleeps()).complete(PROMPT, max_tokens=10)
    assert result.prompt_tokens == estimate_messages_tokens(PROMPT)
    assert result.completion_tokens == estimate_tokens("Title\n\nBody text.")


async def test_owned_client_is_closed(fake: FakeGateway) -> None:
    fake.script = [ok()]
    cfg = GatewayConfig(base_url=fake.base_url, api_key=KEY, models=("m",))
    async with Gateway(cfg) as gw:
        assert (await gw.complete(PROMPT, max_tokens=10)).text.startswith("Acme")
    assert gw._client.is_closed


def test_repr_never_shows_the_key() -> None:
    cfg = GatewayConfig(base_url="https://gw.example/v1", api_key=KEY, models=("m",))
    assert KEY not in repr(cfg) and KEY not in str(cfg)
    assert "gw.example" in repr(cfg)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "gw.example/v1"},
        {"models": ()},
        {"models": ("",)},
        {"timeout_s": 0},
        {"max_retries": -1},
        {"max_answer_bytes": 0},
    ],
)
def test_config_is_validated(kwargs: dict[str, object]) -> None:
    base: dict[str, object] = {"base_url": "https://gw.example", "api_key": KEY, "models": ("m",)}
    with pytest.raises(ValueError) as info:
        GatewayConfig(**(base | kwargs))  # type: ignore[arg-type]
    assert KEY not in str(info.value)


def test_estimate_tokens_counts_utf8_bytes() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("éé") == 1  # 4 bytes
    assert estimate_tokens("日本語") == 3  # 9 bytes
