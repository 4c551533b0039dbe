"""Webhook URLs into addresses that are not globally reachable are refused at registration
through the API (GraphQL's createWebhookEndpoint and REST's POST /webhooks: an error naming
the field url, nothing stored), for every row of the IANA special-purpose registries and
what an IPv6 address carries; public addresses and the operator's networks are registered.
The delivery-time check of the same table: tests/adapters/test_webhook_sender.py."""

import ipaddress

import httpx
import pytest

from app.deps import Container
from tests.conftest import TenantFixture
from tests.support.special_addresses import all_samples, url

CREATE = """mutation($input: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $input) { endpoint { id url } errors { field code message } }
}"""

# The issue's examples, each registered before with 201.
ISSUE = [
    "http://100.100.100.200/latest/meta-data/",
    "http://100.64.0.1/",
    "http://192.0.0.8/",
    "http://[2002:7f00:1::]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[fec0::1]/",
]


@pytest.fixture
def roomy(container: Container) -> None:
    """Room for every allowed sample's endpoint."""
    container.settings.webhook_endpoints_per_tenant = 1000


async def _graphql(client: httpx.AsyncClient, tenant: TenantFixture, url: str) -> dict:
    body = {"query": CREATE, "variables": {"input": {"url": url}}}
    r = await client.post("/graphql", json=body, headers=tenant.headers)
    assert r.status_code == 200, r.text
    return r.json()["data"]["createWebhookEndpoint"]


async def test_every_special_purpose_address_is_refused_or_registered_as_iana_says(
    client: httpx.AsyncClient, tenant: TenantFixture, roomy: None
) -> None:
    wrong = []
    registered = 0
    for sample in all_samples():
        shown = str(ipaddress.ip_address(sample.address))
        out = await _graphql(client, tenant, url(sample.address))
        rest = await client.post(
            "/webhooks", json={"url": url(sample.address)}, headers=tenant.headers
        )
        if sample.allowed:
            registered += 2
            if out["errors"] or out["endpoint"] is None or rest.status_code != 201:
                wrong.append((sample, out, rest.text))
            continue
        [err] = out["errors"] or [{}]
        [problem] = rest.json().get("errors") or [{}]
        named = f"address {shown} "
        seen = (
            (out["endpoint"], err.get("field"), err.get("code"), named in err.get("message", "")),
            (rest.status_code, problem.get("field"), named in problem.get("message", "")),
        )
        if seen != ((None, ["input", "url"], "INVALID", True), (422, "url", True)):
            wrong.append((sample, out, rest.text))
    assert wrong == []
    listed = (await client.get("/webhooks", headers=tenant.headers)).json()["items"]
    assert len(listed) == registered  # nothing refused was stored


@pytest.mark.parametrize("hook", ISSUE)
async def test_the_addresses_reported_are_refused(
    client: httpx.AsyncClient, tenant: TenantFixture, hook: str
) -> None:
    r = await client.post("/webhooks", json={"url": hook}, headers=tenant.headers)
    assert r.status_code == 422, r.text
    [problem] = r.json()["errors"]
    assert problem["field"] == "url" and "not globally reachable" in problem["message"]
    out = await _graphql(client, tenant, hook)
    assert out["endpoint"] is None and out["errors"][0]["field"] == ["input", "url"]
    assert (await client.get("/webhooks", headers=tenant.headers)).json()["items"] == []


@pytest.mark.parametrize(
    "hook", ["http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://0x08.0x08.0x08.0x08/"]
)
async def test_a_number_for_an_address_is_refused(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container, hook: str
) -> None:
    container.settings.webhook_allowed_networks = "127.0.0.1/32"  # still no number form
    r = await client.post("/webhooks", json={"url": hook}, headers=tenant.headers)
    assert r.status_code == 422, r.text
    [problem] = r.json()["errors"]
    assert problem["field"] == "url" and "ends in a number" in problem["message"]


async def test_the_operators_networks_are_registered(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container
) -> None:
    container.settings.webhook_allowed_networks = "100.64.0.0/10, 192.0.0.8/32"
    for hook in ISSUE[:3]:
        r = await client.post("/webhooks", json={"url": hook}, headers=tenant.headers)
        assert r.status_code == 201, r.text
    r = await client.post("/webhooks", json={"url": ISSUE[3]}, headers=tenant.headers)
    assert r.status_code == 422 and "carries 127.0.0.1" in r.json()["errors"][0]["message"]
