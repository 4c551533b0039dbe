"""MCP against real processes: `jet-memory serve` with the SDK's client over Streamable HTTP,
`jet-memory mcp` over stdio, two API processes on one data dir with no session affinity,
the OpenAI Agents SDK's client, and the session hooks run as Claude Code runs them."""

import asyncio
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from app.config import Settings
from app.deps import build
from app.services import tenants
from tests.mcp.mcp_support import (
    JET,
    connect,
    error_of,
    jet_server,
    make_keys,
    server_env,
    structured,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "examples" / "agent_hooks"
TOOLS = ["remember", "recall", "search_memory", "save_memory", "forget"]


class Deployment:
    def __init__(self, data_dir: Path, url: str, keys: dict[str, tuple[str, str]]) -> None:
        self.data_dir = data_dir
        self.url = url
        self.mcp = f"{url}/mcp"
        self.keys = keys

    def key(self, name: str) -> str:
        return self.keys[name][1]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """One server for the module (starting one takes seconds here); tenants a and b."""
    work = tmp_path_factory.mktemp("mcp")
    data_dir = work / "data"
    keys = make_keys(data_dir, "a", "b")
    with jet_server(data_dir, work / "serve.log") as url:
        yield Deployment(data_dir, url, keys)
    served = (work / "serve.log").read_text()
    assert "POST /mcp" in served
    assert not any(key in served for _, key in keys.values())  # keys are never logged


async def test_the_sdk_client_over_streamable_http(deployment: Deployment) -> None:
    async with connect(deployment.mcp, deployment.key("a"), mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == TOOLS
        ids = []
        for i in range(3):
            saved = await client.call_tool(
                "save_memory",
                {
                    "scope": "project",
                    "scopeRef": "proc",
                    "title": f"Rule {i}",
                    "summary": f"Release rule {i}",
                    "tags": ["release"],
                    "importance": 4,
                },
            )
            ids.append(structured(saved)["entry"]["id"])
        event = structured(
            await client.call_tool(
                "remember",
                {
                    "scope": "project",
                    "scopeRef": "proc",
                    "kind": "decision",
                    "body": "Ship on Tuesdays.",
                    "idempotencyKey": "proc-1",
                },
            )
        )["event"]
        recalled = structured(
            await client.call_tool(
                "recall", {"scope": "project", "scopeRef": "proc", "query": "release"}
            )
        )
        assert set(recalled["entryIds"]) == set(ids) and recalled["eventIds"] == [event["id"]]
        seen, cursor = [], None
        while True:
            args: dict[str, Any] = {
                "query": "release",
                "scope": "project",
                "scopeRef": "proc",
                "limit": 2,
            }
            if cursor:
                args["cursor"] = cursor
            page = structured(await client.call_tool("search_memory", args))
            seen += [e["id"] for e in page["entries"]]
            cursor = page["nextCursor"]
            if not cursor:
                break
        assert sorted(seen) == sorted(ids)
        updated = structured(
            await client.call_tool(
                "save_memory", {"id": ids[0], "importance": 5, "expectedVersion": 1}
            )
        )
        assert updated["entry"]["version"] == 2
        stale = error_of(
            await client.call_tool(
                "save_memory", {"id": ids[0], "expectedVersion": 1, "title": "x"}
            )
        )
        assert stale["code"] == "CONFLICT" and stale["field"] == "expectedVersion"
        assert structured(await client.call_tool("forget", {"id": ids[2]}))["deletedId"] == ids[2]
        big = error_of(
            await client.call_tool(
                "remember", {"scope": "institutional", "kind": "k", "body": "é" * 40_000}
            )
        )
        assert (big["code"], big["field"]) == ("TOO_LARGE", "body") and "65536" in big["message"]
        typed = error_of(await client.call_tool("search_memory", {"limit": "ten"}))
        assert typed["field"] == "limit"


def test_no_bad_or_revoked_key_is_a_401_with_www_authenticate(deployment: Deployment) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}

    async def issue_and_revoke() -> str:
        settings = Settings(_env_file=None, data_dir=deployment.data_dir)  # type: ignore[call-arg]
        container = await build(settings)
        try:
            issued = await tenants.create_key(container.control, deployment.keys["a"][0])
            await tenants.revoke_key(container.control, issued.key.id)
            return issued.secret
        finally:
            await container.aclose()

    revoked = asyncio.run(issue_and_revoke())
    for headers in (
        {},
        {"Authorization": "Bearer jm_wrong"},
        {"Authorization": f"Bearer {revoked}"},
    ):
        answer = httpx.post(deployment.mcp, json=listing, headers=accept | headers, timeout=30)
        assert answer.status_code == 401, answer.text
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert "result" not in answer.json()


async def test_jet_memory_mcp_serves_the_tools_over_stdio(deployment: Deployment) -> None:
    env = server_env(deployment.data_dir) | {
        "JET_URL": deployment.url,
        "JET_API_KEY": deployment.key("b"),
    }
    params = StdioServerParameters(command=str(JET), args=["mcp"], env=env)
    async with Client(params) as client:
        assert [t.name for t in (await client.list_tools()).tools] == TOOLS
        saved = structured(
            await client.call_tool(
                "save_memory",
                {"scope": "team", "scopeRef": "t", "title": "Via stdio", "summary": "yes"},
            )
        )
        found = structured(await client.call_tool("search_memory", {"query": "stdio"}))
        assert [e["id"] for e in found["entries"]] == [saved["entry"]["id"]]
        bad = error_of(await client.call_tool("recall", {"scope": "team"}))
        assert bad["field"] == "scopeRef"
        page = structured(await client.call_tool("search_memory", {"limit": 1}))
        assert page["entries"]
    # Tenant a's key over HTTP sees nothing of what b saved through the proxy (a search by
    # meaning may find a's own nearest entries, never b's).
    async with connect(deployment.mcp, deployment.key("a")) as a:
        found_by_a = structured(await a.call_tool("search_memory", {"query": "stdio"}))
        assert saved["entry"]["id"] not in [e["id"] for e in found_by_a["entries"]]
        assert all(e["title"] != "Via stdio" for e in found_by_a["entries"])


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({}, "set JET_URL and JET_API_KEY"),
        ({"JET_URL": "http://127.0.0.1:9"}, "set JET_API_KEY"),
        ({"JET_URL": "ftp://x", "JET_API_KEY": "k"}, "http:// or https://"),
        ({"JET_URL": "http://127.0.0.1:9", "JET_API_KEY": "k"}, "cannot reach"),
        ({"JET_API_KEY": "jm_wrong"}, "invalid or revoked API key"),
    ],
)
def test_jet_memory_mcp_says_what_is_wrong(
    deployment: Deployment, env: dict[str, str], says: str
) -> None:
    base = server_env(deployment.data_dir)
    if "JET_API_KEY" in env and "JET_URL" not in env:
        env = env | {"JET_URL": deployment.url}
    done = subprocess.run(
        [str(JET), "mcp"],
        env=base | env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    assert says in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing on the wire a client reads


async def test_two_api_processes_without_session_affinity(
    deployment: Deployment, tmp_path: Path
) -> None:
    """A second server on the same data dir; every HTTP request of one client session goes
    to the other server than the one before (initialize on one, tools/list on the next...)."""
    with jet_server(deployment.data_dir, tmp_path / "second.log") as second:
        urls = itertools.cycle([httpx2.URL(deployment.url), httpx2.URL(second)])
        served: list[int | None] = []

        class Alternating(httpx2.AsyncBaseTransport):
            def __init__(self) -> None:
                self.inner = httpx2.AsyncHTTPTransport()

            async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
                target = next(urls)
                request.url = request.url.copy_with(port=target.port)
                served.append(target.port)
                return await self.inner.handle_async_request(request)

            async def aclose(self) -> None:
                await self.inner.aclose()

        async with connect(
            deployment.mcp, deployment.key("a"), transport=Alternating(), mode="legacy"
        ) as client:
            assert [t.name for t in (await client.list_tools()).tools] == TOOLS
            made = [
                structured(
                    await client.call_tool(
                        "save_memory",
                        {
                            "scope": "project",
                            "scopeRef": "lb",
                            "title": f"LB {i}",
                            "summary": f"balanced {i}",
                        },
                    )
                )["entry"]
                for i in range(4)
            ]
            # Written on both servers, read back through both.
            for _ in range(2):
                found = structured(
                    await client.call_tool(
                        "search_memory", {"scope": "project", "scopeRef": "lb", "limit": 100}
                    )
                )
                assert sorted(e["id"] for e in found["entries"]) == sorted(e["id"] for e in made)
            updated = structured(
                await client.call_tool(
                    "save_memory", {"id": made[0]["id"], "summary": "v2", "expectedVersion": 1}
                )
            )
            assert updated["entry"]["version"] == 2
            stale = error_of(
                await client.call_tool(
                    "save_memory", {"id": made[0]["id"], "summary": "v3", "expectedVersion": 1}
                )
            )
            assert stale["code"] == "CONFLICT"
        ports = {httpx2.URL(deployment.url).port, httpx2.URL(second).port}
        assert set(served) == ports and len(served) >= 8


async def test_the_openai_agents_sdk_lists_and_calls_the_tools(deployment: Deployment) -> None:
    agents_mcp = pytest.importorskip("agents.mcp")
    headers = {"Authorization": f"Bearer {deployment.key('a')}"}
    server = agents_mcp.MCPServerStreamableHttp(
        params={"url": deployment.mcp, "headers": headers, "timeout": 30},
        name="jet-memory",
        cache_tools_list=True,
    )
    await server.connect()
    try:
        tools = await server.list_tools()
        assert [t.name for t in tools] == TOOLS
        done = await server.call_tool(
            "remember",
            {"scope": "team", "scopeRef": "agents", "kind": "note", "body": "From the Agents SDK"},
        )
        assert not done.is_error and done.structured_content["event"]["kind"] == "note"
        recalled = await server.call_tool("recall", {"scope": "team", "scopeRef": "agents"})
        assert "From the Agents SDK" in recalled.content[0].text
    finally:
        await server.cleanup()


def run_hook(
    script: str, event: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HOOKS / script)],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_session_hooks_as_claude_code_runs_them(deployment: Deployment, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
        "JET_URL": deployment.url,
        "JET_API_KEY": deployment.key("a"),
    }
    transcript = tmp_path / "t.jsonl"
    ask, reply = "Add retries to the invoice sender", "Added exponential retries to send_invoice."
    records = [
        {"type": "user", "message": {"role": "user", "content": ask}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]},
        },
        {"type": "summary", "summary": "ignored"},
    ]
    transcript.write_text("\n".join(json.dumps(r) for r in records))
    start = {
        "session_id": "s-1",
        "cwd": str(project / "src"),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "transcript_path": str(transcript),
    }
    first = run_hook("session_start.py", start, env)
    assert first.returncode == 0, first.stderr
    assert "billing-api" in first.stdout and "Nothing remembered yet" in first.stdout

    end = start | {"hook_event_name": "SessionEnd", "reason": "logout"}
    stored = run_hook("session_end.py", end, env)
    assert stored.returncode == 0, stored.stderr
    assert "stored as evt_" in stored.stderr
    again = run_hook("session_end.py", end, env)  # a retried hook: the same event
    assert again.returncode == 0 and "already stored" in again.stderr
    assert again.stderr.split()[-1] == stored.stderr.split()[-1]

    second = run_hook("session_start.py", start | {"session_id": "s-2"}, env)
    assert second.returncode == 0, second.stderr
    assert (
        "session_summary" in second.stdout and "Add retries to the invoice sender" in second.stdout
    )
    assert "exponential retries" in second.stdout and "project/billing-api" in second.stdout

    # Configuration wins over the directory name; tenant b sees none of a's sessions.
    (project / ".jet-memory.json").write_text('{"scope": "team", "scopeRef": "payments"}')
    other = run_hook("session_start.py", start, env | {"JET_API_KEY": deployment.key("b")})
    assert other.returncode == 0 and "team/payments" in other.stdout
    assert "invoice" not in other.stdout

    broken = run_hook("session_start.py", start, env | {"JET_URL": "http://127.0.0.1:9"})
    assert broken.returncode == 1 and "cannot reach" in broken.stderr and broken.stdout == ""
    no_id = run_hook("session_end.py", {"cwd": str(project)}, env)
    assert no_id.returncode == 1 and "session_id" in no_id.stderr


