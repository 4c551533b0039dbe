"""Soak: mixed concurrent load on a real `jet-memory serve`, then zero lost, zero duplicated.

    .venv/bin/python -m bench.soak                 # 60 s, 3 tenants, 16 concurrent clients
    .venv/bin/python -m bench.soak --seconds 10 --json out.json

Starts one `jet-memory serve` (one uvicorn process) on 127.0.0.1 and a throwaway data dir
with N tenants (made by `jet-memory tenants create`), and drives it from this process (a
separate one) with a mix of: REST and GraphQL appends with idempotency keys (some retried
after they were acknowledged, some sent twice at once, as a sender that timed out does),
REST batches (some retried), entry creates and updates (REST and GraphQL, optimistic
versions), entry and event searches, memoryContext, and event lists paged with cursors
(a page must never repeat an id). At the end it stops the server by PID and reads every
tenant's SQLite file directly:

  lost        an append acknowledged with a 2xx whose idempotency key is not stored, or is
              stored under another event id than the one acknowledged
  duplicated  an idempotency key stored more than once (it is UNIQUE, so this checks the
              schema as much as the code), or an event id acknowledged for two keys
  errors      any 5xx, transport error or unexpected status

and prints throughput and latency (median, p95) per operation. Exit status 0 only when
lost, duplicated and errors are all zero. Every loop is bounded by the deadline and the
server is always stopped.

It also samples the server's RSS every `--rss-every` seconds and draws it (a text chart,
with the slope of each half of the run in MiB a minute): a soak is also where a leak shows.
`--probe-every S` serves through bench/memory_probe.py, which writes what the process
holds (heap, SQLite, caches' lengths; tracemalloc's growth with `--probe-frames N`) to
`--probe-out`.
"""

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

JET = Path(sys.executable).parent / "jet-memory"
STARTUP_SECONDS = 120.0  # the model loads in ~10 s: several times that on a busy machine
REQUEST_TIMEOUT = 30.0

GQL_APPEND = """mutation($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) { replayed event { id } errors { code message } } }"""
GQL_UPDATE = """mutation($id: ID!, $input: UpdateMemoryEntryInput!) {
  updateMemoryEntry(id: $id, input: $input) { entry { id version } errors { code } } }"""
GQL_CONTEXT = """query($ref: String!, $q: String) {
  memoryContext(scope: ENTITY, scopeRef: $ref, query: $q, maxTokens: 800) {
    tokens truncated entries { id } events { id } } }"""
GQL_SEARCH_EVENTS = """query($q: String!) {
  memoryEvents(filter: {search: $q}, first: 10) { edges { node { id } } } }"""

WORDS = (
    "roas budget tiktok campaign search display acme decision target spring "
    "creative audience churn renewal pricing launch meeting call summary"
).split()
REFS = [f"ent_{i}" for i in range(8)]


@dataclass
class Tenant:
    id: str
    key: str
    # idempotency key -> acknowledged event id (every 2xx answer of an append)
    acked: dict[str, str] = field(default_factory=dict)
    entries: dict[str, int] = field(default_factory=dict)  # entry id -> version we know

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)  # a key acked as two event ids
    retries: int = 0
    replays: int = 0
    pages: int = 0

    def error(self, text: str) -> None:
        if len(self.errors) < 50:
            self.errors.append(text)
        else:
            self.errors.append("…")
            del self.errors[50:-1]


# ------------------------------------------------------------------------ the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(env: dict[str, str], cwd: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [str(JET), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"jet-memory {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()


def make_tenant(env: dict[str, str], cwd: Path, name: str) -> Tenant:
    cli(env, cwd, "migrate")  # the CLI creates no control database but by migrate or dev
    lines = cli(env, cwd, "tenants", "create", name)
    match = re.search(r"tenant (ten_\w+)", lines[0])
    assert match, lines
    return Tenant(match.group(1), lines[-1].strip())


