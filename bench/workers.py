"""Throughput of `jet-memory serve --workers N` against N = 1 on SQLite: search, event pages
and memoryContext at 16 clients, appends spread over 100 tenants and appends to one
tenant (wrk, 16 connections), with p99; servers of every N run side by side and take turns
in each round (this machine is shared: medians over rounds). Server CPU per request (all
processes of a serve) says what N costs where cores are idle. Appends are verified: every
acknowledged one stored once.
`python -m bench.workers [--workers 1,2] [--rounds 5] [--only appends-1-tenant,search]`."""

import argparse
import random
import sqlite3
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.config import Settings
from app.deps import build
from app.services.search import indexer
from bench import context as cb
from bench import data as bench_data
from bench.harness import (
    RESULTS,
    Server,
    git_state,
    load_note,
    new_tenant,
    read_acks,
    run_async,
    run_wrk,
)
from bench.runner import Run

ROOT = Path(__file__).resolve().parents[1]
CONTEXT_QUERY = (
    "query($s: MemoryScope!, $r: String, $q: String) { memoryContext(scope: $s, scopeRef: $r,"
    " query: $q, maxTokens: 2000) { tokens entries { id } events { id } } }"
)
WORKLOADS = ("search", "events", "context", "appends-100-tenants", "appends-1-tenant")
# Target ratio of N=2 over N=1 (the issue): reads 1.6x, appends over tenants 1.4x, appends
# to one tenant not slower.
TARGETS = {
    "search": 1.6,
    "events": 1.6,
    "context": 1.6,
    "appends-100-tenants": 1.4,
    "appends-1-tenant": 1.0,
}


