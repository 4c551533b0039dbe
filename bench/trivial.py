"""Workload 1: `{ __typename }` through GraphQL against a plain Starlette route of the same
process (wrk, 32 connections). `python -m bench.trivial [options of python -m bench]`."""

from typing import Any

from bench.harness import Row, median, new_tenant, run_async, run_wrk
from bench.runner import Run


def run(b: Run) -> None:
    a = b.args
    print("\n== 1. trivial GraphQL vs plain Starlette (same process) ==", flush=True)
    _, key = run_async(new_tenant(b.data_dir, f"bench-trivial-{b.stamp}"))
    plain: list[dict[str, Any]] = []
    gql: list[dict[str, Any]] = []
    with b.server("trivial") as srv:
        for path in ("/plain", "/graphql"):  # warm up
            run_wrk(srv.url, mode="static", key=key, path=path, seconds=1, connections=32)
        for i in range(a.rounds):
            common = dict(mode="static", key=key, seconds=a.seconds, connections=32)
            plain.append(b.wrk_round(srv, f"plain #{i + 1}", path="/plain", **common))
            prof = "trivial-graphql" if i == a.rounds - 1 else None
            gql.append(b.wrk_round(srv, f"graphql #{i + 1}", prof, path="/graphql", **common))
    g = median([r["ok"] / (r["duration_us"] / 1e6) for r in gql])
    p = median([r["ok"] / (r["duration_us"] / 1e6) for r in plain])
    ratio = g / p
    cpu_g = median([r["server_cpu_us_per_req"] for r in gql])
    cpu_p = median([r["server_cpu_us_per_req"] for r in plain])
    b.rows.append(
        Row(
            "1 trivial",
            "`{ __typename }` req/s (32 conns)",
            g,
            "req/s",
            p,
            "req/s plain /plain",
            ratio,
            ">= 0.35x plain",
            ratio >= 0.35,
            b.command("trivial"),
            f"p99 graphql {median([r['lat_p99_us'] for r in gql]) / 1000:.1f} ms, plain "
            f"{median([r['lat_p99_us'] for r in plain]) / 1000:.1f} ms; server CPU/request "
            f"graphql {cpu_g:.0f} us, plain {cpu_p:.0f} us ({cpu_p / cpu_g:.2f}x)",
        )
    )
    b.details["trivial"] = {"plain": plain, "graphql": gql}


if __name__ == "__main__":
    from bench.suite import main

    main(default_only="trivial")
