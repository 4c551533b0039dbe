"""app.edge.app.metered_starlette: stock Starlette routing (routing order, 405, a 500 for an
escaping exception, the scope a route sees), with every request counted in the HTTP
metrics, Starlette's own answers too."""

from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.edge.app import metered_starlette
from tests.conftest import sample


class Named:
    """An ASGI endpoint answering its name and what routing put in the scope."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = {
            "name": self.name,
            "route": scope["route"].path,
            "endpoint": scope["endpoint"] is self,
            "app": type(scope["app"]).__name__,
            "router": scope["router"] is scope["app"].router,
            "path_params": scope["path_params"],
        }
        await JSONResponse(body)(scope, receive, send)


class Failing:
    """Raises before (or, with `after_start`, after) starting its response."""

    def __init__(self, *, after_start: bool = False) -> None:
        self.after_start = after_start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.after_start:
            await send({"type": "http.response.start", "status": 202, "headers": []})
        raise RuntimeError("boom")


async def function_endpoint(request: Request) -> PlainTextResponse:
    return PlainTextResponse("function")


def edge() -> Starlette:
    return metered_starlette(
        [
            Route("/shadow/{name}", Named("param")),
            Route("/shadow/fixed", Named("never")),  # the route above takes its requests
            Route("/direct", Named("direct"), methods=["GET", "POST"]),
            Route("/any", Named("any")),
            Route("/fails", Failing()),
            Route("/fails-late", Failing(after_start=True)),
            Route("/function", function_endpoint),
        ]
    )


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=edge(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def test_a_route_sees_the_scope_starlettes_router_gives_it(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/direct")
    assert r.status_code == 200
    assert r.json() == {
        "name": "direct",
        "route": "/direct",
        "endpoint": True,
        "app": "Starlette",
        "router": True,
        "path_params": {},
    }
    assert (await client.delete("/any")).json()["name"] == "any"
    assert (await client.get("/function")).text == "function"


async def test_an_earlier_route_that_matches_the_path_still_wins(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/shadow/fixed")
    assert r.json()["name"] == "param" and r.json()["path_params"] == {"name": "fixed"}


async def test_a_method_the_route_does_not_allow_is_starlettes_405(
    client: httpx.AsyncClient,
) -> None:
    labels = {"route": "/direct", "method": "PUT", "status": "405"}
    before = sample("jet_http_requests_total", **labels)
    r = await client.put("/direct")
    assert r.status_code == 405 and r.text == "Method Not Allowed"
    assert set(r.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    assert sample("jet_http_requests_total", **labels) == before + 1


async def test_an_exception_before_the_response_is_a_plain_500_counted_as_such() -> None:
    labels = {"route": "/fails", "method": "GET", "status": "500"}
    before = sample("jet_http_requests_total", **labels)
    transport = httpx.ASGITransport(app=edge())  # raises what the app raises
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        with pytest.raises(RuntimeError, match="boom"):
            await c.get("/fails")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=edge(), raise_app_exceptions=False),
        base_url="http://testserver",
    ) as c:
        r = await c.get("/fails")
    assert r.status_code == 500 and r.text == "Internal Server Error"
    assert sample("jet_http_requests_total", **labels) == before + 2


async def test_an_exception_after_the_response_started_keeps_its_status(
    client: httpx.AsyncClient,
) -> None:
    labels = {"route": "/fails-late", "method": "GET", "status": "202"}
    before = sample("jet_http_requests_total", **labels)
    r = await client.get("/fails-late")
    assert r.status_code == 202
    assert sample("jet_http_requests_total", **labels) == before + 1


async def test_requests_starlette_answers_are_counted_too(client: httpx.AsyncClient) -> None:
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    function = {"route": "/function", "method": "GET", "status": "200"}
    before = (
        sample("jet_http_requests_total", **unmatched),
        sample("jet_http_requests_total", **function),
    )
    assert (await client.get("/nowhere")).status_code == 404
    assert (await client.get("/function")).status_code == 200
    assert sample("jet_http_requests_total", **unmatched) == before[0] + 1
    assert sample("jet_http_requests_total", **function) == before[1] + 1


async def test_a_root_path_is_routed() -> None:
    transport = httpx.ASGITransport(app=edge(), root_path="/api")
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        r = await c.get("/api/direct")
    assert r.status_code == 200 and r.json()["name"] == "direct"
