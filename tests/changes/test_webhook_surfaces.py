"""Webhook endpoints through GraphQL, REST and the CLI: the secret shown once and never
readable again, errors naming the field, the delivery log and replay, and isolation
(tenant B can neither see nor touch tenant A's endpoints)."""

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from app import cli
from app.adapters import webhook_sender
from app.deps import Container
from app.services import events
from app.services.changes import delivery
from app.services.records import EventIn, Scope
from tests.conftest import TenantFixture, make_tenant
from tests.support.webhook_receiver import Receiver

CREATE = """mutation($input: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $input) {
    endpoint { id url types scope scopeRef enabled } secret errors { field code message }
  }
}"""
LIST = "{ webhookEndpoints { id url types enabled disabledReason } }"
DELIVERIES = """query($id: ID!) { webhookDeliveries(endpointId: $id, first: 10) {
  edges { node { id delivered attempts lastStatus latencyMs change { id type objectId scope } } }
} }"""


async def gql(client: httpx.AsyncClient, t: TenantFixture, query: str, **variables: Any) -> Any:
    r = await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=t.headers
    )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def allow_local(container: Container) -> None:
    container.settings.webhook_allowed_networks = "127.0.0.1/32"


async def test_graphql_create_list_update_delete(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container, allow_local: None
) -> None:
    out = await gql(
        client,
        tenant,
        CREATE,
        input={
            "url": "http://127.0.0.1:9/hook",
            "types": ["entry.created"],
            "scope": "ENTITY",
            "scopeRef": "ent_acme",
        },
    )
    created = out["data"]["createWebhookEndpoint"]
    assert created["errors"] == [] and created["secret"].startswith("whsec_")
    endpoint = created["endpoint"]
    assert endpoint["types"] == ["entry.created"] and endpoint["scope"] == "ENTITY"
    listed = await gql(client, tenant, LIST)
    assert [e["id"] for e in listed["data"]["webhookEndpoints"]] == [endpoint["id"]]
    assert created["secret"] not in str(listed)
    # No field anywhere in the schema reads a secret back.
    bad = await gql(client, tenant, "{ webhookEndpoints { secret } }")
    assert "Cannot query field 'secret'" in bad["errors"][0]["message"]
    upd = await gql(
        client,
        tenant,
        """mutation($id: ID!) {
      updateWebhookEndpoint(id: $id, input: {enabled: false}) {
        endpoint { enabled disabledReason } errors { field } } }""",
        id=endpoint["id"],
    )
    assert upd["data"]["updateWebhookEndpoint"]["endpoint"] == {
        "enabled": False,
        "disabledReason": "disabled by the tenant",
    }
    gone = await gql(
        client,
        tenant,
        """mutation($id: ID!) {
      deleteWebhookEndpoint(id: $id) { deletedId errors { field code } } }""",
        id=endpoint["id"],
    )
    assert gone["data"]["deleteWebhookEndpoint"]["deletedId"] == endpoint["id"]


async def test_graphql_errors_name_the_field(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container
) -> None:
    out = await gql(client, tenant, CREATE, input={"url": "http://10.0.0.1/hook"})
    [err] = out["data"]["createWebhookEndpoint"]["errors"]
    assert err["field"] == ["input", "url"] and "(Private-Use)" in err["message"]
    out = await gql(client, tenant, CREATE, input={"url": "https://x.example", "types": ["x"]})
    [err] = out["data"]["createWebhookEndpoint"]["errors"]
    assert err["field"] == ["input", "types"] and err["code"] == "INVALID"
    out = await gql(client, tenant, DELIVERIES, id="whk_nope")
    ext = out["errors"][0]["extensions"]
    assert (ext["code"], ext["field"], ext["classification"]) == (
        "NOT_FOUND",
        ["endpointId"],
        "BAD_USER_INPUT",
    )


