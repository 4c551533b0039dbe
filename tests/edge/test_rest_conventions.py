"""REST as a client expects it, against a real `jet-memory serve`: GET, edit, PUT the entry's
own representation; PATCH for a partial update; GET /memory/events/{id} and Location on a
created event; "did you mean scopeRef"; no enum error offering a value then refused; an
empty query parameter an error on every route; tenant isolation of the new routes."""

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.servers import jet_serve

pytestmark = pytest.mark.slow

ENTRY = {
    "scope": "entity",
    "scopeRef": "ent_acme",
    "title": "Acme ROAS target is 4",
    "summary": "Acme agreed a ROAS target of 4 for the spring campaign.",
    "tags": ["decision", "roas"],
    "importance": 4,
}
EVENT = {"scope": "entity", "scopeRef": "ent_acme", "kind": "decision", "body": "Pause display."}


@pytest.fixture(scope="module")
def clients(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    with (
        jet_serve(tmp_path_factory.mktemp("conventions"), "a", "b") as (url, (a, b)),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {a}"}) as api,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {b}"}) as other,
    ):
        yield api, other


@pytest.fixture
def api(clients: tuple[httpx.Client, httpx.Client]) -> httpx.Client:
    return clients[0]


def errors(r: httpx.Response, status: int) -> list[dict[str, Any]]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    found: list[dict[str, Any]] = r.json()["errors"]
    return found


def created_entry(api: httpx.Client) -> dict[str, Any]:
    r = api.post("/memory", json=ENTRY)
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/memory/{r.json()['id']}"
    return dict(r.json())


def test_get_edit_put_the_entry_representation(api: httpx.Client) -> None:
    entry = created_entry(api)
    got = api.get(f"/memory/{entry['id']}")
    body = got.json()
    body["title"] = "Acme ROAS target is 4.5"
    body["tags"] = ["decision"]
    put = api.put(f"/memory/{entry['id']}", json=body, headers={"If-Match": got.headers["etag"]})
    assert put.status_code == 200, put.text
    assert put.json()["title"] == "Acme ROAS target is 4.5"
    assert put.json()["tags"] == ["decision"] and put.json()["version"] == 2
    assert put.headers["etag"] == '"2"'

    # The same representation again (version 1): stale, a conflict rather than a lost update.
    stale = errors(api.put(f"/memory/{entry['id']}", json=body), 409)
    assert stale[0]["field"] == "version"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id", "mem_01m8mg34c2w3ev9yjrc59acej4"),
        ("scope", "team"),
        ("scopeRef", "ent_other"),
        ("source", "call"),
        ("createdAt", "2020-01-01T00:00:00Z"),
        ("updatedAt", "2020-01-01T00:00:00Z"),
    ],
)
def test_put_a_changed_read_only_field_is_a_422_naming_it(
    api: httpx.Client, field: str, value: str
) -> None:
    entry = created_entry(api)
    body = api.get(f"/memory/{entry['id']}").json() | {field: value, "importance": 1}
    found = errors(api.put(f"/memory/{entry['id']}", json=body), 422)
    assert [(e["field"], e["code"]) for e in found] == [(field, "READ_ONLY")]
    assert "read-only" in found[0]["message"]
    assert api.get(f"/memory/{entry['id']}").json()["importance"] == 4  # nothing changed


def test_patch_changes_the_fields_given_with_the_version_check(api: httpx.Client) -> None:
    entry = created_entry(api)
    url = f"/memory/{entry['id']}"
    r = api.patch(url, json={"importance": 5}, headers={"If-Match": '"1"'})
    assert r.status_code == 200, r.text
    assert (r.json()["importance"], r.json()["title"]) == (5, ENTRY["title"])
    assert r.headers["etag"] == '"2"'
    errors(api.patch(url, json={"importance": 2}, headers={"If-Match": '"1"'}), 412)
    errors(api.patch(url, json={"importance": 2, "expectedVersion": 1}), 409)
    # PATCH takes no read-only field: they are not part of a partial update.
    found = errors(api.patch(url, json={"scope": "team"}), 422)
    assert found[0]["field"] == "scope"


