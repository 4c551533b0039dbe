"""`jet-memory serve` as a real process on 127.0.0.1, with tenants and keys made by the CLI."""

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from servers import free_port, serving

JET = Path(sys.executable).parent / "jet-memory"
STARTUP_SECONDS = 20.0

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
    with serving(argv, url=url, env=env, cwd=tmp_path, log=tmp_path / "serve.log",
                 startup_seconds=STARTUP_SECONDS):  # fmt: skip
        yield url


def test_serve_with_cli_tenants_and_keys(env: dict[str, str], tmp_path: Path) -> None:
    created = cli(env, tmp_path, "tenants", "create", "acme")
    tenant_id = re.search(r"\b(ten_[0-9a-z]{26})\b", created[0])
    assert tenant_id, created
    key = created[-1]  # the key alone on the last line
    assert re.fullmatch(r"jm_[A-Za-z0-9_-]{40,}", key), created

    with running_server(env, tmp_path) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/healthz").json()["status"] == "ok"

        def gql(
            secret: str, query: str, variables: dict[str, object] | None = None
        ) -> httpx.Response:
            return client.post(
                "/graphql",
                json={"query": query, "variables": variables or {}},
                headers={"Authorization": f"Bearer {secret}"},
            )

        decision = {
            "scope": "ENTITY", "scopeRef": "acct-42", "kind": "decision",
            "body": "Acme approved the budget.",
        }  # fmt: skip
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