async def test_rest_routes_and_the_delivery_log(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container, allow_local: None
) -> None:
    async with Receiver() as rx:
        r = await client.post(
            "/webhooks", json={"url": rx.url, "types": ["event.appended"]}, headers=tenant.headers
        )
        assert r.status_code == 201, r.text
        body = r.json()
        rx.secret = body["secret"]
        assert r.headers["location"] == f"/webhooks/{body['id']}"
        got = await client.get(f"/webhooks/{body['id']}", headers=tenant.headers)
        assert got.status_code == 200 and "secret" not in got.json()
        listed = (await client.get("/webhooks", headers=tenant.headers)).json()
        assert [e["id"] for e in listed["items"]] == [body["id"]]
        async with container.tenants.lease(tenant.id) as db:
            appended = await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
            config = delivery.DeliveryConfig.of(container.settings)
            async with webhook_sender.new_client() as http:
                await delivery.deliver_tenant(
                    db, http, config, owner="t", limit=asyncio.Semaphore(2)
                )
        log = await client.get(f"/webhooks/{body['id']}/deliveries?limit=5", headers=tenant.headers)
        assert log.status_code == 200, log.text
        [item] = log.json()["items"]
        assert item["delivered"] and item["attempts"] == 1 and item["lastStatus"] == 204
        assert item["change"]["objectId"] == appended.event.id
        replay = await client.post(
            f"/webhooks/{body['id']}/deliveries/{item['id']}/replay", headers=tenant.headers
        )
        assert replay.status_code == 200 and replay.json()["delivered"] is False
        patched = await client.patch(
            f"/webhooks/{body['id']}", json={"enabled": False}, headers=tenant.headers
        )
        assert patched.status_code == 200 and patched.json()["enabled"] is False
        bad = await client.post("/webhooks", json={"url": "ftp://x"}, headers=tenant.headers)
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["field"] == "url"
        bad = await client.get(
            f"/webhooks/{body['id']}/deliveries?limit=500", headers=tenant.headers
        )
        assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "limit"
        deleted = await client.delete(f"/webhooks/{body['id']}", headers=tenant.headers)
        assert deleted.status_code == 204
        missing = await client.get(f"/webhooks/{body['id']}", headers=tenant.headers)
        assert missing.status_code == 404 and missing.json()["errors"][0]["field"] == "id"


async def test_no_tenant_sees_or_touches_anothers_endpoints(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container, allow_local: None
) -> None:
    other = await make_tenant(container, "globex")
    r = await client.post("/webhooks", json={"url": "http://127.0.0.1:9/a"}, headers=tenant.headers)
    endpoint_id = r.json()["id"]
    assert (await client.get("/webhooks", headers=other.headers)).json() == {"items": []}
    for method, path in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("GET", "/deliveries")]:
        kw: dict[str, Any] = {"json": {"enabled": False}} if method == "PATCH" else {}
        answer = await client.request(
            method, f"/webhooks/{endpoint_id}{path}", headers=other.headers, **kw
        )
        assert answer.status_code == 404, (method, path, answer.text)
    listed = await gql(client, other, LIST)
    assert listed["data"]["webhookEndpoints"] == []
    out = await gql(
        client,
        other,
        """mutation($id: ID!) {
      deleteWebhookEndpoint(id: $id) { deletedId errors { code } } }""",
        id=endpoint_id,
    )
    assert out["data"]["deleteWebhookEndpoint"]["errors"] == [{"code": "NOT_FOUND"}]
    mine = (await client.get(f"/webhooks/{endpoint_id}", headers=tenant.headers)).json()
    assert mine["enabled"] is True


def test_cli_add_list_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JET_LOG_LEVEL", "warning")
    monkeypatch.setenv("JET_WEBHOOK_ALLOWED_NETWORKS", "127.0.0.1/32")
    assert cli.main(["migrate"]) == 0
    assert cli.main(["tenants", "create", "acme"]) == 0
    capsys.readouterr()
    assert (
        cli.main(
            [
                "webhooks",
                "add",
                "--tenant",
                "acme",
                "http://127.0.0.1:9/h",
                "--type",
                "entry.deleted",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    endpoint_id = out.split()[2].rstrip(";")
    secret = out.splitlines()[1]
    assert secret.startswith("whsec_")
    assert cli.main(["webhooks", "list", "--tenant", "acme"]) == 0
    listed = capsys.readouterr().out
    assert endpoint_id in listed and "entry.deleted" in listed and secret not in listed
    assert cli.main(["webhooks", "update", "--tenant", "acme", endpoint_id, "--disable"]) == 0
    assert "disabled" in capsys.readouterr().out
    assert cli.main(["webhooks", "deliveries", "--tenant", "acme", endpoint_id]) == 0
    assert cli.main(["webhooks", "add", "--tenant", "acme", "http://10.0.0.1/h"]) == 1
    assert "10.0.0.0/8 (Private-Use), not globally reachable" in capsys.readouterr().err
    assert cli.main(["webhooks", "remove", "--tenant", "acme", endpoint_id]) == 0
    assert cli.main(["webhooks", "list", "--tenant", "acme"]) == 0
    assert endpoint_id not in capsys.readouterr().out.split("removed")[-1]
