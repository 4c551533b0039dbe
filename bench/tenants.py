"""Workload 6: the first request to a tenant not yet open, and the server's open files over
10,000 tenants. `python -m bench.tenants [options of python -m bench]`."""

from bench import data as bench_data
from bench.harness import Row, pct, proc_fds, proc_rss_mib, run_async
from bench.runner import Run


def run(b: Run) -> None:
    a = b.args
    print(f"\n== 6. first request to a tenant not yet open; {a.tenants:,} tenants ==", flush=True)
    tenants = run_async(bench_data.many_tenants(b.data_dir, a.tenants))
    query = "{ memoryEvents(first: 5) { edges { node { id } } } }"
    reqs = [b.gql_request(key, query, {}, "first") for _, key in tenants]
    n_seq = min(1000 if not a.quick else 200, len(reqs) // 4)
    cache = b.settings.tenant_cache_size
    with b.server("tenants", JET_BENCH_SERVER_TIMING="1") as srv:
        fd_start = proc_fds(srv.pid)
        # Baseline: the same request to a tenant already open (and its key cached).
        warm_req = {**reqs[0], "tag": "warm"}
        b.load(srv, "tenants-open-warmup", [warm_req], 1, 1, order="cycle")
        warm = b.load(srv, "tenants-open", [warm_req], 1, min(a.seconds, 3))
        first = b.load(srv, "tenants-first-c1", reqs[1 : 1 + n_seq], 1, 0, order="once")
        fd_after_seq = proc_fds(srv.pid)
        rest = b.load(
            srv,
            "tenants-first-c16",
            reqs[1 + n_seq :],
            16,
            0,
            order="once",
            fd=True,
            prof="tenants-first-c16",
        )
        fd_end = proc_fds(srv.pid)
        rss = proc_rss_mib(srv.pid)
    w = [x[3] for x in warm["samples"]]
    f1 = [x[3] for x in first["samples"]]
    f16 = [x[3] for x in rest["samples"]]
    p95, warm_p95 = pct(f1, 95), pct(w, 95)
    series = rest["fd_series"]
    fd_max = max([s[2] for s in series] + [fd_after_seq, fd_end])
    half = [s[2] for s in series if s[1] >= len(f16) / 2]
    first_half = [s[2] for s in series if s[1] < len(f16) / 2] or [fd_after_seq]
    pool = b.settings.tenant_pool_size
    # Per cached tenant: the pool's connections and the InlineReader's, each the file
    # and its -wal, and the -shm once.
    per_tenant = 2 * (pool + 1) + 1
    bound = fd_start + cache * per_tenant
    flat = max(half or [0]) <= max(first_half) + 2 * per_tenant
    b.rows.append(
        Row(
            "6 tenants",
            "first request to a tenant not yet open, p95 (1 client)",
            p95,
            "ms",
            warm_p95,
            "ms same request, tenant open",
            p95 / warm_p95,
            "< 15 ms",
            p95 < 15,
            b.command("tenants", f"--tenants {a.tenants}"),
            f"{len(f1):,} tenants one after another: p50 {pct(f1, 50):.1f} ms, p99 "
            f"{pct(f1, 99):.1f} ms, server p95 {pct([x[4] for x in first['samples']], 95):.1f}"
            f" ms; then {len(f16):,} more with 16 clients: p50 {pct(f16, 50):.1f} ms, p95 "
            f"{pct(f16, 95):.1f} ms, {len(f16) / rest['elapsed']:.0f} tenants/s",
        )
    )
    b.rows.append(
        Row(
            "6 tenants",
            f"open files of the server, {len(tenants):,} tenants touched",
            fd_max,
            "fds (max)",
            fd_start,
            "fds at start",
            fd_max / fd_start,
            f"bounded (<= {bound} = start + {cache} cached x {per_tenant})",
            fd_max <= bound and flat,
            b.command("tenants", f"--tenants {a.tenants}"),
            f"after {n_seq + 1:,} tenants {fd_after_seq}, at the end {fd_end}; second half max "
            f"{max(half or [0])} vs first half max {max(first_half)}; RSS {rss:.0f} MiB",
        )
    )
    b.details["tenants"] = {"fd_series": series, "fd_start": fd_start}


if __name__ == "__main__":
    from bench.suite import main

    main(default_only="tenants")
