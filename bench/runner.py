"""The run of the HTTP benchmarks that every workload module (bench/trivial.py, appends.py,
batches.py, search.py, events.py, tenants.py) writes into: its data dir, server processes,
load phases (wrk or bench/http_load.py), the results rows and their details."""

import argparse
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

from app.config import Settings
from bench.harness import (
    RESULTS,
    Profiler,
    Row,
    Server,
    pct,
    proc_cpu_seconds,
    run_load,
    run_wrk,
)
from bench.profile_summary import summarize

BENCH_CMD = ".venv/bin/python -m bench"


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.data_dir: Path = args.data_dir.resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.stamp = time.strftime("%Y%m%d-%H%M%S")
        self.work = RESULTS / f"run-{self.stamp}"
        self.work.mkdir(parents=True, exist_ok=True)
        self.rows: list[Row] = []
        self.details: dict[str, Any] = {}
        self.settings = Settings(_env_file=None, data_dir=self.data_dir)

    def command(self, name: str, *extra: str) -> str:
        parts = [BENCH_CMD, "--only", name, *extra]
        if self.args.quick:
            parts.append("--quick")
        if not self.args.access_log:
            parts.append("--no-access-log")
        return " ".join(parts)

    def server(self, name: str, **env: str) -> Server:
        return Server(
            data_dir=self.data_dir,
            log_path=self.work / f"server-{name}.log",
            env=env,
            access_log=self.args.access_log,
        )

    def profile(self, srv: Server, label: str, seconds: float) -> Profiler | None:
        if not self.args.profile:
            return None
        return Profiler(srv.pid, self.work / f"profile-{label}.txt", seconds)

    def report_profile(self, prof: Profiler | None, label: str) -> None:
        if prof is None:
            return
        path = prof.wait()
        if path.exists():
            text = summarize(path)
            (self.work / f"profile-{label}.summary.txt").write_text(text)
            print(f"\n--- profile {label} ({path}) ---\n{text}", flush=True)

    def wrk_round(
        self, srv: Server, label: str, prof_label: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        cpu0 = proc_cpu_seconds(srv.pid)
        prof = self.profile(srv, prof_label, kw["seconds"]) if prof_label else None
        r = run_wrk(srv.url, **kw)
        r["server_cpu_us_per_req"] = (
            (proc_cpu_seconds(srv.pid) - cpu0) * 1e6 / max(1, r["requests"])
        )
        print(
            f"  {label:<14} {r['rate']:>9,.0f} req/s  ok {r['ok']:>7,}  bad {r['bad']}"
            f"  p50 {r['lat_p50_us'] / 1000:6.2f}  p99 {r['lat_p99_us'] / 1000:6.2f} ms"
            f"  server CPU {r['server_cpu_us_per_req']:6.0f} us/req",
            flush=True,
        )
        if r["bad"] and r["bad_sample"]:
            print(f"    first bad response: {r['bad_sample'][:200]}", flush=True)
        if prof_label:
            self.report_profile(prof, prof_label)
        return r

    def wrk_replay(
        self,
        srv: Server,
        label: str,
        requests: list[dict[str, Any]],
        connections: int,
        seconds: float,
        mode: str,
        prof: str | None = None,
    ) -> dict[str, Any]:
        """`requests` (as for `load`, one key) sent in turn by wrk's replay modes."""
        path = self.work / f"{label}.requests"
        lines = []
        for r in requests:
            body = r.get("body", "")
            assert "\t" not in body and "\n" not in body, "one request a line"
            lines.append(f"{r['method']}\t{r['path']}\t{body}")
        path.write_text("\n".join(lines) + "\n")
        key = requests[0]["headers"]["authorization"].removeprefix("Bearer ")
        run_wrk(
            srv.url,
            mode=mode,
            key=key,
            path="/",
            seconds=1,
            connections=connections,
            requests_file=path,
        )  # warm up
        r = self.wrk_round(
            srv,
            label,
            prof,
            mode=mode,
            key=key,
            path="/",
            seconds=seconds,
            connections=connections,
            requests_file=path,
        )
        r["lat_p95_us"] = r.get("lat_p95_us", 0)
        return r

    def gql_request(
        self, key: str, query: str, variables: dict[str, Any], tag: str
    ) -> dict[str, Any]:
        return {
            "method": "POST",
            "path": "/graphql",
            "tag": tag,
            "headers": {"authorization": f"Bearer {key}", "content-type": "application/json"},
            "body": json.dumps({"query": query, "variables": variables}),
        }

    def rest_get(self, key: str, path: str, params: dict[str, Any], tag: str) -> dict[str, Any]:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return {
            "method": "GET",
            "path": f"{path}?{query}",
            "tag": tag,
            "headers": {"authorization": f"Bearer {key}"},
        }

    def rest_row(
        self, workload: str, metric: str, out: dict[str, Any], gql: dict[str, Any], cmd: str
    ) -> None:
        """An informational row: the same reads through REST (the same service call)."""
        e2e = [x[3] for x in out["samples"]]
        g = [x[3] for x in gql["samples"]]
        self.rows.append(
            Row(
                workload,
                metric,
                pct(e2e, 95),
                "ms",
                pct(g, 95),
                "ms through GraphQL",
                pct(e2e, 95) / pct(g, 95),
                "(diagnostic)",
                None,
                cmd,
                f"{len(e2e) / out['elapsed']:.0f} req/s vs {len(g) / gql['elapsed']:.0f} through "
                f"GraphQL; server CPU {out['server_cpu_ms_per_req']:.2f} ms/request vs "
                f"{gql['server_cpu_ms_per_req']:.2f}",
            )
        )

    def load(
        self,
        srv: Server,
        label: str,
        requests: list[dict[str, Any]],
        concurrency: int,
        seconds: float,
        *,
        prof: str | None = None,
        order: str = "cycle",
        fd: bool = False,
        check: str = "graphql",
    ) -> dict[str, Any]:
        spec = {
            "base_url": srv.url,
            "concurrency": concurrency,
            "order": order,
            "duration": seconds,
            "warmup": 1 if order == "cycle" else 0,
            "check": check,
            "requests": requests,
            "fd_pid": srv.pid if fd else None,
            "fd_every": 0.1,
        }
        cpu0 = proc_cpu_seconds(srv.pid)
        # A phase of `order="once"` has no fixed length: profile its first 30 s.
        length = seconds + 1 if order == "cycle" else 30
        profiler = self.profile(srv, prof, length) if prof else None
        out = run_load(spec, self.work / label)
        samples = out["samples"]
        bad = [x for x in samples if not x[2]]
        out["server_cpu_ms_per_req"] = (
            (proc_cpu_seconds(srv.pid) - cpu0) * 1000 / max(1, len(samples))
        )
        e2e = [x[3] for x in samples]
        srv_ms = [x[4] for x in samples if x[4] is not None]
        print(
            f"  {label:<18} {len(samples):>6,} req {len(samples) / out['elapsed']:>7,.0f}/s"
            f"  e2e p50 {pct(e2e, 50):6.2f} p95 {pct(e2e, 95):6.2f} p99 {pct(e2e, 99):6.2f} ms"
            + (f"  server p50 {pct(srv_ms, 50):6.2f} p95 {pct(srv_ms, 95):6.2f}" if srv_ms else "")
            + f"  server CPU {out['server_cpu_ms_per_req']:.2f} ms/req"
            + f"  client CPU {out['client_cpu_ms_per_req']:.2f}  bad {len(bad)}",
            flush=True,
        )
        if bad:
            print(f"    first bad response: {out['bad_sample'][:300]}", flush=True)
        if prof:
            self.report_profile(profiler, prof)
        return out
