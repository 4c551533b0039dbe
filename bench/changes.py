"""Change events' cost and lag: `python -m bench.changes [--seconds S] [--rounds N]`.

1. The outbox on the append path, raw: one SQLite transaction per group (1 or 50 events),
   the event writer's statements with and without the outbox's INSERT ... SELECT, A/B
   alternating in the same run.
2. End to end, real processes: an API server, an arq worker and Redis; appends over HTTP
   (16 clients) with nothing listening (A) and with one webhook endpoint (a receiver on
   127.0.0.1) and one live memoryChanged subscriber (B), alternating; the API server's CPU
   per append says what B costs the API (the receiver and subscriber share this process).
3. Delivery lag: 500 events/s (50 requests/s of 10) for S seconds with the endpoint and the
   subscriber; lag = arrival time minus the change's time, p50/p95 for each.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite
import httpx
import websockets
from aiohttp import web

from app import ids
from app.embedded_redis import EmbeddedRedis
from app.storage import changes, fulltext
from bench import context as cb
from bench.harness import free_port, load_note, median, new_tenant, pct

ROOT = Path(__file__).resolve().parents[1]
INSERT = (
    "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source, source_ref,"
    " occurred_at, recorded_at) VALUES (?,?,?,?,?,?,?,?,?)"
)
SUBSCRIBE = "subscription { memoryChanged { id type time } }"


async def raw_rate(path: Path, seconds: float, batch: int, then: Sequence[str]) -> float:
    """Appends a second in plain SQLite: the insert and its search index, then each of
    `then` (a writer's statement over the new rows, `:after` the last seq before them)."""
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = NORMAL")
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            now = cb.ts(cb.NOW)
            rows = [(ids.new_id(ids.EVENT), "entity", f"ent_{i % 7}", "note",
                     "Decision: move 20% of the display budget to search.", "raw", None, now, now)
                    for i in range(batch)]  # fmt: skip
            await db.execute("BEGIN IMMEDIATE")
            async with db.execute(fulltext.LAST_EVENT_SEQ_SQL) as cur:
                (after,) = await cur.fetchone()  # type: ignore[misc]
            await db.executemany(INSERT, rows)
            await db.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})
            for sql in then:
                await db.execute(sql, {"after": after})
            await db.execute("COMMIT")
            n += batch
        return n / (time.perf_counter() - t0)


async def part_raw(work: Path, seconds: float, rounds: int) -> dict[str, Any]:
    tenant_id, _ = await new_tenant(work / "raw", "raw")
    path = work / "raw" / "tenants" / f"{tenant_id}.db"
    out: dict[str, Any] = {}
    for batch in (1, 50):
        a, b = [], []
        for _ in range(rounds):
            a.append(await raw_rate(path, seconds, batch, then=[]))
            b.append(await raw_rate(path, seconds, batch, then=[changes.ANNOUNCE_EVENTS_SQL]))
        out[f"batch {batch}"] = {"without": median(a), "with outbox": median(b),
                                 "cost": 1 - median(b) / median(a)}  # fmt: skip
    return out


class Receiver:
    def __init__(self) -> None:
        self.lags: list[float] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/hook"

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.lags.append(time.time() - datetime.fromisoformat(body["time"]).timestamp())
        return web.Response(status=204)


async def subscriber(url: str, key: str, lags: list[float], ready: asyncio.Event) -> None:
    ws_url = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init",
                                  "payload": {"authorization": f"Bearer {key}"}}))  # fmt: skip
        await ws.recv()
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIBE}}))
        ready.set()
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("type") == "next":
                t = msg["payload"]["data"]["memoryChanged"]["time"]
                lags.append(time.time() - datetime.fromisoformat(t).timestamp())


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(
    url: str, key: str, seconds: float, clients: int, pid: int
) -> tuple[float, float, float]:
    """Appends at `clients` at once for `seconds`: requests a second, the median latency
    (ms) and the API server's CPU per request (µs), the cost that does not depend on what
    else shares the machine (the receiver and the subscriber run in this process)."""
    latencies: list[float] = []
    cpu0 = cpu_seconds(pid)
    headers = {"Authorization": f"Bearer {key}"}
    body = {"scope": "entity", "kind": "note", "body": "Budget moves to search."}
    deadline = time.perf_counter() + seconds
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:

        async def one(c: int) -> None:
            i = 0
            while time.perf_counter() < deadline:
                t = time.perf_counter()
                r = await client.post(
                    "/memory/events", json={**body, "scopeRef": f"ent_{c}_{i % 5}"}
                )
                assert r.status_code == 201, r.text
                latencies.append(time.perf_counter() - t)
                i += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(one(c) for c in range(clients)))
    rate = len(latencies) / (time.perf_counter() - t0)
    return rate, median(latencies) * 1000, (cpu_seconds(pid) - cpu0) * 1e6 / len(latencies)