def test_an_event_is_read_at_its_location(
    clients: tuple[httpx.Client, httpx.Client],
) -> None:
    api, other = clients
    r = api.post("/memory/events", json=EVENT, headers={"Idempotency-Key": "loc-1"})
    assert r.status_code == 201, r.text
    location = r.headers["location"]
    assert location == f"/memory/events/{r.json()['id']}"
    got = api.get(location)
    assert got.status_code == 200 and got.json() == r.json()
    replay = api.post("/memory/events", json=EVENT, headers={"Idempotency-Key": "loc-1"})
    assert replay.status_code == 200 and "location" not in replay.headers
    # Tenant isolation: B sees nothing of A's at A's location.
    assert errors(other.get(location), 404)[0]["field"] == "id"
    assert errors(api.get("/memory/events/evt_nope"), 404)[0]["field"] == "id"


@pytest.mark.parametrize(
    ("method", "url", "body", "given", "meant"),
    [
        ("POST", "/memory", ENTRY | {"scope_ref": "x"}, "scope_ref", "scopeRef"),
        (
            "POST",
            "/memory/events",
            EVENT | {"occurred_at": "2026-01-01T00:00:00Z"},
            "occurred_at",
            "occurredAt",
        ),
        (
            "POST",
            "/memory/events",
            [EVENT | {"idempotency_key": "k"}],
            "0.idempotency_key",
            "idempotencyKey",
        ),
        ("GET", "/memory?scope_ref=x", None, "scope_ref", "scopeRef"),
        (
            "GET",
            "/memory/events?occurred_after=2026-01-01T00:00:00Z",
            None,
            "occurred_after",
            "occurredAfter",
        ),
        (
            "GET",
            "/memory/context?scope=institutional&max_tokens=300",
            None,
            "max_tokens",
            "maxTokens",
        ),
    ],
)
def test_a_snake_case_name_gets_did_you_mean(
    api: httpx.Client, method: str, url: str, body: Any, given: str, meant: str
) -> None:
    r = api.request(method, url, json=body)
    found = errors(r, 400 if method == "GET" else 422)
    assert any(
        e["field"] == given and e["message"].endswith(f"did you mean {meant}?") for e in found
    ), found


def test_no_enum_error_offers_a_value_then_refused(api: httpx.Client) -> None:
    found = errors(api.post("/memory", json=ENTRY | {"source": "fax"}), 422)
    message = found[0]["message"]
    assert "'manual'" in message and "compactor" not in message
    found = errors(api.post("/memory", json=ENTRY | {"source": "compactor"}), 422)
    assert (found[0]["code"], found[0]["field"]) == ("FORBIDDEN", "source")
    # As a filter, compactor is a value like the others.
    assert api.get("/memory", params={"source": "compactor"}).status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/memory?scope=entity&scopeRef=",
        "/memory?tag=",
        "/memory?search=",
        "/memory/events?scope=",
        "/memory/events?occurredAfter=",
        "/memory/events?kind=decision&kind=",
        "/memory/context?scope=institutional&query=",
        "/memory/context?scope=",
    ],
)
def test_an_empty_query_parameter_is_an_error_on_every_route(api: httpx.Client, url: str) -> None:
    name = url.rsplit("&", 1)[-1].split("?")[-1].rstrip("=")
    found = errors(api.get(url), 400)
    assert [(e["field"], e["in"]) for e in found] == [(name, "query")]
    assert "empty" in found[0]["message"]


def test_an_epoch_number_is_refused_for_a_date_time_parameter(api: httpx.Client) -> None:
    for value in ("1700000000", "0.5"):
        found = errors(api.get("/memory/events", params={"occurredAfter": value}), 400)
        assert found[0]["field"] == "occurredAfter" and "ISO 8601" in found[0]["message"]
    found = errors(api.post("/memory/events", json=EVENT | {"occurredAt": 1700000000}), 422)
    assert found[0]["field"] == "occurredAt"
