"""A Python load generator (asyncio + aiohttp), run in its own process by the HTTP benchmarks
for workloads wrk cannot express: per-request tags (common vs rare terms), a distinct
API key per request (10,000 tenants), the server's own timing header, and sampling the
server's open files while it runs.

The client shares this machine's two CPUs with the server, so every microsecond it spends
is taken from the server under test: aiohttp (its HTTP parser is C) and orjson instead of
httpx and json cut its CPU from ~1.9 to 0.3-0.6 ms per request on the event pages (measured
2026-11-30 with `--only events`; every phase prints it as "client CPU").

Usage: .venv/bin/python -m bench.http_load SPEC.json OUT.json

SPEC: {"base_url", "concurrency", "order": "cycle" | "once", "duration" (cycle),
       "warmup" (seconds, cycle; not recorded), "check": "graphql" | "status",
       "requests": [{"method", "path", "headers", "body" (str), "tag"}],
       "fd_pid": PID or null (sample /proc/PID/fd), "fd_every": seconds}
OUT:  {"samples": [[tag, status, ok, e2e_ms, server_ms or null, nodes, sent at (s)], ...],
       "elapsed", "fd_series": [[seconds, requests done, fds], ...], "bad_sample",
       "client_cpu_ms_per_req" (this process's CPU over every request sent, warm-up too)}
"""

import asyncio
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson


def server_ms(headers: Any) -> float | None:
    value = headers.get("server-timing")
    if not value or "dur=" not in value:
        return None
    return float(value.split("dur=", 1)[1].split(",", 1)[0])


def is_ok(check: str, status: int, body: bytes) -> bool:
    if not 200 <= status < 300:
        return False
    if check == "graphql":
        data = orjson.loads(body)
        return "errors" not in data and data.get("data") is not None
    return True


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    requests: list[dict[str, Any]] = spec["requests"]
    concurrency: int = spec["concurrency"]
    check: str = spec.get("check", "status")
    prepared = [
        (r["method"], r["path"], r.get("headers", {}), r.get("body", "").encode(), r.get("tag", ""))
        for r in requests
    ]
    source = iter(prepared) if spec.get("order") == "once" else itertools.cycle(prepared)
    samples: list[list[Any]] = []
    bad_sample = ""
    fd_series: list[list[float]] = []
    sent = 0
    cpu0 = time.process_time()
    base_url: str = spec["base_url"]
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:
        started = time.perf_counter()
        warm_until = started + float(spec.get("warmup", 0))
        stop_at = warm_until + float(spec.get("duration", 0))

        async def worker() -> None:
            nonlocal bad_sample, sent
            while True:
                now = time.perf_counter()
                if spec.get("order") != "once" and now >= stop_at:
                    return
                try:
                    method, path, headers, body, tag = next(source)
                except StopIteration:
                    return
                t0 = time.perf_counter()
                async with client.request(
                    method, base_url + path, headers=headers, data=body or None
                ) as r:
                    content = await r.read()
                e2e = (time.perf_counter() - t0) * 1000
                sent += 1
                ok = is_ok(check, r.status, content)
                if not ok and not bad_sample:
                    bad_sample = f"{r.status} {content[:300].decode(errors='replace')}"
                if t0 >= warm_until:
                    samples.append(
                        [
                            tag,
                            r.status,
                            ok,
                            e2e,
                            server_ms(r.headers),
                            content.count(b'"node"'),
                            t0 - started,
                        ]
                    )

        async def sample_fds(pid: int, every: float) -> None:
            while True:
                try:
                    fds = len(os.listdir(f"/proc/{pid}/fd"))
                except FileNotFoundError:
                    return
                fd_series.append([time.perf_counter() - started, len(samples), fds])
                await asyncio.sleep(every)

        sampler = None
        if spec.get("fd_pid"):
            sampler = asyncio.create_task(sample_fds(spec["fd_pid"], spec.get("fd_every", 0.1)))
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - max(started, min(warm_until, time.perf_counter()))
        if sampler is not None:
            sampler.cancel()
            fds = len(os.listdir(f"/proc/{spec['fd_pid']}/fd"))
            fd_series.append([time.perf_counter() - started, len(samples), fds])
    return {
        "client_cpu_ms_per_req": (time.process_time() - cpu0) * 1000 / max(1, sent),
        "samples": samples,
        "elapsed": elapsed,
        "fd_series": fd_series,
        "bad_sample": bad_sample,
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    try:
        import uvloop

        result = uvloop.run(run(spec))
    except ImportError:
        result = asyncio.run(run(spec))
    Path(sys.argv[2]).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
