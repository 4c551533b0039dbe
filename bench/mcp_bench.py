"""MCP against GraphQL in the same run: a recall vs the same memoryContext, a remember vs
the same appendMemoryEvent (target: MCP at most 1.5x GraphQL on each). Not bench/mcp_bench.py:
uvicorn's --app-dir bench puts this folder on sys.path, where that name hides the SDK.

    python -m bench.mcp_bench            # 5 rounds of 300 requests per case
    python -m bench.mcp_bench --short    # 3 rounds of 100

One real server (bench/harness.py's Server: uvicorn as `jet-memory serve` runs it) over a
tenant seeded with 300 entries and 300 events. One client process, one keep-alive
connection, requests one at a time; the cases alternate within each round, so load on this
shared machine falls on all of them alike. MCP requests are what an SDK client sends after
initialize (a JSON-RPC tools/call with the MCP-Protocol-Version header): the server's work,
without a client library's own. Figures: median latency and the server's CPU per request.
"""

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from app.config import Settings
from app.deps import build
from app.services import entries, events
from app.services.records import EntryIn, EventIn, Scope
from bench.harness import Row, Server, load_note, markdown_table, median, new_tenant, pct
from bench.harness import proc_cpu_seconds as cpu_seconds

SEED = 300
SCOPE_REF = "acct-1"
QUERY = "renewal pricing decision"
MAX_TOKENS = 1000
# Both protocol eras the server speaks: what the SDK's client sends after the 2025
# initialize handshake, and (its default) the 2026-07-28 stateless requests.
ERAS = ("2025-11-25", "2026-07-28")
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
CONTEXT = """query($ref: String, $q: String, $t: Int) {
  memoryContext(scope: ENTITY, scopeRef: $ref, query: $q, maxTokens: $t) {
    markdown tokens truncated entries { id } events { id } } }"""
APPEND = """mutation($i: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $i) { replayed event { id } errors { code field message } } }"""
WORDS = "renewal pricing decision budget churn onboarding escalation contract launch".split()


async def seed(data_dir: Path, tenant_id: str) -> None:
    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        async with container.tenants.lease(tenant_id) as db:
            for i in range(SEED):
                words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4))
                await entries.create_entry(
                    db,
                    EntryIn(
                        Scope.ENTITY,
                        SCOPE_REF if i % 3 else f"acct-{i}",
                        f"Fact {i}: {words}",
                        f"Account note {i} about {words}. " * 4,
                        tags=[WORDS[i % len(WORDS)]],
                        importance=1 + i % 5,
                    ),
                )
            await events.append_events(
                db,
                [
                    EventIn(Scope.ENTITY, SCOPE_REF, "call_summary", f"Call {i}: {WORDS[i % 9]}.")
                    for i in range(SEED)
                ],
            )
    finally:
        await container.aclose()


def mcp_request(era: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """httpx.post keyword arguments of a tools/call as the SDK's client sends it in `era`."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": era}
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era != ERAS[0]:
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
        params["_meta"] = MODERN_META
    return {
        "headers": headers,
        "json": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
    }


def cases(client: httpx.Client) -> dict[str, Callable[[int], None]]:
    """Each case: one request, checked (a failed request is an error, not a fast figure)."""

    recall = {"scope": "entity", "scopeRef": SCOPE_REF, "query": QUERY, "maxTokens": MAX_TOKENS}
    context = {"query": CONTEXT, "variables": {"ref": SCOPE_REF, "q": QUERY, "t": MAX_TOKENS}}
    event = {"scope": "entity", "scopeRef": SCOPE_REF, "kind": "note"}

    def recall_mcp(era: str) -> Callable[[int], None]:
        def run(_: int) -> None:
            result = client.post("/mcp", **mcp_request(era, "recall", recall)).json()["result"]
            assert not result["isError"] and result["structuredContent"]["entryIds"], result

        return run

    def context_gql(_: int) -> None:
        answer = client.post("/graphql", json=context)
        assert answer.json()["data"]["memoryContext"]["entries"], answer.text

    def remember_mcp(era: str) -> Callable[[int], None]:
        def run(i: int) -> None:
            arguments = event | {"body": f"Bench note {i}"}
            answer = client.post("/mcp", **mcp_request(era, "remember", arguments))
            result = answer.json()["result"]
            assert not result["isError"], result

        return run

    def append_gql(i: int) -> None:
        variables = {"i": event | {"scope": "ENTITY", "body": f"Bench note {i}"}}
        answer = client.post("/graphql", json={"query": APPEND, "variables": variables})
        assert answer.json()["data"]["appendMemoryEvent"]["errors"] == [], answer.text

    return {
        **{f"recall (MCP {era})": recall_mcp(era) for era in ERAS},
        "memoryContext (GraphQL)": context_gql,
        **{f"remember (MCP {era})": remember_mcp(era) for era in ERAS},
        "appendMemoryEvent (GraphQL)": append_gql,
    }


def measure(server: Server, key: str, rounds: int, per_round: int) -> dict[str, dict[str, float]]:
    latencies: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        work = cases(client)
        for fn in work.values():  # warm up: first requests open the tenant, fill caches
            for i in range(20):
                fn(i)
        n = 0
        for _ in range(rounds):
            for name, fn in work.items():
                before = cpu_seconds(server.pid)
                for _ in range(per_round):
                    n += 1
                    started = time.perf_counter()
                    fn(n)
                    latencies.setdefault(name, []).append(time.perf_counter() - started)
                cpu[name] = cpu.get(name, 0.0) + cpu_seconds(server.pid) - before
    return {
        name: {
            "p50_ms": median(samples) * 1000,
            "p90_ms": pct(samples, 90) * 1000,
            "cpu_ms": cpu[name] / len(samples) * 1000,
            "n": len(samples),
        }
        for name, samples in latencies.items()
    }


def rows(figures: dict[str, dict[str, float]], command: str) -> list[Row]:
    out = []
    pairs = [
        (f"{tool} (MCP {era})", gql)
        for tool, gql in (
            ("recall", "memoryContext (GraphQL)"),
            ("remember", "appendMemoryEvent (GraphQL)"),
        )
        for era in ERAS
    ]
    for mcp, gql in pairs:
        for metric, unit in (("p50_ms", "ms p50"), ("cpu_ms", "ms server CPU/request")):
            ratio = figures[mcp][metric] / figures[gql][metric]
            out.append(
                Row(
                    mcp,
                    metric,
                    figures[mcp][metric],
                    unit,
                    figures[gql][metric],
                    gql,
                    ratio,
                    "<= 1.5x",
                    ratio <= 1.5,
                    command,
                )
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="3 rounds of 100 requests")
    args = parser.parse_args()
    rounds, per_round = (3, 100) if args.short else (5, 300)
    command = "python -m bench.mcp_bench" + (" --short" if args.short else "")
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as work:
        print(f"server log: {work}/server.log (kept while running)")
        data_dir = Path(work) / "data"
        tenant_id, key = asyncio.run(new_tenant(data_dir, "bench"))
        asyncio.run(seed(data_dir, tenant_id))
        with Server(
            data_dir=data_dir, log_path=Path(work) / "server.log", access_log=False
        ) as server:
            figures = measure(server, key, rounds, per_round)
    print(json.dumps(figures, indent=2))
    print(markdown_table(rows(figures, command)))
    print(load_note())


if __name__ == "__main__":
    main()