def start_server(
    env: dict[str, str], cwd: Path, port: int, probe: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """`jet-memory serve`, or with `probe` (memory_probe.py's options) the same command
    through bench/memory_probe.py."""
    log = (cwd / "serve.log").open("wb")
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port)]
    command = (
        [str(JET), *serve]
        if probe is None
        else [
            sys.executable,
            str(Path(__file__).with_name("memory_probe.py")),
            *probe,
            "--",
            *serve,
        ]
    )
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited:\n{(cwd / 'serve.log').read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
            log_text = (cwd / "serve.log").read_text()
            raise SystemExit(f"no /healthz in {STARTUP_SECONDS}s:\n{log_text}")
        time.sleep(0.05)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RssSampler(threading.Thread):
    """The server's RSS every `every` seconds (from /proc), as (seconds, MiB) pairs."""

    def __init__(self, pid: int, every: float) -> None:
        super().__init__(daemon=True, name="rss")
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, float]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while True:
            try:
                with open(f"/proc/{self.pid}/status") as status:
                    kib = next(int(ln.split()[1]) for ln in status if ln.startswith("VmRSS:"))
            except (OSError, StopIteration):
                return  # the server has gone
            self.samples.append((round(time.monotonic() - started, 1), round(kib / 1024, 1)))
            if self.stopped.wait(self.every):
                return


