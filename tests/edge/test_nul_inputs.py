"""A NUL character in an id or a filter value over REST: not found or an empty list (and a
too-long filter list a TOO_LARGE problem naming its limit), never a 5xx, the same on both
backends."""

import httpx

from app.services import limits
from tests.conftest import TenantFixture


async def test_nul_in_ids_and_filters_is_not_found_or_empty(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    h = tenant.headers
    created = await client.post(
        "/memory",
        json={"scope": "ENTITY", "scopeRef": "ent_acme", "title": "ROAS", "summary": "4.0"},
        headers=h,
    )
    assert created.status_code == 201, created.text
    for method in ("GET", "PUT", "DELETE"):
        body = {"title": "x"} if method == "PUT" else None
        r = await client.request(method, "/memory/ent_%00x", json=body, headers=h)
        assert r.status_code == 404, (method, r.text)
    for path, params in (
        ("/memory", {"tag": "a\x00b"}),
        ("/memory", {"scopeRef": "a\x00b"}),
        ("/memory", {"tag": "a\x00b", "search": "roas"}),
        ("/memory/events", {"kind": "a\x00b"}),
        ("/memory/events", {"scopeRef": "a\x00b"}),
    ):
        r = await client.get(path, params=params, headers=h)
        assert r.status_code == 200, (path, params, r.text)
        assert r.json()["items"] == [], (path, params)


async def test_a_filter_list_over_its_cap_is_too_large(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    n = limits.FILTER_VALUES_MAX + 1
    for path, name in (("/memory/events", "kind"), ("/memory", "tag"), ("/memory", "source")):
        params: list[tuple[str, str | int | float | bool | None]] = [
            (name, "manual" if name == "source" else f"v{i}") for i in range(n)
        ]
        r = await client.get(path, params=params, headers=tenant.headers)
        assert r.status_code == 400, (path, r.text)
        [error] = r.json()["errors"]
        assert error["code"] == "TOO_LARGE", r.text
        assert f"the limit is {limits.FILTER_VALUES_MAX}" in error["message"], r.text
