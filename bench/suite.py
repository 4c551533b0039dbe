"""HTTP benchmarks of issue 6: the real server (uvicorn, one process, 127.0.0.1), loaded from
other processes (wrk with bench/wrk_bench.lua; bench/http_load.py for what wrk cannot
express), each figure against a baseline measured in the same run. The machine is shared
and noisy: every figure is a median over rounds or a percentile over many requests, and
the ratio to its baseline is what to compare between runs.

Usage: .venv/bin/python -m bench [--only trivial,append,batch,search,events,tenants]
       [--quick] [--rounds N] [--seconds S] [--events N] [--entries N] [--tenants N]
       [--data-dir DIR] [--profile] [--no-access-log]

Workloads (each alone with --only NAME, or python -m bench.<module>; --quick scales every
one down):
  trivial  `{ __typename }` through GraphQL vs a plain Starlette route of the same process
  append   appendMemoryEvent (GraphQL) and POST /memory/events, 64 clients, then every
           acknowledged append is looked up in the tenant database; vs raw aiosqlite
  batch    appendMemoryEvents / POST /memory/events with 500 events a request; vs raw
           aiosqlite executemany (indexed for search by the server's statement)
  search   memoryEntries(search) top 20, 100,000 entries in 10 scopes, 16 clients, common
           and rare terms, the search page cache off; vs the same FTS5 SELECT run by
           sqlite3; then the same load with the cache on and every question asked before
           (rows marked CACHED)
  events   memoryEvents by scope on 1,000,000 events, 16 clients; vs the same SELECT
  tenants  first request to a tenant not yet open, and open files over 10,000 tenants

Writes bench/results/http-<time>.json and .md (the table), server logs and, with
--profile, py-spy profiles of the server (raw collapsed stacks) summarised on stdout.
"""

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench import appends, batches, events, search, tenants, trivial
from bench.harness import RESULTS, git_state, load_note, markdown_table, save_results
from bench.runner import Run

# Run in this order by `python -m bench`; the keys are the names of --only.
WORKLOADS: dict[str, Callable[[Run], None]] = {
    "trivial": trivial.run,
    "append": appends.run,
    "batch": batches.run,
    "search": search.run,
    "events": events.run,
    "tenants": tenants.run,
}


def main(default_only: str = ",".join(WORKLOADS)) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", default=default_only, help="comma-separated workloads")
    p.add_argument("--quick", action="store_true", help="small sizes, short rounds")
    p.add_argument("--rounds", type=int, help="rounds per rate workload (default 3, quick 2)")
    p.add_argument("--seconds", type=float, help="seconds per round (default 5, quick 2)")
    p.add_argument("--events", type=int, help="events of workload 5 (default 1,000,000)")
    p.add_argument("--entries", type=int, help="entries of workload 4 (default 100,000)")
    p.add_argument("--tenants", type=int, help="tenants of workload 6 (default 10,000)")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=RESULTS / "data",
        help="JET_DATA_DIR of the server; generated tenants are reused here",
    )
    p.add_argument("--fresh", action="store_true", help="delete --data-dir first")
    p.add_argument("--profile", action="store_true", help="py-spy the server in one round each")
    p.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="uvicorn without its access log (jet-memory serve logs every request)",
    )
    a = p.parse_args()
    q = a.quick
    a.rounds = a.rounds or (2 if q else 3)
    a.seconds = a.seconds or (2.0 if q else 5.0)
    a.events = a.events or (100_000 if q else 1_000_000)
    a.entries = a.entries or (20_000 if q else 100_000)
    a.tenants = a.tenants or (1_000 if q else 10_000)
    only = [w.strip() for w in a.only.split(",") if w.strip()]
    unknown = set(only) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {list(WORKLOADS)}")
    if a.fresh and a.data_dir.exists():
        shutil.rmtree(a.data_dir)
    bench = Run(a)
    started = time.time()
    load_before = load_note()
    code = git_state()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {load_before}; code {code}; results in "
        f"{bench.work}",
        flush=True,
    )
    for name, run in WORKLOADS.items():
        if name in only:
            run(bench)
    load_after = load_note()
    print(f"\n{time.strftime('%Y-%m-%d %H:%M:%S')}  {load_after}\n")
    print(markdown_table(bench.rows))
    print()
    for r in bench.rows:
        if r.notes:
            print(f"- {r.workload} / {r.metric}: {r.notes}")
    path = save_results(
        bench.rows,
        {
            "started": started,
            "load_before": load_before,
            "load_after": load_after,
            "code": code,
            "args": {k: str(v) for k, v in vars(a).items()},
            "details": bench.details,
            "python": sys.version,
            "pid": os.getpid(),
        },
        "http",
    )
    print(f"\nresults: {path}")
    if any(r.met is False for r in bench.rows):
        print("some targets were missed (see the table)")