@dataclass
class Tree:
    """`jet-memory serve --workers N` of this checkout, and the CPU of all its processes."""

    server: Server
    workers: int
    pids: list[int] = field(default_factory=list)

    def start(self) -> None:
        self.server.start()
        # /healthz answers once one worker is up: wait for every worker's startup.
        deadline = time.monotonic() + 300
        while self.server.log_path.read_text().count("Application startup complete") < max(
            1, self.workers
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start; see {self.server.log_path}")
            time.sleep(0.2)

    def cpu_seconds(self) -> float:
        total = 0.0
        for pid in [self.server.pid, *_children(self.server.pid)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / 100
        return total


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _requests_file(path: Path, lines: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(f"{m}\t{p}\t{b}\n" for m, p, b in lines))
    return path


def prepare(b: Run, a: argparse.Namespace) -> dict[str, Any]:
    """The datasets (made once, reused from the data dir) and each workload's wrk input."""
    print("== data ==", flush=True)
    _, search_key = run_async(bench_data.search_tenant(b.data_dir, a.entries))
    _, events_key = run_async(bench_data.events_tenant(b.data_dir, a.events, a.events // 100))
    tenants = run_async(bench_data.many_tenants(b.data_dir, 100))
    one_id, one_key = run_async(new_tenant(b.data_dir, f"bench-one-{time.time_ns()}"))
    search_lines = [
        (
            "POST",
            "/graphql",
            b.gql_request(
                search_key,
                bench_data.SEARCH_QUERY,
                {"f": {"search": q, "scope": s.upper(), "scopeRef": r}},
                tag,
            )["body"],
        )
        for tag, q, s, r in bench_data.search_cases()
    ]
    events_lines = [
        (
            "POST",
            "/graphql",
            b.gql_request(events_key, _EVENTS_QUERY, {"f": {"scope": "ENTITY", "scopeRef": r}}, "")[
                "body"
            ],
        )
        for r in cb.CLIENTS
    ]
    rng = random.Random(5)
    context_lines = [
        (
            "POST",
            "/graphql",
            b.gql_request(
                events_key,
                CONTEXT_QUERY,
                {"s": "ENTITY", "r": rng.choice(cb.CLIENTS), "q": rng.choice(cb.QUERIES)},
                "",
            )["body"],
        )
        for _ in range(200)
    ]
    run_async(embed_pending(b.data_dir, [t for t, _ in tenants] + [one_id, *_ids(b.data_dir)]))
    keys_file = b.work / "keys-100.txt"
    keys_file.write_text("".join(f"{k}\n" for _, k in tenants))
    return {
        "search": ("replay_gql", search_key, _requests_file(b.work / "search.req", search_lines)),
        "events": ("replay_gql", events_key, _requests_file(b.work / "events.req", events_lines)),
        "context": (
            "replay_gql",
            events_key,
            _requests_file(b.work / "context.req", context_lines),
        ),
        "appends-100-tenants": ("append_keys", tenants[0][1], keys_file),
        "appends-1-tenant": ("append_rest", one_key, None),
        "tenant_ids": [t for t, _ in tenants] + [one_id],
    }


def _ids(data_dir: Path) -> list[str]:
    """The search and events tenants of the data dir (bench.data notes their ids)."""
    return [p.read_text().strip() for p in data_dir.glob("*-tenant-*.txt")]


async def embed_pending(data_dir: Path, tenant_ids: list[str]) -> None:
    """Embed every entry the tenants' indexers would otherwise embed during the phases (a
    downgrade by bench.ab drops the vectors): the servers measure a steady state."""
    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        for tenant_id in tenant_ids:
            if not container.tenants.path(tenant_id).exists() or container.semantic is None:
                continue
            embedder = await container.semantic.embedder_for(tenant_id)
            if embedder is None:
                continue
            async with container.tenants.lease(tenant_id) as db:
                done, total = await indexer.counts(db, embedder.model)
                if done < total:
                    print(f"  embedding {total - done:,} entries of {tenant_id}", flush=True)
                    await indexer.catch_up(db, embedder, batch=512, owner="bench")
    finally:
        await container.aclose()


_EVENTS_QUERY = (
    "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
    " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
    " compressedAt } } pageInfo { hasNextPage endCursor } } }"
)


def phase(
    tree: Tree, name: str, spec: Any, a: argparse.Namespace, run_id: str, ack_dir: Path
) -> dict[str, Any]:
    mode, key, extra = spec
    path = "/memory/events" if mode.startswith("append") else "/"
    kw: dict[str, Any] = {
        "mode": mode,
        "key": key,
        "path": path,
        "connections": a.clients,
        "run_id": run_id,
    }
    if extra is not None:
        kw["requests_file"] = extra
    # Warm up; appends acknowledged then are verified too (each phase its own ack files).
    warm = run_id + "-warm"
    acks = {"ack_dir": ack_dir / warm} if mode.startswith("append") else {}
    run_wrk(tree.server.url, seconds=1, **{**kw, "run_id": warm, **acks})
    if mode.startswith("append"):
        kw["ack_dir"] = ack_dir / run_id
    cpu0 = tree.cpu_seconds()
    r = run_wrk(tree.server.url, seconds=a.seconds, **kw)
    r["ok_rate"] = r["ok"] / (r["duration_us"] / 1e6)
    r["cpu_us_per_req"] = (tree.cpu_seconds() - cpu0) * 1e6 / max(1, r["requests"])
    print(
        f"  N={tree.workers} {name:<20} {r['ok_rate']:>8,.0f} ok/s  bad {r['bad']:<4}"
        f" p50 {r['lat_p50_us'] / 1000:6.2f}  p99 {r['lat_p99_us'] / 1000:7.2f} ms"
        f"  server CPU {r['cpu_us_per_req']:6.0f} us/req",
        flush=True,
    )
    if r["bad"]:
        print(f"    first bad response: {r['bad_sample'][:200]}", flush=True)
    return r


def verify_appends(data_dir: Path, tenant_ids: list[str], ack_dir: Path) -> str:
    """Every acknowledged append (its unique sourceRef) stored exactly once."""
    acked: dict[str, int] = {}
    for phase_dir in sorted(ack_dir.iterdir()) if ack_dir.exists() else []:
        acked.update(read_acks(phase_dir))
    stored: dict[str, int] = {}
    for tenant_id in tenant_ids:
        conn = sqlite3.connect(data_dir / "tenants" / f"{tenant_id}.db")
        for (ref,) in conn.execute("SELECT source_ref FROM memory_events WHERE source = 'bench'"):
            stored[ref] = stored.get(ref, 0) + 1
        conn.close()
    lost = [r for r in acked if r not in stored]
    twice = [r for r in acked if stored.get(r, 0) > 1]
    assert not lost and not twice, f"{len(lost)} acknowledged appends lost, {len(twice)} twice"
    return f"{len(acked):,} acknowledged appends all stored once"


def chart(medians: dict[str, dict[int, float]], workers: list[int], chosen: list[str]) -> str:
    """N against throughput, one bar per N, scaled per workload."""
    lines = []
    for name in chosen:
        top = max(medians[name].values()) or 1
        base = medians[name][workers[0]] or 1
        lines.append(f"{name}")
        for n in workers:
            rate = medians[name][n]
            bar = "#" * max(1, round(40 * rate / top))
            lines.append(f"  N={n:<2} {bar:<40} {rate:>8,.0f}/s  {rate / base:4.2f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", default="1,2", help="the N to compare, first is the base")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--entries", type=int, default=100_000, help="of the search tenant")
    parser.add_argument("--events", type=int, default=200_000, help="of the events tenant")
    parser.add_argument("--data-dir", type=Path, default=RESULTS / "data")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma-separated")
    a = parser.parse_args()
    chosen = [w for w in WORKLOADS if w in a.only.split(",")]
    if not chosen:
        parser.error(f"--only: choose among {', '.join(WORKLOADS)}")
    a.quick, a.access_log, a.profile = False, True, False  # for bench.runner.Run
    workers = [int(n) for n in a.workers.split(",")]
    b = Run(a)
    specs = prepare(b, a)
    print(
        f"== serve --workers {a.workers}, {a.clients} clients, {a.rounds} rounds of "
        f"{a.seconds:g} s; {load_note()} ==",
        flush=True,
    )
    # Search and context answered by FTS5 every time (no page cache): the work itself.
    trees = [
        Tree(
            Server(
                data_dir=b.data_dir,
                log_path=b.work / f"serve-{n}.log",
                tree=ROOT,
                env={"JET_WORKERS": str(n), "JET_SEARCH_CACHE_PAGES": "0"},
                startup_seconds=300,
            ),
            n,
        )
        for n in workers
    ]
    results: dict[str, dict[int, list[dict[str, Any]]]] = {
        w: {n: [] for n in workers} for w in chosen
    }
    ack_dir = b.work / "acks"
    try:
        for tree in trees:
            tree.start()
        for rnd in range(a.rounds):
            print(f"-- round {rnd + 1} ({load_note()})", flush=True)
            order = trees if rnd % 2 == 0 else trees[::-1]
            for name in chosen:
                for tree in order:
                    # Unique across runs: the 100 tenants are reused from the data dir.
                    run_id = f"{b.work.name}-r{rnd}-n{tree.workers}-{name}"
                    results[name][tree.workers].append(
                        phase(tree, name, specs[name], a, run_id, ack_dir)
                    )
    finally:
        for tree in trees:
            tree.server.stop()
    verified = verify_appends(b.data_dir, specs["tenant_ids"], ack_dir)
    medians = {
        w: {n: statistics.median(r["ok_rate"] for r in results[w][n]) for n in workers}
        for w in chosen
    }
    p99 = {
        w: {n: statistics.median(r["lat_p99_us"] / 1000 for r in results[w][n]) for n in workers}
        for w in chosen
    }
    cpu = {
        w: {n: statistics.median(r["cpu_us_per_req"] for r in results[w][n]) for n in workers}
        for w in chosen
    }
    bad = sum(r["bad"] for w in chosen for n in workers for r in results[w][n])
    base, top = workers[0], workers[-1]
    table = [
        "| workload | "
        + " | ".join(f"N={n} ok/s (p99 ms; CPU us/req)" for n in workers)
        + f" | N={top}/N={base} | target |",
        "|---" * (len(workers) + 3) + "|",
    ]
    for w in chosen:
        ratio = medians[w][top] / medians[w][base]
        cells = " | ".join(
            f"{medians[w][n]:,.0f} ({p99[w][n]:.1f}; {cpu[w][n]:,.0f})" for n in workers
        )
        met = "yes" if ratio >= TARGETS[w] else "**no**"
        table.append(f"| {w} | {cells} | {ratio:.2f}x | {TARGETS[w]:.1f}x: {met} |")
    text = "\n".join(
        [
            f"serve --workers {a.workers}: medians of {a.rounds} rounds of {a.seconds:g} s, "
            f"{a.clients} clients (wrk); {git_state()}; {load_note()} at the end",
            "",
            *table,
            "",
            chart(medians, workers, chosen),
            "",
            f"{verified}; {bad} bad responses in all",
        ]
    )
    print("\n" + text, flush=True)
    (b.work / "workers.md").write_text(text + "\n")
    print(f"\nwritten to {b.work / 'workers.md'}", flush=True)


if __name__ == "__main__":
    main()
