"""/graphql as real clients drive it, against a real server process (fast path on and off):
every GraphQL-over-HTTP field with every JSON type (a clean 400, no ERROR line, keep-alive
kept, counted), one error shape with a code and the request id on every refusal, Apollo's
batches, RFC 3339 UTC timestamps, and a mutation that never loses what it wrote."""

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import free_port, serving

JET = Path(sys.executable).parent / "jet-memory"
GQL_RESPONSE = "application/graphql-response+json"
JSON_VALUES: dict[str, Any] = {
    "object": {"obj": "ect"},
    "array": [1, "two"],
    "number": 1.5,
    "boolean": True,
    "null": None,
    "string": "s",
}
# What each field must be (or null); a JSON type outside these is a 400.
ALLOWED = {
    "query": {"string", "null"},
    "operationName": {"string", "null"},
    "variables": {"object", "null"},
    "extensions": {"object", "null"},
}
EXPECTED = {
    "query": "a string",
    "operationName": "a string",
    "variables": "an object",
    "extensions": "an object",
}
QUERY = "query Q { __typename }"
PYTHON_REPR = re.compile(r"True|False|None|\{'|\['|'obj'")


@contextmanager
def server(tmp_path: Path, fast_path: str, **env_extra: str) -> Iterator[tuple[str, str, Path]]:
    """A real `jet-memory serve` with one tenant: (url, key, its log file)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
        "JET_DATA_DIR": str(tmp_path / "data"),
        "JET_LOG_LEVEL": "info",
        "JET_GRAPHQL_FAST_PATH": fast_path,
        "PYTHONUNBUFFERED": "1",
        **env_extra,
    }
    migrate = [str(JET), "migrate"]
    subprocess.run(migrate, env=env, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    created = subprocess.run(
        [str(JET), "tenants", "create", "acme"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    with serving(argv, url=url, env=env, cwd=tmp_path, log=log, startup_seconds=90):
        yield url, key, log


def no_error_lines(log: Path) -> None:
    served = log.read_text()
    assert "Traceback" not in served and not re.search(r"\bERROR\b", served), served[-3000:]


def refusal(r: httpx.Response, status: int, code: str) -> str:
    """The one error shape: GraphQL errors, a code, the request id of the header."""
    assert r.status_code == status, (r.status_code, r.text[:300])
    body = r.json()
    assert list(body) == ["errors"] and len(body["errors"]) == 1, body
    error = body["errors"][0]
    assert error["extensions"]["code"] == code, error
    assert error["extensions"]["requestId"] == r.headers["x-request-id"], (error, r.headers)
    message: str = error["message"]
    assert not PYTHON_REPR.search(message), message
    return message


def sample(client: httpx.Client, name: str, **labels: str) -> float:
    text = client.get("/metrics").text
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(name + "{"):
            got = ",".join(sorted(line[len(name) + 1 : line.index("}")].split(",")))
            if got == wanted:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_every_field_with_every_json_type(tmp_path: Path, fast_path: str) -> None:
    with server(tmp_path, fast_path) as (url, key, log):
        auth = {"Authorization": f"Bearer {key}"}
        transport = httpx.HTTPTransport(retries=0)
        with httpx.Client(base_url=url, timeout=30, transport=transport) as client:
            before = sample(
                client, "jet_http_requests_total", route="/graphql", method="POST", status="400"
            )
            refused = 0
            for (field, allowed), (kind, value) in itertools.product(
                ALLOWED.items(), JSON_VALUES.items()
            ):
                body = {"query": QUERY, field: value}
                for batch in (False, True):
                    r = client.post("/graphql", json=[body] if batch else body, headers=auth)
                    if kind in allowed:
                        # Valid types run: null query is a missing query, a string one
                        # the document "s" (a parse error), an unknown operationName a 400.
                        assert r.status_code in (200, 400), (field, kind, r.text)
                        if r.status_code == 400:
                            refused += 1
                        continue
                    refused += 1
                    message = refusal(r, 400, "BAD_REQUEST")
                    where = " (operation 0 of the batch)" if batch else ""
                    assert message == (
                        f"`{field}`{where} must be {EXPECTED[field]} or null, not {kind}"
                    ), (field, kind, message)
                    # The same connection answers the next request (keep-alive kept).
                    assert r.headers.get("connection", "").lower() != "close"
            # GET: variables and extensions are JSON text in the query string.
            for field, (kind, value) in itertools.product(
                ("variables", "extensions"), JSON_VALUES.items()
            ):
                params = {"query": QUERY, field: json.dumps(value)}
                r = client.get("/graphql", params=params, headers=auth)
                if kind in ALLOWED[field]:
                    assert r.status_code == 200, (field, kind, r.text)
                else:
                    message = refusal(r, 400, "BAD_REQUEST")
                    assert message == f"`{field}` must be {EXPECTED[field]} or null, not {kind}"
            r = client.get("/graphql", params={"query": QUERY, "variables": "{nope"}, headers=auth)
            assert refusal(r, 400, "BAD_REQUEST") == "`variables` is not valid JSON"
            after = sample(
                client, "jet_http_requests_total", route="/graphql", method="POST", status="400"
            )
            assert after - before == refused
            assert client.post("/graphql", json={"query": QUERY}, headers=auth).status_code == 200
    no_error_lines(log)


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_one_error_shape_on_graphql(tmp_path: Path, fast_path: str) -> None:
    with (
        server(tmp_path, fast_path) as (url, key, log),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        auth = {"Authorization": f"Bearer {key}"}
        json_ct = auth | {"Content-Type": "application/json"}
        refusal(client.post("/graphql", content=b"{nope", headers=json_ct), 400, "BAD_REQUEST")
        refusal(client.post("/graphql", json={}, headers=auth), 400, "BAD_REQUEST")
        r = client.post(
            "/graphql",
            content=b'{"query": "{ __typename }"}',
            headers=auth | {"Content-Type": "text/plain"},
        )
        assert "application/json" in refusal(r, 415, "UNSUPPORTED_MEDIA_TYPE")
        r = client.post("/graphql", json=[{"query": QUERY}] * 11, headers=auth)
        assert "at most 10 operations" in refusal(r, 400, "BAD_REQUEST")
        refusal(client.post("/graphql", json=[], headers=auth), 400, "BAD_REQUEST")
        r = client.get("/graphql", params={"query": "mutation { x }"}, headers=auth)
        refusal(r, 405, "METHOD_NOT_ALLOWED")
        assert r.headers["allow"] == "POST"
        # 401, in the media type the client's Accept asked for (Apollo reads the message).
        for accept, media in [
            (GQL_RESPONSE, GQL_RESPONSE),
            ("application/json", "application/json"),
        ]:
            r = client.post("/graphql", json={"query": QUERY}, headers={"Accept": accept})
            refusal(r, 401, "UNAUTHENTICATED")
            assert r.headers["content-type"] == media
        r = client.post("/graphql", content=b"x" * (8 * 1024 * 1024 + 1), headers=json_ct)
        assert "over the limit" in refusal(r, 413, "TOO_LARGE")
        # Request errors: parse, validation, variables; with graphql-response+json, no data.
        cases = [
            ("{ memoryEvents(", None, "GRAPHQL_PARSE_FAILED"),
            ("{ noSuchField }", None, "GRAPHQL_VALIDATION_FAILED"),
            (
                "query($n: Int!) { memoryEvents(first: $n) { edges { cursor } } }",
                {"n": "many"},
                "BAD_USER_INPUT",
            ),
        ]
        for query, variables, code in cases:
            body = {"query": query, "variables": variables}
            r = client.post("/graphql", json=body, headers=auth | {"Accept": GQL_RESPONSE})
            refusal(r, 400, code)
            legacy = client.post("/graphql", json=body, headers=auth).json()
            assert legacy["data"] is None and legacy["errors"][0]["extensions"]["code"] == code
        # An input error of a query: its documented code and the conventional classification.
        too_many = "{ memoryEvents(first: 101) { edges { cursor } } }"
        r = client.post("/graphql", json={"query": too_many}, headers=auth)
        ext = r.json()["errors"][0]["extensions"]
        assert ext["code"] == "INVALID" and ext["classification"] == "BAD_USER_INPUT", ext
        assert ext["field"] == ["first"] and ext["requestId"] == r.headers["x-request-id"]
    no_error_lines(log)


CREATE = """mutation($i: CreateMemoryEntryInput!, $after: String) { createMemoryEntry(input: $i) {
  entry { id title createdAt ...Sources } errors { field code message } } }