DOCS = (ROOT / "docs" / "mcp.md").read_text()


def doc_block(heading: str, language: str, index: int = 0) -> str:
    """The `index`-th ```language block under `### heading` in docs/mcp.md."""
    section = DOCS.split(f"### {heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return section.split(f"```{language}\n")[index + 1].split("```", 1)[0]


@pytest.mark.parametrize("heading", ["MCP Python SDK", "OpenAI Agents SDK"])
def test_the_python_snippets_of_the_docs_run_as_written(
    deployment: Deployment, heading: str, tmp_path: Path
) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(doc_block(heading, "python"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
        "JET_URL": deployment.url,
        "JET_API_KEY": deployment.key("a"),
    }
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert str(TOOLS) in done.stdout
    if heading == "MCP Python SDK":
        assert "Invoices are retried three times" in done.stdout
    else:  # the recalled Markdown (or "No memory yet for ...") names the scope
        assert "billing-api" in done.stdout.split("\n", 1)[1]


async def test_the_stdio_configurations_of_the_docs_start_the_proxy(
    deployment: Deployment,
) -> None:
    """Claude Desktop's JSON and Codex's TOML name the command a client launches: launched
    here the same way (the key and URL replaced by this server's)."""
    desktop = json.loads(doc_block("Claude Desktop", "json"))["mcpServers"]["jet-memory"]
    codex = tomllib.loads(doc_block("Codex", "toml", 1))["mcp_servers"]["jet-memory"]
    assert (desktop["command"], desktop["args"]) == (codex["command"], codex["args"])
    assert set(desktop["env"]) == set(codex["env"]) == {"JET_URL", "JET_API_KEY"}
    http = tomllib.loads(doc_block("Codex", "toml"))["mcp_servers"]["jet-memory"]
    assert http["url"].endswith("/mcp") and http["bearer_token_env_var"] == "JET_API_KEY"
    env = server_env(deployment.data_dir) | {
        "JET_URL": deployment.url,
        "JET_API_KEY": deployment.key("a"),
    }
    command = str(JET) if desktop["command"] == "jet-memory" else desktop["command"]
    async with Client(StdioServerParameters(command=command, args=desktop["args"], env=env)) as c:
        assert [t.name for t in (await c.list_tools()).tools] == TOOLS


async def test_the_stdio_proxy_reports_a_server_gone_mid_session(
    deployment: Deployment, tmp_path: Path
) -> None:
    """A server that stops while a client is connected: a call is then a tool error saying
    so, not a crash of the proxy, which answers the next call."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(jet_server(deployment.data_dir, tmp_path / "gone.log"))
        env = server_env(deployment.data_dir) | {
            "JET_URL": url,
            "JET_API_KEY": deployment.key("a"),
        }
        params = StdioServerParameters(command=str(JET), args=["mcp"], env=env)
        async with Client(params) as client:
            assert structured(await client.call_tool("search_memory", {"limit": 1}))
            stack.close()  # the server stops (by its PID)
            for _ in range(2):
                failed = error_of(await client.call_tool("search_memory", {"limit": 1}))
                assert failed["code"] == "UNAVAILABLE" and "failed this call" in failed["message"]
