"""Change events' cost and lag: `python -m bench.changes [--seconds S] [--rounds N]`.

1. The outbox on the append path, raw: one SQLite transaction per group (1 or 50 events),
   the event writer's statements with and without the outbox's INSERT ... SELECT, A and B
   alternating transaction by transaction (the first of each pair alternating too); the
   cost is the median of the pairs' time ratios.
2. End to end, real processes: two identical stacks (each its own Redis, API server and
   arq worker) loaded at the same time over HTTP (--clients each), one with nothing
   listening (A) and the other with one webhook endpoint (a receiver on 127.0.0.1) and one
   live memoryChanged subscriber (B), the roles swapped each round; each round's ratio of
   the two API servers' CPU per append says what B costs the API, at the very same
   machine speed (the receiver and subscriber share this process).
3. Delivery lag: 500 events/s (50 requests/s of 10) for 2·S seconds into B's stack with the
   endpoint and the subscriber; lag = arrival time minus the change's time, p50/p95.
"""

import argparse
import asyncio
import contextlib
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

import aiohttp
import aiosqlite
import httpx
import websockets
from aiohttp import web

from app import ids
from app.processes.embedded_redis import EmbeddedRedis
from app.storage.changes import outbox
from app.storage.search import fulltext
from bench import context as cb
from bench.harness import free_port, load_note, median, new_tenant, pct

ROOT = Path(__file__).resolve().parents[1]
INSERT = (
    "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source, source_ref,"
    " occurred_at, recorded_at) VALUES (?,?,?,?,?,?,?,?,?)"
)
SUBSCRIBE = "subscription { memoryChanged { id type time } }"


async def _append_group(db: aiosqlite.Connection, batch: int, then: Sequence[str]) -> None:
    """One writer's transaction: `batch` events and their search index, then each of
    `then` (a writer's statement over the new rows, `:after` the last seq before them)."""
    now = cb.ts(cb.NOW)
    rows = [
        (
            ids.new_id(ids.EVENT),
            "entity",
            f"ent_{i % 7}",
            "note",
            "Decision: move 20% of the display budget to search.",
            "raw",
            None,
            now,
            now,
        )
        for i in range(batch)
    ]
    await db.execute("BEGIN IMMEDIATE")
    async with db.execute(fulltext.LAST_EVENT_SEQ_SQL) as cur:
        (after,) = await cur.fetchone()  # type: ignore[misc]
    await db.executemany(INSERT, rows)
    await db.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})
    for sql in then:
        await db.execute(sql, {"after": after})
    await db.execute("COMMIT")


async def _connect(path: Path) -> aiosqlite.Connection:
    db = await aiosqlite.connect(path, isolation_level=None)
    await db.execute("PRAGMA journal_mode = WAL")
    await db.execute("PRAGMA synchronous = NORMAL")
    return db


async def raw_pairs(
    path: Path, seconds: float, batch: int, a: Sequence[str], b: Sequence[str]
) -> tuple[list[float], list[float]]:
    """Transactions without (`a`) and with (`b`) the extra statements, alternating one by
    one for `seconds`, the first of each pair alternating too, so both sides see the same
    machine speed and their share of WAL checkpoints: each side's seconds per transaction."""
    db = await _connect(path)
    try:
        times: tuple[list[float], list[float]] = ([], [])
        t0, b_first = time.perf_counter(), False
        while time.perf_counter() - t0 < seconds:
            for side in (1, 0) if b_first else (0, 1):
                started = time.perf_counter()
                await _append_group(db, batch, (a, b)[side])
                times[side].append(time.perf_counter() - started)
            b_first = not b_first
        return times
    finally:
        await db.close()


async def raw_cost(
    work: Path, seconds: float, rounds: int, a: Sequence[str], b: Sequence[str], added: str
) -> dict[str, Any]:
    """What `b`'s statements cost a raw append transaction over `a`'s, for groups of 1 and 50
    events on a new tenant: `rounds` runs of `raw_pairs`, each side's median and the median
    of the pairs' ratios (`added` names the extra work in the keys)."""
    tenant_id, _ = await new_tenant(work / "raw", "raw")
    path = work / "raw" / "tenants" / f"{tenant_id}.db"
    out: dict[str, Any] = {}
    for batch in (1, 50):
        ta: list[float] = []
        tb: list[float] = []
        for _ in range(rounds):
            pa, pb = await raw_pairs(path, seconds, batch, a, b)
            ta += pa
            tb += pb
        ratios = [y / x for x, y in zip(ta, tb, strict=True)]
        out[f"batch {batch}"] = {
            "pairs": len(ratios),
            "without, ms a transaction": round(1000 * median(ta), 3),
            f"with {added}, ms a transaction": round(1000 * median(tb), 3),
            "cost (median of the pairs' ratios)": round(median(ratios) - 1, 3),
        }
    return out