fragment Sources on MemoryEntry { sourceEvents(first: 5, after: $after) { edges { cursor } } }"""
ENTRIES = "{ memoryEntries { edges { node { id title } } } }"
APPEND = """mutation($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i) {
  event { id occurredAt recordedAt } errors { code message } } }"""


@pytest.mark.slow
def test_a_mutation_never_loses_what_it_wrote_and_times_say_z(tmp_path: Path) -> None:
    with (
        server(tmp_path, "1") as (url, key, log),
        httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {key}"}) as c,
    ):
        entry = {"scope": "INSTITUTIONAL", "title": "Pricing", "summary": "s"}
        # A bad argument on a nested field: refused before the write, nothing stored.
        r = c.post("/graphql", json={"query": CREATE, "variables": {"i": entry, "after": "{"}})
        error = r.json()["errors"][0]
        assert error["extensions"]["code"] == "INVALID", error
        assert error["extensions"]["field"] == ["sourceEvents", "after"], error
        assert c.post("/graphql", json={"query": ENTRIES}).json() == {
            "data": {"memoryEntries": {"edges": []}}
        }
        # Retried with a good one: stored once, answered.
        r = c.post("/graphql", json={"query": CREATE, "variables": {"i": entry}})
        created = r.json()["data"]["createMemoryEntry"]["entry"]
        assert created["title"] == "Pricing" and created["sourceEvents"] == {"edges": []}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", created["createdAt"])
        edges = c.post("/graphql", json={"query": ENTRIES}).json()["data"]["memoryEntries"]["edges"]
        assert [e["node"]["id"] for e in edges] == [created["id"]]
        # An offset on input is accepted; the answer is the same instant in UTC with Z.
        event = {
            "scope": "INSTITUTIONAL",
            "kind": "decision",
            "body": "b",
            "occurredAt": "2026-03-01T14:30:00+02:00",
        }
        r = c.post("/graphql", json={"query": APPEND, "variables": {"i": event}})
        appended = r.json()["data"]["appendMemoryEvent"]["event"]
        assert appended["occurredAt"] == "2026-03-01T12:30:00Z"
        assert appended["recordedAt"].endswith("Z")
        r = c.post("/graphql", json={"query": '{ __type(name: "DateTime") { specifiedByURL } }'})
        assert r.json()["data"]["__type"]["specifiedByURL"] == (
            "https://scalars.graphql.org/andimarek/date-time"
        )
    no_error_lines(log)


BATCH_APPEND = """mutation Append($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i) {
  event { id } errors { code } } }"""
BATCH_READ = "query Read { memoryEvents { edges { node { id body } } } }"


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_batches_as_apollo_sends_them(tmp_path: Path, fast_path: str) -> None:
    limits = {"JET_RATE_LIMIT_PER_SECOND": "0.001", "JET_RATE_LIMIT_BURST": "8"}
    with (
        server(tmp_path, fast_path, **limits) as (url, key, log),
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        auth = {"Authorization": f"Bearer {key}"}
        event = {"scope": "INSTITUTIONAL", "kind": "decision", "body": "batched"}
        before = sample(
            client,
            "jet_graphql_operations_total",
            operation="Append",
            type="mutation",
            status="200",
        )
        # BatchHttpLink: an array of {operationName, variables, query, extensions}; the
        # answers in order, a read after a write in the same batch seeing it.
        batch = [
            {
                "operationName": "Append",
                "variables": {"i": event},
                "query": BATCH_APPEND,
                "extensions": {},
            },
            {"operationName": "Append", "variables": {"i": event}, "query": BATCH_APPEND},
            {"operationName": "Read", "variables": {}, "query": BATCH_READ},
        ]
        r = client.post("/graphql", json=batch, headers=auth)
        assert r.status_code == 200, r.text
        answers = r.json()
        ids = [a["data"]["appendMemoryEvent"]["event"]["id"] for a in answers[:2]]
        read = [e["node"]["id"] for e in answers[2]["data"]["memoryEvents"]["edges"]]
        assert sorted(read) == sorted(ids) and len(set(ids)) == 2
        after = sample(
            client,
            "jet_graphql_operations_total",
            operation="Append",
            type="mutation",
            status="200",
        )
        assert after - before == 2
        # One operation refused (no query) is its own answer: the write beside it stands.
        r = client.post("/graphql", json=[batch[0], {"query": None}], headers=auth)
        assert r.status_code == 200, r.text
        wrote, refused = r.json()
        assert wrote["data"]["appendMemoryEvent"]["event"]["id"]
        assert (
            refused["data"] is None and refused["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
        )
        assert refused["errors"][0]["extensions"]["requestId"] == r.headers["x-request-id"]
        # Each operation took one of the key's 8 tokens: 3 are left, so a batch of 4 is a
        # 429 with Retry-After (none of it ran); more than burst + 1 can never fit: a 400.
        r = client.post("/graphql", json=[{"query": QUERY}] * 4, headers=auth)
        assert "each of the batch's 4 operations" in refusal(r, 429, "RATE_LIMITED")
        assert int(r.headers["retry-after"]) >= 1
        r = client.post("/graphql", json=[{"query": QUERY}] * 10, headers=auth)
        assert "burst 8" in refusal(r, 400, "BAD_REQUEST")
        # Each of those took the one token TenantBound takes: one is left.
        assert client.post("/graphql", json={"query": QUERY}, headers=auth).status_code == 200
        refusal(client.post("/graphql", json={"query": QUERY}, headers=auth), 429, "RATE_LIMITED")
    no_error_lines(log)
