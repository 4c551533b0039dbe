"""`jet-memory serve` as a real process on 127.0.0.1, with tenants and keys made by the CLI."""

import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port, serving

JET = Path(sys.executable).parent / "jet-memory"
STARTUP_SECONDS = 120.0
CLIENT_POOL_EXPIRY = httpx.Limits().keepalive_expiry or 5.0

pytestmark = pytest.mark.slow

APPEND = """mutation($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) { replayed event { id body } errors { code } } }"""
READ = "query($id: ID!) { memoryEvent(id: $id) { id body } }"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    return environ | {
        "JET_DATA_DIR": str(tmp_path / "data"),
        # Revocation is immediate: the server asks the control database on every request.
        "JET_AUTH_CACHE_SECONDS": "0",
        "JET_LOG_LEVEL": "info",
        "PYTHONUNBUFFERED": "1",  # the server log is complete while the server runs
    }


def cli(env: dict[str, str], cwd: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [str(JET), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


@contextlib.contextmanager
def running_server(env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """The base URL of a running `jet-memory serve`; stopped by its PID afterwards."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)]
    # cwd: no stray .env from the working tree.
    with serving(
        argv,
        url=url,
        env=env,
        cwd=tmp_path,
        log=tmp_path / "serve.log",
        startup_seconds=STARTUP_SECONDS,
    ):
        yield url


def test_serve_with_cli_tenants_and_keys(env: dict[str, str], tmp_path: Path) -> None:
    cli(env, tmp_path, "migrate")  # as an operator starts: the CLI creates no database else
    created = cli(env, tmp_path, "tenants", "create", "acme")
    tenant_id = re.search(r"\b(ten_[0-9a-z]{26})\b", created[0])
    assert tenant_id, created
    key = created[-1]  # the key alone on the last line
    assert re.fullmatch(r"jm_[A-Za-z0-9_-]{40,}", key), created

    with running_server(env, tmp_path) as url, httpx.Client(base_url=url, timeout=10) as client:
        health = client.get("/healthz")
        assert health.json()["status"] == "ok"
        # No `server: uvicorn` advertised; the Date HTTP/1.1 asks an origin server for, yes.
        assert "server" not in health.headers and "date" in health.headers

        def gql(
            secret: str, query: str, variables: dict[str, object] | None = None
        ) -> httpx.Response:
            return client.post(
                "/graphql",
                json={"query": query, "variables": variables or {}},
                headers={"Authorization": f"Bearer {secret}"},
            )

        decision = {
            "scope": "ENTITY",
            "scopeRef": "acct-42",
            "kind": "decision",
            "body": "Acme approved the budget.",
        }
        append = gql(key, APPEND, {"input": decision})
        assert append.status_code == 200, append.text
        payload = append.json()["data"]["appendMemoryEvent"]
        assert payload["errors"] == [] and payload["replayed"] is False
        event_id = payload["event"]["id"]

        got = gql(key, READ, {"id": event_id}).json()
        assert got == {
            "data": {"memoryEvent": {"id": event_id, "body": "Acme approved the budget."}}
        }

        # A second key, by tenant name, reads the same tenant.
        issued = cli(env, tmp_path, "keys", "create", "acme")
        key_id = re.search(r"\b(key_[0-9a-z]{26})\b", issued[0])
        assert key_id, issued
        second = issued[-1]
        assert second != key
        assert gql(second, READ, {"id": event_id}).json() == got

        listed = cli(env, tmp_path, "tenants", "list")
        [row] = [line.split("\t") for line in listed]
        assert row[:3] == [tenant_id[1], "acme", "active"] and row[-1] == "2 keys"

        revoked = cli(env, tmp_path, "keys", "revoke", key_id[1])
        assert key_id[1] in revoked[-1] and "revoked" in revoked[-1]
        refused = gql(second, READ, {"id": event_id})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert event_id not in refused.text
        assert gql(key, READ, {"id": event_id}).json() == got  # the first key still works
        assert cli(env, tmp_path, "tenants", "list")[0].endswith("\t1 keys")

        # Without a key: the GraphiQL page yes, an operation no.
        assert client.get("/graphql", headers={"Accept": "text/html"}).status_code == 200
        assert client.post("/graphql", json={"query": "{ __typename }"}).status_code == 401

    # The server logged the requests, and never a key.
    served = (tmp_path / "serve.log").read_text()
    assert "POST /graphql" in served
    assert key not in served and second not in served


def test_clients_that_leave_mid_body_are_499s_and_a_405_has_its_request_id(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Real sockets: a client sends its headers (Content-Length: 1000) and 10 bytes, then
    closes. The server logs one INFO line per request (no error, no traceback), counts a
    499 (no 500), stores nothing. And a PUT /graphql is a 405 with the client's request
    id, which its access line carries too (JSON logs)."""
    cli(env, tmp_path, "migrate")  # as an operator starts: the CLI creates no database else
    created = cli(env, tmp_path, "tenants", "create", "acme")
    tenant_id = re.search(r"\b(ten_[0-9a-z]{26})\b", created[0])
    assert tenant_id, created
    key = created[-1]
    env = env | {"JET_LOG_FORMAT": "json"}
    paths = ["/memory/events", "/graphql"]
    with running_server(env, tmp_path) as url, httpx.Client(base_url=url, timeout=10) as client:
        for i, path in enumerate(paths):
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as s:
                s.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: 1000\r\nX-Request-Id: gone-{i}\r\n\r\n".encode()
                    + b'{"scope":"'
                )
        put = client.put("/graphql", headers={"X-Request-Id": "put-1"})
        assert put.status_code == 405 and put.headers["x-request-id"] == "put-1"
        counted = [
            f'jet_http_requests_total{{method="POST",route="{p}",status="499"}} 1.0' for p in paths
        ]
        deadline = time.monotonic() + STARTUP_SECONDS
        while not all(line in (exposed := client.get("/metrics").text) for line in counted):
            assert time.monotonic() < deadline, exposed  # bounded polling, not a timing test
            time.sleep(0.05)
        assert 'status="500"' not in exposed
        stored = client.post(
            "/graphql",
            json={"query": "{ memoryEvents { edges { cursor } } }"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert stored.json() == {"data": {"memoryEvents": {"edges": []}}}

    served = (tmp_path / "serve.log").read_text()
    records = [json.loads(line) for line in served.splitlines() if line.startswith("{")]
    gone = [r for r in records if "client disconnected before the body was read" in r["message"]]
    assert sorted((r["request_id"], r["level"], r["tenant_id"]) for r in gone) == [
        ("gone-0", "INFO", tenant_id[1]),
        ("gone-1", "INFO", tenant_id[1]),
    ]
    # uvicorn hands the app nothing of a body once its client has gone.
    assert all(
        re.search(r"/(memory/events|graphql), \d+ of 1000 bytes read", r["message"]) for r in gone
    )
    assert not [r for r in records if r["level"] in ("ERROR", "CRITICAL")], served
    assert "Traceback" not in served and key not in served
    [access] = [
        r for r in records if r["logger"] == "uvicorn.access" and "PUT /graphql" in r["message"]
    ]
    assert access["request_id"] == "put-1" and access["message"].endswith(" 405")


def test_a_websocket_message_over_the_body_limit_closes_the_socket_with_1009(
    env: dict[str, str], tmp_path: Path
) -> None:
    """uvicorn is told the HTTP body limit for websocket messages too (its own is 16 MiB):
    a subscribe message at the limit is answered, one byte over it closes the socket before
    it is parsed, and the server serves the next socket."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from app.edge.limits import MAX_BODY_BYTES

    cli(env, tmp_path, "migrate")
    key = cli(env, tmp_path, "tenants", "create", "acme")[-1]
    with running_server(env, tmp_path) as url:
        ws_url = url.replace("http://", "ws://") + "/graphql"
        init = {"type": "connection_init", "payload": {"authorization": f"Bearer {key}"}}

        def subscribe(size: int) -> str:
            """A subscribe message of `size` bytes (padded by a field the server ignores)."""
            head = '{"id":"%d","type":"subscribe","payload":{"query":"{ __typename }","x":"'
            head %= size
            return head + "a" * (size - len(head) - 3) + '"}}'

        assert len(subscribe(MAX_BODY_BYTES)) == MAX_BODY_BYTES
        with connect(ws_url, subprotocols=["graphql-transport-ws"], max_size=None) as ws:  # type: ignore[list-item]
            ws.send(json.dumps(init))
            assert json.loads(ws.recv(timeout=30)) == {"type": "connection_ack"}
            ws.send(subscribe(MAX_BODY_BYTES))  # at the limit: answered
            assert json.loads(ws.recv(timeout=30))["type"] == "next"
            assert json.loads(ws.recv(timeout=30))["type"] == "complete"
            # Closed with 1009 as it arrives: the close frame can be lost to the reset of a
            # connection still sending, so the client sees one or the other.
            with pytest.raises((ConnectionClosed, ConnectionResetError)):
                ws.send(subscribe(MAX_BODY_BYTES + 1))
                ws.recv(timeout=30)
            frame = ws.protocol.close_rcvd
            assert frame is None or frame.code == 1009, frame
        with connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            ws.send(json.dumps(init))
            assert json.loads(ws.recv(timeout=30)) == {"type": "connection_ack"}
    served = (tmp_path / "serve.log").read_text()
    assert "ERROR" not in served and "Traceback" not in served, served


def test_an_idle_connection_outlives_the_clients_pool_expiry(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A client's pool keeps an idle connection for 5 s (httpx's default): the server keeps
    it longer, so a request sent just as the client's pool still trusts it is answered, not
    met by a closed socket (a transport error the client cannot tell from a lost write)."""
    cli(env, tmp_path, "migrate")
    with running_server(env, tmp_path) as url:
        conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=30)
        try:
            conn.request("GET", "/healthz")
            first = conn.getresponse()
            assert first.status == 200 and first.read()
            sock = conn.sock
            time.sleep(CLIENT_POOL_EXPIRY + 1)  # idle past the client's pool
            # http.client does not reconnect by itself: a closed socket fails here.
            conn.request("GET", "/healthz")
            again = conn.getresponse()
            assert again.status == 200 and again.read() and conn.sock is sock
        finally:
            conn.close()