async def part_raw(work: Path, seconds: float, rounds: int) -> dict[str, Any]:
    return await raw_cost(work, seconds, rounds, [], [outbox.ANNOUNCE_EVENTS_SQL], "outbox")


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
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {key}"}})
        )
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


class Stack:
    """One deployment of real processes: its own data, Redis, API server and arq worker."""

    def __init__(self, work: Path, name: str) -> None:
        self.work = work / name
        self.name = name
        self.key = ""
        self.url = ""
        self.redis = EmbeddedRedis(self.work / "redis", persist=False)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.endpoint_id: str | None = None
        self.sub: asyncio.Task[None] | None = None
        self.sub_lags: list[float] = []

    @property
    def api_pid(self) -> int:
        return self.procs[0].pid

    async def start(self) -> None:
        data = self.work / "data"
        _, self.key = await new_tenant(data, self.name)
        redis_url = self.redis.start()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
            "JET_DATA_DIR": str(data),
            "JET_REDIS_URL": redis_url,
            "JET_LOG_LEVEL": "warning",
            "JET_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
            "PYTHONPATH": str(ROOT),
            "JET_GRAPHIQL": "false",
        }
        self.procs = list(start_processes(env, port, self.work))
        async with httpx.AsyncClient() as probe:
            for _ in range(300):
                try:
                    if (await probe.get(f"{self.url}/healthz", timeout=1)).status_code == 200:
                        return
                except httpx.TransportError:
                    await asyncio.sleep(0.2)
        raise RuntimeError(f"{self.name}: the API server did not start")

    async def listen(self, rx: "Receiver", what: Sequence[str]) -> None:
        """One webhook endpoint (to `rx`) and one live memoryChanged subscriber (`what`)."""
        if "endpoint" in what:
            headers = {"Authorization": f"Bearer {self.key}"}
            async with httpx.AsyncClient(base_url=self.url, headers=headers) as client:
                made = await client.post("/webhooks", json={"url": rx.url})
                assert made.status_code == 201, made.text
                self.endpoint_id = made.json()["id"]
        self.sub_lags = []
        if "subscriber" not in what:
            return
        ready = asyncio.Event()
        self.sub = asyncio.create_task(subscriber(self.url, self.key, self.sub_lags, ready))
        await asyncio.wait_for(ready.wait(), 30)

    async def unlisten(self) -> None:
        if self.sub is not None:
            self.sub.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.sub
            self.sub = None
        if self.endpoint_id is not None:
            async with httpx.AsyncClient(base_url=self.url) as client:
                await client.delete(
                    f"/webhooks/{self.endpoint_id}", headers={"Authorization": f"Bearer {self.key}"}
                )
            self.endpoint_id = None

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.redis.stop()


async def load(stack: Stack, seconds: float, clients: int) -> tuple[float, float, float]:
    """Appends at `clients` at once for `seconds`: requests a second, the median latency
    (ms) and the API server's CPU per request (µs). The clients are aiohttp's: httpx's
    would cost this process several times the server's CPU per request."""
    latencies: list[float] = []
    pid = stack.api_pid
    cpu0 = cpu_seconds(pid)
    headers = {"Authorization": f"Bearer {stack.key}"}
    body = {"scope": "entity", "kind": "note", "body": "Budget moves to search."}
    deadline = time.perf_counter() + seconds
    async with aiohttp.ClientSession(base_url=stack.url, headers=headers) as client:

        async def one(c: int) -> None:
            i = 0
            while time.perf_counter() < deadline:
                t = time.perf_counter()
                item = {**body, "scopeRef": f"ent_{c}_{i % 5}"}
                async with client.post("/memory/events", json=item) as r:
                    assert r.status == 201, await r.text()
                    await r.read()
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
            items = [
                {
                    "scope": "entity",
                    "scopeRef": f"ent_{(k + j) % 20}",
                    "kind": "note",
                    "body": "paced",
                }
                for j in range(batch)
            ]
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
    """The API server (as `jet-memory serve` runs it: one process) and an arq worker, both
    on 127.0.0.1's data in `work`."""
    api = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "jet-memory"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env=env,
        cwd=work,
    )
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "arq"), "app.worker.WorkerSettings"],
        env=env,
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return api, worker


