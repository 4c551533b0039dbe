"""Webhook endpoints and deliveries through the services, against a real receiver on
127.0.0.1 that verifies every signature: filters, order per scope, retries with backoff,
disabling after the retry window, the delivery log, replay, leases and tenant isolation.
On both backends."""

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from app import worker
from app.adapters import webhook_sender
from app.config import Settings
from app.deps import Container
from app.errors import InvalidInput, NotFound, TooLarge
from app.services import entries, events
from app.services.changes import delivery, webhooks
from app.services.changes.webhooks import CreatedEndpoint, EndpointIn, EndpointPatch
from app.services.records import EntryIn, EventIn, Scope
from app.storage.tenants import TenantDb
from tests.conftest import TenantFixture, make_tenant, sample
from tests.support.webhook_receiver import Receiver

LOCAL = {
    "webhook_allowed_networks": "127.0.0.1/32",
    "webhook_retry_base_seconds": 0.01,
    "webhook_retry_max_seconds": 0.05,
}


@pytest.fixture
def local(settings: Settings) -> Settings:
    return settings.model_copy(update=LOCAL)


@pytest.fixture
async def http() -> AsyncIterator[webhook_sender.Client]:
    async with webhook_sender.new_client() as client:
        yield client


async def drain(
    db: TenantDb,
    http: webhook_sender.Client,
    settings: Settings,
    *,
    passes: int = 50,
    owner: str = "test-worker",
    until: int | None = None,
    receiver: Receiver | None = None,
) -> delivery.PassResult:
    """Passes until one queues and sends nothing (or `receiver` has `until` deliveries)."""
    config = delivery.DeliveryConfig.of(settings)
    total = delivery.PassResult()
    for _ in range(passes):
        r = await delivery.deliver_tenant(db, http, config, owner=owner, limit=asyncio.Semaphore(8))
        total.queued += r.queued
        total.delivered += r.delivered
        total.failed += r.failed
        total.disabled += r.disabled
        if receiver is not None and until is not None:
            if len(receiver.delivered()) >= until:
                return total
        elif r.queued == 0 and r.delivered == 0 and r.failed == 0:
            return total
        await asyncio.sleep(0.02)
    return total


Register = Callable[[TenantDb, EndpointIn, Settings], Awaitable[CreatedEndpoint]]


@pytest.fixture
def register(container: Container) -> Register:
    """webhooks.create_endpoint, marking the tenant in the test's control database."""

    async def create(db: TenantDb, new: EndpointIn, settings: Settings) -> CreatedEndpoint:
        return await webhooks.create_endpoint(db, new, settings, control=container.control)

    return create


async def test_changes_arrive_signed_in_order_per_scope_after_failures(
    db: TenantDb, local: Settings, http: webhook_sender.Client, register: Register
) -> None:
    async with Receiver(fail_first=3) as rx:
        created = await register(db, EndpointIn(rx.url), local)
        rx.secret = created.secret
        assert created.secret.startswith("whsec_")
        appended = []
        for i in range(12):
            ev = EventIn(Scope.ENTITY, f"ent_{i % 3}", "note", f"secret text {i}")
            appended.append(await events.append_event(db, ev))
        await drain(db, http, local, until=12, receiver=rx)
        assert rx.unverified == 0
        got = rx.delivered()
        assert sorted(r.body["objectId"] for r in got) == sorted(a.event.id for a in appended)
        for ref in ("ent_0", "ent_1", "ent_2"):
            in_scope = [r.body["objectId"] for r in got if r.body["scopeRef"] == ref]
            expected = [a.event.id for a in appended if a.event.scope_ref == ref]
            assert in_scope == expected
        assert all(
            set(r.body) == {"id", "type", "time", "scope", "scopeRef", "objectId", "version"}
            for r in got
        )
        assert not any("secret text" in str(r.body) for r in rx.received)
        # The log: each delivered once, the failed ones after retries, with latency.
        page = await webhooks.list_deliveries(db, created.endpoint.id, first=100, after=None)
        log = [e.node for e in page.edges]
        assert len(log) == 12 and all(d.delivered for d in log)
        assert sum(d.attempts for d in log) == 15
        assert all(d.last_status == 204 and d.latency_ms is not None for d in log)


