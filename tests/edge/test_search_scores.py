"""Search scores a client can threshold on, against a real `jet-memory serve`: each hit's
score is the share of the search's words it contains (0 to 1, the same scale for any
question), matchedTerms says which, and minScore keeps the hits at or above it, on
GraphQL memoryEntries(search), REST GET /memory and the context loader's entries."""

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.servers import jet_serve

pytestmark = pytest.mark.slow

ENTRIES = [
    ("Acme ROAS target is 4", "Acme agreed a ROAS target of 4 for the spring campaigns.", ["roas"]),
    ("Acme budget", "Acme moved the display budget to search.", ["budget"]),
    ("Globex policy", "Globex pays invoices within 30 days.", []),
]
QUERY = """query($search: String!, $min: Float) {
  memoryEntries(filter: {search: $search, minScore: $min}) {
    edges { score matchedTerms node { title } } pageInfo { hasNextPage } } }"""


@pytest.fixture(scope="module")
def clients(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    with (
        jet_serve(tmp_path_factory.mktemp("scores"), "a", "b") as (url, (a, b)),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {a}"}) as api,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {b}"}) as other,
    ):
        for title, summary, tags in ENTRIES:
            r = api.post(
                "/memory",
                json={
                    "scope": "entity",
                    "scopeRef": "ent_acme",
                    "title": title,
                    "summary": summary,
                    "tags": tags,
                },
            )
            assert r.status_code == 201, r.text
        yield api, other


def gql(client: httpx.Client, search: str, min_score: float | None = None) -> dict[str, Any]:
    r = client.post(
        "/graphql", json={"query": QUERY, "variables": {"search": search, "min": min_score}}
    )
    body: dict[str, Any] = r.json()
    assert r.status_code == 200 and "errors" not in body, body
    return dict(body["data"]["memoryEntries"])


def test_graphql_scores_are_the_share_of_words_matched(
    clients: tuple[httpx.Client, httpx.Client],
) -> None:
    api, other = clients
    # 4 words: acme, roas, target, campaign (stemmed: campaigns); stop words are not counted.
    edges = gql(api, "what is the Acme ROAS target for the campaign?")["edges"]
    by_title = {e["node"]["title"]: e for e in edges}
    best = by_title["Acme ROAS target is 4"]
    assert best["score"] == 1.0
    assert best["matchedTerms"] == ["acme", "roas", "target", "campaign"]
    assert by_title["Acme budget"]["score"] == 0.25
    assert by_title["Acme budget"]["matchedTerms"] == ["acme"]
    assert "Globex policy" not in by_title
    assert all(0 <= e["score"] <= 1 for e in edges)
    # Scores of another question are on the same scale: all of one word is 1.
    assert [e["score"] for e in gql(api, "invoices")["edges"]] == [1.0]

    kept = gql(api, "what is the Acme ROAS target for the campaign?", 0.5)["edges"]
    assert [e["node"]["title"] for e in kept] == ["Acme ROAS target is 4"]
    # Served from the search page cache the second time: the same scores.
    assert gql(api, "what is the Acme ROAS target for the campaign?")["edges"] == edges
    # Tenant B finds nothing of A's.
    assert gql(other, "Acme ROAS")["edges"] == []


def test_graphql_min_score_out_of_range_is_an_error_naming_it(
    clients: tuple[httpx.Client, httpx.Client],
) -> None:
    api, _ = clients
    r = api.post(
        "/graphql", json={"query": QUERY, "variables": {"search": "acme", "min": 1.5}}
    ).json()
    assert r["errors"][0]["extensions"]["field"] == ["minScore"], r
    assert "minScore must be 0 to 1" in r["errors"][0]["message"]


def test_rest_search_scores_and_min_score(clients: tuple[httpx.Client, httpx.Client]) -> None:
    api, _ = clients
    items = api.get("/memory", params={"search": "Acme ROAS target"}).json()["items"]
    assert [(i["title"], i["score"], i["matchedTerms"]) for i in items] == [
        ("Acme ROAS target is 4", 1.0, ["acme", "roas", "target"]),
        ("Acme budget", pytest.approx(1 / 3), ["acme"]),
    ]
    kept = api.get("/memory", params={"search": "Acme ROAS target", "minScore": "0.5"})
    assert [i["title"] for i in kept.json()["items"]] == ["Acme ROAS target is 4"]
    bad = api.get("/memory", params={"search": "acme", "minScore": "2"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "minScore"
    plain = api.get("/memory").json()["items"]
    assert all("score" not in i and "matchedTerms" not in i for i in plain)


def test_the_context_loader_says_why_each_entry(clients: tuple[httpx.Client, httpx.Client]):
    api, _ = clients
    loaded = api.get(
        "/memory/context",
        params={"scope": "entity", "scopeRef": "ent_acme", "query": "Acme ROAS target"},
    ).json()
    by_title = {e["title"]: e for e in loaded["entries"]}
    assert by_title["Acme ROAS target is 4"]["score"] == 1.0
    assert by_title["Acme ROAS target is 4"]["matchedTerms"] == ["acme", "roas", "target"]
    assert by_title["Globex policy"]["matchedTerms"] == []  # packed by importance/recency
    unscored = api.get("/memory/context", params={"scope": "entity", "scopeRef": "ent_acme"})
    assert all("score" not in e for e in unscored.json()["entries"])