async def part_e2e(
    work: Path, seconds: float, rounds: int, clients: int, what: Sequence[str]
) -> dict[str, Any]:
    """Two identical stacks loaded at the same time, one of them with an endpoint and a
    subscriber (the other one each round): the machine's speed, which drifts 2x within
    minutes on a shared host, is the same for both sides of each round's ratio."""
    stacks = [Stack(work, "left"), Stack(work, "right")]
    rx = Receiver()
    out: dict[str, Any] = {}
    try:
        for s in stacks:
            await s.start()
        await rx.start()
        for s in stacks:  # a first load of each, listened to, warms its connections and caches
            await s.listen(rx, what)
            await load(s, 1, clients)
            await s.unlisten()
        a, b = [], []
        for r in range(rounds):
            listening, alone = stacks[r % 2], stacks[1 - r % 2]
            await listening.listen(rx, what)
            with_, without = await asyncio.gather(
                load(listening, seconds, clients), load(alone, seconds, clients)
            )
            a.append(without)
            b.append(with_)
            if r == rounds - 1 and len(what) == 2:
                await asyncio.sleep(3)  # let the backlog of the load above drain
                rx.lags.clear()
                listening.sub_lags.clear()
                sent = await paced(listening.url, listening.key, seconds * 2, 500, 10)
                await asyncio.sleep(5)
                out["lag at 500 events/s"] = {
                    "events": sent,
                    "webhook deliveries": len(rx.lags),
                    "webhook p50 s": pct(rx.lags, 50),
                    "webhook p95 s": pct(rx.lags, 95),
                    "subscriber changes": len(listening.sub_lags),
                    "subscriber p50 s": pct(listening.sub_lags, 50),
                    "subscriber p95 s": pct(listening.sub_lags, 95),
                }
            await listening.unlisten()
            await asyncio.sleep(2)  # the worker's backlog of deliveries, out of the next round
        ratios = [y[2] / x[2] for x, y in zip(a, b, strict=True)]
        out[f"appends over HTTP, {clients} clients per stack, both stacks at once"] = {
            "alone req/s": median([x[0] for x in a]),
            "with endpoint+subscriber req/s": median([y[0] for y in b]),
            "p50 ms alone": median([x[1] for x in a]),
            "p50 ms with": median([y[1] for y in b]),
            "API CPU us/append alone": median([x[2] for x in a]),
            "API CPU us/append with": median([y[2] for y in b]),
            "cost: median of the rounds' API CPU ratios - 1": median(ratios) - 1,
            "rounds' API CPU ratios": ratios,
            "cost: median of the rounds' rate ratios (1 - with/alone)": 1
            - median([y[0] / x[0] for x, y in zip(a, b, strict=True)]),
            "rounds": [{"alone": x, "with": y} for x, y in zip(a, b, strict=True)],
        }
    finally:
        for s in stacks:
            await s.unlisten()
            s.stop()
        if rx.runner is not None:
            await rx.runner.cleanup()
    return out


async def main(
    seconds: float, rounds: int, clients: int, parts: Sequence[str], listen: Sequence[str]
) -> None:
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "raw" in parts:
            raw = await part_raw(work, seconds, rounds)
            print(json.dumps({"outbox on the append path (raw SQLite)": raw}, indent=2))
        if "e2e" in parts:
            e2e = await part_e2e(work, seconds, rounds, clients, listen)
            print(json.dumps(e2e, indent=2))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", type=int, default=8, help="appending at once, per stack")
    p.add_argument("--parts", nargs="+", choices=["raw", "e2e"], default=["raw", "e2e"])
    p.add_argument(
        "--listen",
        nargs="+",
        choices=["endpoint", "subscriber"],
        default=["endpoint", "subscriber"],
        help="what B's stack has",
    )
    a = p.parse_args()
    asyncio.run(main(a.seconds, a.rounds, a.clients, a.parts, a.listen))