async def test_one_scope_is_delivered_over_one_kept_connection(
    db: TenantDb, local: Settings, http: webhook_sender.Client, register: Register
) -> None:
    """The answer (short, with a body) is read to its end, so the next delivery reuses the
    connection instead of opening one per POST."""
    async with Receiver(status_after=200) as rx:
        rx.answer = b'{"ok": true}'
        created = await register(db, EndpointIn(rx.url), local)
        rx.secret = created.secret
        for i in range(8):
            await events.append_event(db, EventIn(Scope.ENTITY, "ent_1", "note", f"n {i}"))
        await drain(db, http, local, until=8, receiver=rx)
        assert len(rx.delivered()) == 8 and rx.unverified == 0
        assert len(rx.connections) == 1


async def test_filters_by_type_and_scope(
    db: TenantDb, local: Settings, http: webhook_sender.Client, register: Register
) -> None:
    async with Receiver() as rx:
        created = await register(
            db,
            EndpointIn(rx.url, types=["entry.created"], scope=Scope.TEAM, scope_ref="t1"),
            local,
        )
        rx.secret = created.secret
        await events.append_event(db, EventIn(Scope.TEAM, "t1", "note", "b"))
        await entries.create_entry(db, EntryIn(Scope.TEAM, "t2", "other team", "s"))
        wanted = await entries.create_entry(db, EntryIn(Scope.TEAM, "t1", "this team", "s"))
        await drain(db, http, local)
        assert [(r.body["type"], r.body["objectId"]) for r in rx.delivered()] == [
            ("entry.created", wanted.id)
        ]


async def test_an_endpoint_hears_only_changes_made_after_it_was_registered(
    db: TenantDb, local: Settings, http: webhook_sender.Client, register: Register
) -> None:
    await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "before"))
    async with Receiver() as rx:
        rx.secret = (await register(db, EndpointIn(rx.url), local)).secret
        after = await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "after"))
        await drain(db, http, local)
        assert [r.body["objectId"] for r in rx.delivered()] == [after.event.id]


async def test_failing_past_the_window_disables_the_endpoint_and_says_so(
    db: TenantDb,
    local: Settings,
    http: webhook_sender.Client,
    caplog: pytest.LogCaptureFixture,
    register: Register,
) -> None:
    short = local.model_copy(update={"webhook_retry_window_seconds": 0.2})
    async with Receiver(status_after=503) as rx:
        created = await register(db, EndpointIn(rx.url), short)
        rx.secret = created.secret
        await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
        disabled_before = sample("jet_webhook_endpoints_disabled_total")
        with caplog.at_level(logging.WARNING, "app.services.changes.delivery"):
            for _ in range(100):
                result = await drain(db, http, short, passes=1)
                if result.disabled:
                    break
                await asyncio.sleep(0.02)
        endpoint = await webhooks.get_endpoint(db, created.endpoint.id)
        assert not endpoint.enabled
        assert endpoint.disabled_reason is not None and "HTTP 503" in endpoint.disabled_reason
        assert sample("jet_webhook_endpoints_disabled_total") == disabled_before + 1
        assert f"webhook endpoint {created.endpoint.id}" in caplog.text
        assert created.secret not in caplog.text
        attempts = len(rx.received)
        # Disabled: nothing more is sent, the delivery waits...
        await drain(db, http, short, passes=3)
        assert len(rx.received) == attempts
        # ...and goes out once the tenant enables the endpoint again.
        rx.status_after = 200
        await webhooks.update_endpoint(db, created.endpoint.id, EndpointPatch(enabled=True), short)
        await drain(db, http, short)
        assert len(rx.delivered()) == 1


async def test_backoff_doubles_up_to_its_cap() -> None:
    assert [delivery.backoff(n, 5, 3600) for n in (1, 2, 3, 4)] == [5, 10, 20, 40]
    assert delivery.backoff(30, 5, 3600) == 3600
    assert delivery.backoff(10_000, 5, 3600) == 3600


async def test_replay_sends_the_same_message_again(
    db: TenantDb, local: Settings, http: webhook_sender.Client, register: Register
) -> None:
    async with Receiver() as rx:
        created = await register(db, EndpointIn(rx.url), local)
        rx.secret = created.secret
        await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
        await drain(db, http, local)
        [first] = rx.received
        page = await webhooks.list_deliveries(db, created.endpoint.id, first=10, after=None)
        [delivery] = [e.node for e in page.edges]
        replayed = await webhooks.replay_delivery(db, created.endpoint.id, delivery.id)
        assert not replayed.delivered and replayed.next_attempt_at is not None
        await drain(db, http, local)
        assert [r.message_id for r in rx.received] == [first.message_id] * 2
        with pytest.raises(NotFound):
            await webhooks.replay_delivery(db, created.endpoint.id, "msg_nope")