def slope(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MiB) samples, in MiB a minute."""
    if len(samples) < 2:
        return None
    return round(statistics.linear_regression(*zip(*samples, strict=True)).slope * 60, 3)


def rss_summary(samples: list[tuple[float, float]]) -> dict[str, Any]:
    if not samples:
        return {"samples": []}
    end = samples[-1][0]
    first = [s for s in samples if s[0] <= end / 2]
    second = [s for s in samples if s[0] >= end / 2]
    return {
        "samples": samples,
        "first_mib": samples[0][1],
        "last_mib": samples[-1][1],
        "max_mib": max(mib for _, mib in samples),
        "first_half_mib_per_min": slope(first),
        "second_half_mib_per_min": slope(second),
        "second_half_min_mib": min(mib for _, mib in second),
        "second_half_max_mib": max(mib for _, mib in second),
    }


def rss_chart(samples: list[tuple[float, float]], width: int = 60, height: int = 12) -> str:
    """A text chart of RSS against minutes: a trend is read from a drawing, not a table."""
    if len(samples) < 2:
        return ""
    end = samples[-1][0] or 1.0
    low = min(mib for _, mib in samples)
    high = max(mib for _, mib in samples)
    span = max(high - low, 1.0)
    grid = [[" "] * width for _ in range(height)]
    for seconds, mib in samples:
        x = min(width - 1, int(seconds / end * (width - 1) + 0.5))
        y = min(height - 1, int((mib - low) / span * (height - 1) + 0.5))
        grid[height - 1 - y][x] = "*"
    lines = []
    for i, row in enumerate(grid):
        label = high - i * span / (height - 1)
        lines.append(f"{label:7.0f} |{''.join(row)}")
    lines.append(f"{'MiB':>7} +{'-' * width}")
    digits = 0 if end >= 600 else 1
    ticks = f"0{end / 120:>{width // 2}.{digits}f}{end / 60:>{width - width // 2}.{digits}f}"
    lines.append(f"{'':8}{ticks}  min")
    return "\n".join(lines)


# -------------------------------------------------------------------------- the load


class Load:
    def __init__(self, client: httpx.AsyncClient, tenants: list[Tenant], seed: int) -> None:
        self.client = client
        self.tenants = tenants
        self.stats = Stats()
        self.rng = random.Random(seed)
        self.seq = 0

    def _key(self, worker: int) -> str:
        self.seq += 1
        return f"soak-{worker}-{self.seq}"

    def _event(self, key: str) -> dict[str, Any]:
        words = " ".join(self.rng.choices(WORDS, k=self.rng.randint(5, 40)))
        return {
            "scope": "entity",
            "scopeRef": self.rng.choice(REFS),
            "kind": self.rng.choice(["note", "decision", "call_summary"]),
            "body": f"{words} ({key})",
            "idempotencyKey": key,
        }

    async def _call(
        self,
        op: str,
        tenant: Tenant,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            hdrs = {**tenant.headers, **(headers or {})}
            r = await self.client.request(method, path, json=json_body, headers=hdrs)
        except httpx.HTTPError as exc:
            self.stats.error(f"{op}: {type(exc).__name__}: {exc}")
            self.stats.statuses[(op, 0)] += 1
            return None
        self.stats.latencies[op].append((time.perf_counter() - started) * 1000)
        self.stats.statuses[(op, r.status_code)] += 1
        if r.status_code >= 500:
            self.stats.error(f"{op}: {r.status_code} {r.text[:300]}")
            return None
        return r

    def _ack(self, tenant: Tenant, key: str, event_id: str) -> None:
        known = tenant.acked.setdefault(key, event_id)
        if known != event_id:
            self.stats.mismatches.append(f"{tenant.id} {key}: {known} then {event_id}")

    def _expect(self, op: str, r: httpx.Response, *ok: int) -> bool:
        if r.status_code in ok:
            return True
        self.stats.error(f"{op}: unexpected {r.status_code} {r.text[:300]}")
        return False

    # --- appends

    async def rest_append(self, t: Tenant, worker: int) -> None:
        key = self._key(worker)
        body = self._event(key)
        del body["idempotencyKey"]
        hdrs = {"Idempotency-Key": key}
        rs: list[httpx.Response | None]
        if self.rng.random() < 0.15:  # a sender that timed out: the same delivery twice at once
            rs = list(
                await asyncio.gather(
                    *(
                        self._call(
                            "append_rest", t, "POST", "/memory/events", json_body=body, headers=hdrs
                        )
                        for _ in range(2)
                    )
                )
            )
            self.stats.retries += 1
        else:
            rs = [
                await self._call(
                    "append_rest", t, "POST", "/memory/events", json_body=body, headers=hdrs
                )
            ]
        if rs[0] is not None and rs[0].status_code in (200, 201) and self.rng.random() < 0.2:
            self.stats.retries += 1  # acknowledged, then delivered again
            rs.append(
                await self._call(
                    "append_rest", t, "POST", "/memory/events", json_body=body, headers=hdrs
                )
            )
        for r in rs:
            if r is not None and self._expect("append_rest", r, 200, 201):
                self._ack(t, key, r.json()["id"])
                self.stats.replays += r.status_code == 200

    async def gql_append(self, t: Tenant, worker: int) -> None:
        key = self._key(worker)
        payload = {
            "query": GQL_APPEND,
            "variables": {"input": {**self._event(key), "scope": "ENTITY"}},
        }
        tries = 2 if self.rng.random() < 0.2 else 1
        for _ in range(tries):
            r = await self._call("append_gql", t, "POST", "/graphql", json_body=payload)
            if r is None or not self._expect("append_gql", r, 200):
                continue
            data = r.json()
            result = (data.get("data") or {}).get("appendMemoryEvent")
            if data.get("errors") or not result or result["errors"]:
                self.stats.error(f"append_gql: {json.dumps(data)[:300]}")
                continue
            self._ack(t, key, result["event"]["id"])
            self.stats.replays += bool(result["replayed"])
        self.stats.retries += tries - 1

    async def rest_batch(self, t: Tenant, worker: int) -> None:
        events = [self._event(self._key(worker)) for _ in range(self.rng.randint(2, 8))]
        tries = 2 if self.rng.random() < 0.2 else 1
        for _ in range(tries):
            r = await self._call("batch_rest", t, "POST", "/memory/events", json_body=events)
            if r is not None and self._expect("batch_rest", r, 200, 201):
                items = r.json()
                items = items["items"] if isinstance(items, dict) else items
                for e, item in zip(events, items, strict=True):
                    self._ack(t, e["idempotencyKey"], item["id"])
        self.stats.retries += tries - 1

    # --- entries

    async def create_entry(self, t: Tenant, _: int) -> None:
        body = {
            "scope": "entity",
            "scopeRef": self.rng.choice(REFS),
            "title": " ".join(self.rng.choices(WORDS, k=4)).capitalize(),
            "summary": " ".join(self.rng.choices(WORDS, k=30)),
            "tags": self.rng.sample(["decision", "roas", "budget", "risk"], k=2),
            "importance": self.rng.randint(1, 5),
        }
        r = await self._call("entry_create", t, "POST", "/memory", json_body=body)
        if r is not None and self._expect("entry_create", r, 201):
            t.entries[r.json()["id"]] = r.json()["version"]

    async def update_entry(self, t: Tenant, _: int) -> None:
        if not t.entries:
            return await self.create_entry(t, _)
        entry_id = self.rng.choice(list(t.entries))
        version = t.entries[entry_id]
        if self.rng.random() < 0.5:
            r = await self._call(
                "entry_update_rest",
                t,
                "PUT",
                f"/memory/{entry_id}",
                json_body={"importance": self.rng.randint(1, 5)},
                headers={"If-Match": f'"{version}"'},
            )
            # 412: another client updated it first (optimistic concurrency doing its job).
            ok = r is not None and self._expect("entry_update_rest", r, 200, 412)
            if ok and r is not None and r.status_code == 200:
                t.entries[entry_id] = r.json()["version"]
            return None
        variables = {
            "id": entry_id,
            "input": {"importance": self.rng.randint(1, 5), "expectedVersion": version},
        }
        r = await self._call(
            "entry_update_gql",
            t,
            "POST",
            "/graphql",
            json_body={"query": GQL_UPDATE, "variables": variables},
        )
        if r is not None and self._expect("entry_update_gql", r, 200):
            data = r.json()
            result = (data.get("data") or {}).get("updateMemoryEntry")
            if data.get("errors") or not result:
                self.stats.error(f"entry_update_gql: {json.dumps(data)[:300]}")
            elif result["entry"]:
                t.entries[entry_id] = result["entry"]["version"]
            elif [e["code"] for e in result["errors"]] != ["CONFLICT"]:
                self.stats.error(f"entry_update_gql: {result['errors']}")
        return None

    # --- reads

    async def search_entries(self, t: Tenant, _: int) -> None:
        q = " ".join(self.rng.choices(WORDS, k=3))
        r = await self._call("search_entries", t, "GET", f"/memory?search={q}&limit=10")
        if r is not None:
            self._expect("search_entries", r, 200)

    async def search_events(self, t: Tenant, _: int) -> None:
        q = " ".join(self.rng.choices(WORDS, k=3))
        payload = {"query": GQL_SEARCH_EVENTS, "variables": {"q": q}}
        r = await self._call("search_events_gql", t, "POST", "/graphql", json_body=payload)
        if r is not None and self._expect("search_events_gql", r, 200) and r.json().get("errors"):
            self.stats.error(f"search_events_gql: {r.text[:300]}")

    async def context(self, t: Tenant, _: int) -> None:
        variables = {"ref": self.rng.choice(REFS), "q": " ".join(self.rng.choices(WORDS, k=5))}
        r = await self._call(
            "memory_context",
            t,
            "POST",
            "/graphql",
            json_body={"query": GQL_CONTEXT, "variables": variables},
        )
        if r is not None and self._expect("memory_context", r, 200) and r.json().get("errors"):
            self.stats.error(f"memory_context: {r.text[:300]}")

    async def list_pages(self, t: Tenant, _: int) -> None:
        """Pages of the log while appends go on: no id twice (cursor stability)."""
        seen: set[str] = set()
        cursor: str | None = None
        ref = self.rng.choice(REFS)
        for _page in range(4):
            path = f"/memory/events?scope=entity&scopeRef={ref}&limit=25"
            if cursor:
                path += f"&cursor={cursor}"
            r = await self._call("list_events", t, "GET", path)
            if r is None or not self._expect("list_events", r, 200):
                return
            page = r.json()
            self.stats.pages += 1
            ids = [item["id"] for item in page["items"]]
            if seen & set(ids):
                self.stats.error(f"list_events: a page repeated {sorted(seen & set(ids))[:3]}")
            seen.update(ids)
            cursor = page.get("nextCursor")
            if not cursor:
                return

    async def worker(self, worker: int, deadline: float) -> None:
        ops = [
            (self.rest_append, 30),
            (self.gql_append, 12),
            (self.rest_batch, 8),
            (self.create_entry, 6),
            (self.update_entry, 6),
            (self.search_entries, 12),
            (self.search_events, 8),
            (self.context, 8),
            (self.list_pages, 10),
        ]
        fns, weights = zip(*ops, strict=True)
        while time.monotonic() < deadline:
            op = self.rng.choices(fns, weights)[0]
            await op(self.rng.choice(self.tenants), worker)


async def run_load(
    base_url: str, tenants: list[Tenant], seconds: float, concurrency: int, seed: int
) -> tuple[Load, float]:
    n = concurrency * 2
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT, limits=limits) as c:
        load = Load(c, tenants, seed)
        started = time.monotonic()
        deadline = started + seconds
        # Bounded: every worker stops at the deadline; a hung request times out after
        # REQUEST_TIMEOUT, and the whole run is cut off at deadline + 2 timeouts.
        await asyncio.wait_for(
            asyncio.gather(*(load.worker(i, deadline) for i in range(concurrency))),
            timeout=seconds + 2 * REQUEST_TIMEOUT,
        )
        return load, time.monotonic() - started


# ------------------------------------------------------------------------ the checks


def check_tenant(path: Path, t: Tenant) -> dict[str, Any]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT id, idempotency_key FROM memory_events").fetchall()
        per_key = conn.execute(
            "SELECT idempotency_key, count(*) FROM memory_events "
            "WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key HAVING count(*) > 1"
        ).fetchall()
    stored = {key: eid for eid, key in rows if key is not None}
    lost = [k for k, eid in t.acked.items() if stored.get(k) != eid]
    acked_ids = Counter(t.acked.values())
    return {
        "tenant": t.id,
        "stored_events": len(rows),
        "acked_keys": len(t.acked),
        "lost": len(lost),
        "lost_sample": lost[:5],
        "duplicated": len(per_key) + sum(1 for n in acked_ids.values() if n > 1),
        "duplicated_sample": per_key[:5],
        # Stored without a 2xx answer (only after a 5xx or transport error): not lost.
        "stored_unacked": len(set(stored) - set(t.acked)),
        "entries": conn_count(path, "memory_entries"),
    }


def conn_count(path: Path, table: str) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def pct(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(load: Load, elapsed: float, checks: list[dict[str, Any]]) -> dict[str, Any]:
    s = load.stats
    total = sum(len(v) for v in s.latencies.values())
    ops = {
        op: {
            "count": len(v),
            "per_s": round(len(v) / elapsed, 1),
            "p50_ms": round(statistics.median(v), 2),
            "p95_ms": round(pct(v, 95), 2),
        }
        for op, v in sorted(s.latencies.items())
    }
    return {
        "seconds": round(elapsed, 2),
        "requests": total,
        "requests_per_s": round(total / elapsed, 1),
        "ops": ops,
        "statuses": {f"{op} {st}": n for (op, st), n in sorted(s.statuses.items())},
        "retries": s.retries,
        "replays": s.replays,
        "pages": s.pages,
        "tenants": checks,
        "lost": sum(c["lost"] for c in checks),
        "duplicated": sum(c["duplicated"] for c in checks) + len(s.mismatches),
        "acked_appends": sum(c["acked_keys"] for c in checks),
        "errors": len(s.errors),
        "error_sample": s.errors[:10],
        "mismatches": s.mismatches[:10],
    }


def print_rss(rss: dict[str, Any]) -> None:
    samples = [tuple(s) for s in rss["samples"]]
    if len(samples) < 2:
        return
    print(
        f"\nserver RSS: {rss['first_mib']} MiB at start, {rss['last_mib']} at the end, "
        f"{rss['max_mib']} at most; slope {rss['first_half_mib_per_min']} MiB/min over the "
        f"first half, {rss['second_half_mib_per_min']} over the second (range "
        f"{rss['second_half_min_mib']}-{rss['second_half_max_mib']} MiB)"
    )
    print(rss_chart(samples))


def print_report(r: dict[str, Any]) -> None:
    print(
        f"\n{r['requests']} requests in {r['seconds']} s: {r['requests_per_s']} req/s; "
        f"{r['acked_appends']} appends acknowledged, {r['retries']} retried, "
        f"{r['replays']} answered as replays, {r['pages']} list pages"
    )
    print(f"{'operation':<20}{'count':>8}{'per s':>9}{'p50 ms':>10}{'p95 ms':>10}")
    for op, o in r["ops"].items():
        print(f"{op:<20}{o['count']:>8}{o['per_s']:>9}{o['p50_ms']:>10}{o['p95_ms']:>10}")
    for c in r["tenants"]:
        print(
            f"{c['tenant']}: {c['stored_events']} events stored, {c['acked_keys']} keys "
            f"acknowledged, lost {c['lost']}, duplicated {c['duplicated']}, "
            f"stored unanswered {c['stored_unacked']}, {c['entries']} entries"
        )
    print(f"LOST {r['lost']}  DUPLICATED {r['duplicated']}  ERRORS {r['errors']}")
    for e in r["error_sample"]:
        print("  error:", e)
    print_rss(r["rss"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="load duration (default 60)")
    p.add_argument("--tenants", type=int, default=3, choices=range(1, 11), metavar="N")
    p.add_argument("--concurrency", type=int, default=16, help="concurrent clients")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", type=Path, help="also write the report here")
    p.add_argument("--keep", action="store_true", help="keep the data dir (path printed)")
    p.add_argument("--rss-every", type=float, default=10.0, help="seconds between RSS samples")
    p.add_argument(
        "--probe-every",
        type=float,
        default=0.0,
        help="serve through bench/memory_probe.py, probing every S seconds",
    )
    p.add_argument(
        "--probe-frames",
        type=int,
        default=0,
        help="tracemalloc frames for the probe (0: no tracing)",
    )
    p.add_argument("--probe-out", type=Path, help="the probe's files (default: in the data dir)")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the server (e.g. JET_SEARCH_CACHE_PAGES=0)",
    )
    args = p.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="jet-soak-"))
    env = (
        {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
        | {
            "JET_DATA_DIR": str(work / "data"),
            "JET_LOG_LEVEL": "warning",
        }
        | dict(kv.split("=", 1) for kv in args.env)
    )
    tenants = [make_tenant(env, work, f"soak-{i}") for i in range(args.tenants)]
    port = free_port()
    probe = None
    if args.probe_every:
        probe_out = (args.probe_out or work / "probe").resolve()
        probe = [
            "--out",
            str(probe_out),
            "--every",
            str(args.probe_every),
            "--frames",
            str(args.probe_frames),
        ]
    proc = start_server(env, work, port, probe)
    rss = RssSampler(proc.pid, args.rss_every)
    rss.start()
    print(
        f"soak: serve pid {proc.pid} on 127.0.0.1:{port}, data {work / 'data'}, "
        f"{args.tenants} tenants, {args.concurrency} clients, {args.seconds:g} s"
        + (f", probe in {probe[1]}" if probe else "")
    )
    try:
        load, elapsed = asyncio.run(
            run_load(f"http://127.0.0.1:{port}", tenants, args.seconds, args.concurrency, args.seed)
        )
    finally:
        rss.stopped.set()
        stop_server(proc)  # clean stop: checkpoints the WAL; the checks read the files
    tenants_dir = work / "data" / "tenants"
    checks = [check_tenant(tenants_dir / f"{t.id}.db", t) for t in tenants]
    result = report(load, elapsed, checks)
    result["rss"] = rss_summary(rss.samples)
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.keep:
        print(f"data kept in {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if result["lost"] == result["duplicated"] == result["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