async def paced(url: str, key: str, seconds: float, per_second: int, batch: int) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    sent = 0
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        t0 = time.perf_counter()
        tasks = []
        step = batch / per_second
        k = 0
        while time.perf_counter() - t0 < seconds:
            items = [{"scope": "entity", "scopeRef": f"ent_{(k + j) % 20}", "kind": "note",
                      "body": "paced"} for j in range(batch)]  # fmt: skip
            tasks.append(asyncio.create_task(client.post("/memory/events", json=items)))
            k += batch
            sent += batch
            await asyncio.sleep(max(0.0, t0 + (k / batch) * step - time.perf_counter()))
        for r in await asyncio.gather(*tasks):
            assert r.status_code in (200, 201), r.text
    return sent


def start_processes(
    env: dict[str, str], port: int, work: Path
) -> tuple["subprocess.Popen[bytes]", "subprocess.Popen[bytes]"]:
    """The API server and an arq worker, both on 127.0.0.1's data in `work`."""
    api = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "app.main:create_app",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env, cwd=work,
    )  # fmt: skip
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "arq"), "app.worker.WorkerSettings"],
        env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return api, worker


async def part_e2e(work: Path, seconds: float, rounds: int) -> dict[str, Any]:
    data = work / "e2e"
    tenant_id, key = await new_tenant(data, "e2e")
    redis = EmbeddedRedis(work / "redis", persist=False)
    redis_url = redis.start()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
        "JET_DATA_DIR": str(data), "JET_REDIS_URL": redis_url, "JET_LOG_LEVEL": "warning",
        "JET_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32", "PYTHONPATH": str(ROOT),
        "JET_GRAPHIQL": "false",
    }  # fmt: skip
    api, worker = start_processes(env, port, work)
    rx = Receiver()
    out: dict[str, Any] = {}
    try:
        async with httpx.AsyncClient() as probe:
            for _ in range(300):
                try:
                    if (await probe.get(f"{url}/healthz", timeout=1)).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.2)
        await rx.start()
        a, b = [], []
        for r in range(rounds):
            a.append(await load(url, key, seconds, 16, api.pid))
            async with httpx.AsyncClient(base_url=url) as client:
                made = await client.post("/webhooks", json={"url": rx.url},
                                         headers={"Authorization": f"Bearer {key}"})  # fmt: skip
                assert made.status_code == 201, made.text
                endpoint_id = made.json()["id"]
            sub_lags: list[float] = []
            ready = asyncio.Event()
            sub = asyncio.create_task(subscriber(url, key, sub_lags, ready))
            await asyncio.wait_for(ready.wait(), 30)
            b.append(await load(url, key, seconds, 16, api.pid))
            if r == rounds - 1:
                rx.lags.clear()
                await asyncio.sleep(3)  # let the backlog of the load above drain
                rx.lags.clear()
                sub_lags.clear()
                sent = await paced(url, key, seconds * 2, 500, 10)
                await asyncio.sleep(5)
                out["lag at 500 events/s"] = {
                    "events": sent, "webhook deliveries": len(rx.lags),
                    "webhook p50 s": pct(rx.lags, 50), "webhook p95 s": pct(rx.lags, 95),
                    "subscriber changes": len(sub_lags),
                    "subscriber p50 s": pct(sub_lags, 50), "subscriber p95 s": pct(sub_lags, 95),
                }  # fmt: skip
            sub.cancel()
            async with httpx.AsyncClient(base_url=url) as client:
                await client.delete(f"/webhooks/{endpoint_id}",
                                    headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        ra, rb = median([x[0] for x in a]), median([x[0] for x in b])
        la, lb = median([x[1] for x in a]), median([x[1] for x in b])
        ca, cb = median([x[2] for x in a]), median([x[2] for x in b])
        out["appends over HTTP, 16 clients"] = {
            "alone req/s": ra, "with endpoint+subscriber req/s": rb,
            "p50 ms alone": la, "p50 ms with": lb, "cost (1 - rate ratio)": 1 - rb / ra,
            "API CPU us/append alone": ca, "API CPU us/append with": cb,
            "cost (API CPU ratio - 1)": cb / ca - 1,
            # Each round's B against its own A: the machine's speed drifts between rounds.
            "cost, median of the rounds' API CPU ratios - 1": median(
                [y[2] / x[2] for x, y in zip(a, b, strict=True)]
            ) - 1,
            "rounds": [{"alone": x, "with": y} for x, y in zip(a, b, strict=True)],
        }  # fmt: skip
    finally:
        for proc in (worker, api):
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        redis.stop()
        if rx.runner is not None:
            await rx.runner.cleanup()
    del tenant_id
    return out


async def main(seconds: float, rounds: int) -> None:
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        raw = await part_raw(work, seconds, rounds)
        print(json.dumps({"outbox on the append path (raw SQLite)": raw}, indent=2))
        e2e = await part_e2e(work, seconds, rounds)
        print(json.dumps(e2e, indent=2))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    asyncio.run(main(a.seconds, a.rounds))