async def test_a_name_that_moves_inside_after_registration_is_never_posted_to(
    db: TenantDb,
    settings: Settings,
    http: webhook_sender.Client,
    register: Register,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Registered while its name pointed at a public address; at delivery the name answers
    that address to the check and the receiver's 127.0.0.1 to the connection's lookup (DNS
    rebinding, a zero TTL): the delivery fails naming the address, the receiver hears nothing."""
    loop = asyncio.get_running_loop()
    real = loop.getaddrinfo
    answers = ["93.184.215.14", "93.184.215.14", "127.0.0.1"]

    async def rebinding(host: str, port: Any, **kwargs: Any) -> Any:
        if host != "hooks.rebind.test":
            return await real(host, port, **kwargs)
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, port or 0))]

    monkeypatch.setattr(loop, "getaddrinfo", rebinding)
    monkeypatch.setattr(webhook_sender, "_resolved", {})
    monkeypatch.setattr(webhook_sender, "RESOLVED_SECONDS", 0.0)
    async with Receiver() as rx:
        port = rx.url.split(":")[2].split("/")[0]
        created = await register(db, EndpointIn(f"http://hooks.rebind.test:{port}/hook"), settings)
        rx.secret = created.secret
        await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
        result = await drain(db, http, settings, passes=1)
        assert (result.delivered, result.failed) == (0, 1) and rx.received == []
    page = await webhooks.list_deliveries(db, created.endpoint.id, first=10, after=None)
    [delivery] = [e.node for e in page.edges]
    assert not delivery.delivered and delivery.last_status is None
    assert "'hooks.rebind.test' resolves to 127.0.0.1, which is in" in (delivery.last_error or "")


async def test_another_worker_waits_for_the_lease(
    db: TenantDb, local: Settings, http: webhook_sender.Client, register: Register
) -> None:
    short = local.model_copy(update={"webhook_lease_seconds": 1.0})
    async with Receiver() as rx:
        rx.secret = (await register(db, EndpointIn(rx.url), short)).secret
        await drain(db, http, short, owner="worker-a", passes=1)
        await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
        result = await drain(db, http, short, owner="worker-b", passes=1)
        assert result.queued == 0 and rx.received == []
        await drain(db, http, short, owner="worker-a")
        assert len(rx.delivered()) == 1
        # A lease that ran out (its worker was killed) is taken over.
        await asyncio.sleep(1.1)
        await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
        await drain(db, http, short, owner="worker-b")
        assert len(rx.delivered()) == 2


async def test_tenants_never_hear_each_other(
    container: Container,
    db: TenantDb,
    local: Settings,
    http: webhook_sender.Client,
    register: Register,
) -> None:
    other = await make_tenant(container, "globex")
    async with Receiver() as rx_a, Receiver() as rx_b, container.tenants.lease(other.id) as odb:
        rx_a.secret = (await register(db, EndpointIn(rx_a.url), local)).secret
        rx_b.secret = (await register(odb, EndpointIn(rx_b.url), local)).secret
        mine = await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "a"))
        theirs = await events.append_event(odb, EventIn(Scope.ENTITY, "e", "n", "b"))
        await drain(db, http, local)
        await drain(odb, http, local)
        assert [r.body["objectId"] for r in rx_a.delivered()] == [mine.event.id]
        assert [r.body["objectId"] for r in rx_b.delivered()] == [theirs.event.id]
        endpoint_a = (await webhooks.list_endpoints(db))[0]
        assert [e.id for e in await webhooks.list_endpoints(odb)] != [endpoint_a.id]
        with pytest.raises(NotFound):
            await webhooks.get_endpoint(odb, endpoint_a.id)
        with pytest.raises(NotFound):
            await webhooks.delete_endpoint(odb, endpoint_a.id)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "http:// or https://"),
        ("http://user:pw@example.com/x", "user or password"),
        ("http://127.0.0.1:1/x", "127.0.0.0/8 (Loopback), not globally reachable"),
        ("http://169.254.169.254/latest", "169.254.0.0/16 (Link Local)"),
        ("http://10.1.2.3/x", "10.0.0.0/8 (Private-Use)"),
        ("http://[::1]/x", "::1/128 (Loopback Address)"),
        ("http://localhost/x", "'localhost' resolves to"),
        ("http://example.com/" + "a" * 2100, "longer than 2048"),
        ("http://exa mple.com/", "spaces or control"),
    ],
)
async def test_urls_into_the_operators_network_are_refused(
    db: TenantDb, settings: Settings, url: str, message: str, register: Register
) -> None:
    with pytest.raises((InvalidInput, TooLarge)) as info:
        await register(db, EndpointIn(url), settings)
    assert info.value.field == ["url"] and message in info.value.message


async def test_bad_input_and_limits(db: TenantDb, local: Settings, register: Register) -> None:
    with pytest.raises(InvalidInput) as info:
        await register(db, EndpointIn("http://127.0.0.1/x", ["event.deleted"]), local)
    assert info.value.field == ["types"] and "event.deleted" in info.value.message
    with pytest.raises(InvalidInput) as info:
        await register(db, EndpointIn("http://127.0.0.1/x", scope=Scope.ENTITY), local)
    assert info.value.field == ["scopeRef"]
    capped = local.model_copy(update={"webhook_endpoints_per_tenant": 2})
    for _ in range(2):
        await register(db, EndpointIn("http://127.0.0.1/x"), capped)
    with pytest.raises(InvalidInput) as info:
        await register(db, EndpointIn("http://127.0.0.1/x"), capped)
    assert "at most 2 webhook endpoints" in info.value.message
    listed = await webhooks.list_endpoints(db)
    assert len(listed) == 2 and not any(hasattr(e, "secret") for e in listed)
    await webhooks.delete_endpoint(db, listed[0].id)
    assert len(await webhooks.list_endpoints(db)) == 1
    with pytest.raises(InvalidInput):
        await webhooks.list_deliveries(db, listed[1].id, first=101, after=None)


class _ForgetsMarks:
    """A control database that keeps no mark: an endpoint registered before marks existed."""

    async def mark_webhooks(self, tenant_id: str) -> None:
        return None


async def _until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("not within the time allowed")


async def _marked(container: Container, tenant_ids: list[str]) -> None:
    for _ in range(500):
        if await container.control.webhook_tenant_ids() == tenant_ids:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the marked tenants are not {tenant_ids}")


async def test_the_delivery_loop_visits_only_the_tenants_with_webhooks(
    container: Container,
    tenant: TenantFixture,
    db: TenantDb,
    local: Settings,
    register: Register,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quiet = await make_tenant(container, "quiet")  # no endpoint: never visited
    old = await make_tenant(container, "old")
    async with container.tenants.lease(old.id) as odb:
        new = EndpointIn("http://127.0.0.1:9/x")
        await webhooks.create_endpoint(odb, new, local, control=_ForgetsMarks())  # type: ignore[arg-type]
    assert await container.control.webhook_tenant_ids() == []
    await register(db, EndpointIn("http://127.0.0.1:9/x"), local)
    assert await container.control.webhook_tenant_ids() == [tenant.id]

    leased: list[str] = []
    lease = container.tenants.lease

    def spy(tenant_id: str) -> Any:
        leased.append(tenant_id)
        return lease(tenant_id)

    monkeypatch.setattr(container.tenants, "lease", spy)
    monkeypatch.setattr(worker, "TENANTS_REFRESH_SECONDS", 0.05)
    async with webhook_sender.new_client() as http:
        ctx = {"container": container, "webhook_http": http}
        delivering = asyncio.create_task(worker.deliver_webhooks(ctx))
        try:
            await _until(lambda: leased.count(tenant.id) >= 3)
            assert set(leased) == {tenant.id}
            # The hourly upkeep (run at start) prunes every tenant and marks the old one.
            upkeep = asyncio.create_task(worker.keep_changes(ctx))
            try:
                await _until(lambda: {quiet.id, old.id} <= set(leased))
                await _marked(container, [tenant.id, old.id])
            finally:
                upkeep.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await upkeep
            leased.clear()
            await _until(lambda: leased.count(old.id) >= 2)
            assert set(leased) == {tenant.id, old.id}
        finally:
            delivering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivering
