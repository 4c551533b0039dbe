"""An A/B of two versions of the code: `jet-memory serve` from each source tree in turn (this
venv, PYTHONPATH=<tree>), the same seeded data, the same loads (wrk), alternating for N rounds;
the median of each figure per side, their ratio, and the acknowledged appends lost or stored twice.

Usage: .venv/bin/python -m bench.ab --before REF [--after PATH_OR_REF] [--rounds 3]
       [--seconds 5] [--only appends,batches,events,search,context,context_plain]
       [--events N] [--entries N] [--together] [--before-env NAME=VALUE] [--after-env ...]

A ref is checked out as a git worktree under a temporary directory (removed at the end); the
default --after is this tree, uncommitted changes included. The data (bench/data.py's datasets
and a tenant per side for appends) is made once by this tree's code in --data-dir; each side's
server is stopped before the other's starts; with --together both run at once, each on its own
copy of the data, loaded at the same time (on a machine shared with other work, both sides meet
the same load; each side gets about half of the machine). Search and context run with the search
page cache off (as `python -m bench`'s search figures), unless --search-cache.
"""

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy import create_engine, text

from app.storage.migrate import Kind, alembic_config
from bench import context as cb
from bench import data as bench_data
from bench import events
from bench.appends import surfaces, verify_appends
from bench.harness import (
    PYTHON,
    RESULTS,
    ROOT,
    Server,
    load_note,
    median,
    new_tenant,
    open_container,
    run_async,
    run_wrk,
)
from bench.runner import Run

# context: memoryContext asked a question; context_plain: without one (the packing alone).
WORKLOADS = ["appends", "batches", "events", "search", "context", "context_plain"]
APPENDS = {"appends": (1, 64), "batches": (500, 8)}  # events a request, connections
CONTEXT_QUERY = (
    "query($ref: String!, $q: String) { memoryContext(scope: ENTITY, scopeRef: $ref, query: $q)"
    " { markdown tokens truncated entries { id } events { id } } }"
)


@dataclass
class Side:
    label: str  # "before" or "after"
    tree: Path
    tenants: dict[str, tuple[str, str]] = field(default_factory=dict)  # workload -> id, key
    acks: dict[str, dict[str, Path]] = field(default_factory=dict)  # workload -> run id -> dir
    figures: dict[str, list[float]] = field(default_factory=dict)  # figure -> one per round
    data_dir: Path | None = None  # --together: this side's copy of the data
    env: dict[str, str] = field(default_factory=dict)  # --before-env / --after-env


def git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def describe(tree: Path) -> str:
    dirty = " + uncommitted changes" if git("status", "--porcelain", cwd=tree) else ""
    return f"{tree} at {git('rev-parse', '--short', 'HEAD', cwd=tree)}{dirty}"


def app_of(tree: Path, cwd: Path) -> Path:
    """Where a server started by harness.Server(tree=tree) imports `app` from (checked)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    probe = [PYTHON, "-c", "import app; print(app.__file__)"]
    done = subprocess.run(probe, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    path = Path(done.stdout.strip()).resolve()
    if not path.is_relative_to(tree.resolve()):
        raise SystemExit(f"PYTHONPATH={tree} imports app from {path}, not from that tree")
    return path.parent


def migrations_digest(tree: Path) -> str:
    files = sorted((tree / "migrations").rglob("*.py"))
    return hashlib.sha1(b"".join(f.read_bytes() for f in files)).hexdigest()


class Trees:
    """The trees compared: existing directories as they are, refs as temporary worktrees."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="jet-ab-"))
        self.made: list[Path] = []

    def get(self, spec: str | None) -> Path:
        if spec is None:
            return ROOT
        if Path(spec).is_dir():
            return Path(spec).resolve()
        path = self.tmp / re.sub(r"[^\w.-]", "_", spec)
        git("worktree", "add", "--detach", "--quiet", str(path), spec)
        self.made.append(path)
        return path

    def remove(self) -> None:
        for path in self.made:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False
            )
        shutil.rmtree(self.tmp, ignore_errors=True)


def replay_requests(run: Run, name: str, a: argparse.Namespace) -> list[dict[str, Any]]:
    """The requests wrk replays for a read workload (the same for both sides)."""
    if name == "search":
        _, key = run_async(bench_data.search_tenant(run.data_dir, a.entries))
        return [
            run.gql_request(
                key,
                bench_data.SEARCH_QUERY,
                {"f": {"search": q, "scope": scope.upper(), "scopeRef": ref}},
                tag,
            )
            for tag, q, scope, ref in bench_data.search_cases()
        ]
    _, key = run_async(bench_data.events_tenant(run.data_dir, a.events, max(1000, a.events // 100)))
    if name == "events":
        return [
            run.gql_request(key, events.QUERY, {"f": {"scope": "ENTITY", "scopeRef": r}}, name)
            for r in events.REFS
        ]
    questions = itertools.cycle(cb.QUERIES if name == "context" else [None])
    pairs = zip(events.REFS, questions, strict=False)
    return [run.gql_request(key, CONTEXT_QUERY, {"ref": r, "q": q}, name) for r, q in pairs]


def append_phase(
    run: Run, srv: Server, side: Side, name: str, i: int, seconds: float
) -> dict[str, float]:
    batch, connections = APPENDS[name]
    _, key = side.tenants[name]
    out: dict[str, float] = {}
    for surface, mode, path in surfaces(batch):
        if i == -1:  # warm up, not verified (another run id)
            run_wrk(
                srv.url,
                mode=mode,
                key=key,
                path=path,
                seconds=1,
                connections=connections,
                run_id=f"warm{surface}",
                batch=batch,
            )
            continue
        run_id = f"ab{side.label}{name}{surface}{i}"
        side.acks[name][run_id] = run.work / f"acks-{run_id}"
        r = run.wrk_round(
            srv,
            f"{side.label} {name} {surface} #{i + 1}",
            mode=mode,
            key=key,
            path=path,
            seconds=seconds,
            connections=connections,
            run_id=run_id,
            ack_dir=side.acks[name][run_id],
            batch=batch,
        )
        out[f"{name} {surface} events/s"] = r["echoed"] / (r["duration_us"] / 1e6)
        out[f"{name} {surface} server CPU us/req"] = r["server_cpu_us_per_req"]
    return out


def replay_phase(
    run: Run,
    srv: Server,
    side: Side,
    name: str,
    i: int,
    requests: list[dict[str, Any]],
    seconds: float,
) -> dict[str, float]:
    r = run.wrk_replay(srv, f"{side.label}-{name}-{i}", requests, 16, seconds, "replay_gql")
    if r["bad"]:
        raise SystemExit(f"{side.label}: {r['bad']} bad responses in {name}: {r['bad_sample']}")
    return {
        f"{name} req/s (16 conns)": r["ok"] / (r["duration_us"] / 1e6),
        f"{name} p99 ms": r["lat_p99_us"] / 1000,
        f"{name} server CPU us/req": r["server_cpu_us_per_req"],
    }


def tenant_head(tree: Path, kind: str = "tenant") -> str:
    """A tree's newest tenant (or control) migration (revision ids are zero-padded numbers)."""
    versions = (tree / "migrations" / kind / "versions").glob("[0-9]*.py")
    return max(p.name.split("_", 1)[0] for p in versions)


def align_side(data_dir: Path, tree: Path) -> None:
    """The data at `tree`'s migration heads: its control database and every tenant's."""
    align(data_dir, tenant_head(tree))
    align(data_dir, tenant_head(tree, "control"), kind="control")


def align(data_dir: Path, revision: str, kind: Kind = "tenant") -> None:
    """Every tenant database of the data (or the control database) at `revision`, by this
    tree's migrations, so that an older tree's server opens data this tree made (a newer
    one upgrades it on open)."""
    paths = [data_dir / "control.db"] if kind == "control" else (data_dir / "tenants").glob("*.db")
    for path in sorted(paths):
        engine = create_engine(f"sqlite:///{path}")
        try:
            with engine.begin() as conn:
                current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
                if current is None or current == revision:
                    continue
                cfg = alembic_config(kind)
                cfg.attributes["connection"] = conn
                move = command.downgrade if current > revision else command.upgrade
                move(cfg, revision)
        finally:
            engine.dispose()


def one_side(
    run: Run,
    side: Side,
    a: argparse.Namespace,
    i: int,
    only: list[str],
    requests: dict[str, list[dict[str, Any]]],
) -> None:
    env = {**({} if a.search_cache else {"JET_SEARCH_CACHE_PAGES": "0"}), **side.env}
    log = run.work / f"server-{side.label}.log"
    align_side(run.data_dir, side.tree)
    with Server(data_dir=run.data_dir, log_path=log, env=env, tree=side.tree) as srv:
        for name in only:
            phase(run, srv, side, a, i, name, requests)


def phase(
    run: Run,
    srv: Server,
    side: Side,
    a: argparse.Namespace,
    i: int,
    name: str,
    requests: dict[str, list[dict[str, Any]]],
) -> None:
    if name in APPENDS:
        append_phase(run, srv, side, name, -1, a.seconds)
        got = append_phase(run, srv, side, name, i, a.seconds)
    else:
        got = replay_phase(run, srv, side, name, i, requests[name], a.seconds)
    for figure, value in got.items():
        side.figures.setdefault(figure, []).append(value)


def together(
    run: Run,
    sides: list[Side],
    a: argparse.Namespace,
    only: list[str],
    requests: dict[str, list[dict[str, Any]]],
) -> None:
    """Both servers up at once, each on its own copy of the data, each phase loading both at
    the same time: on a machine shared with other work, both sides meet the same load."""
    env = {} if a.search_cache else {"JET_SEARCH_CACHE_PAGES": "0"}
    for side in sides:
        side.data_dir = run.work / f"data-{side.label}"
        shutil.copytree(run.data_dir, side.data_dir)
        align_side(side.data_dir, side.tree)
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(
                Server(
                    data_dir=side.data_dir,
                    env={**env, **side.env},
                    tree=side.tree,
                    log_path=run.work / f"server-{side.label}.log",
                )
            )
            for side in sides
            if side.data_dir is not None
        ]
        for i, name in itertools.product(range(a.rounds), only):
            print(f"\n== round {i + 1}: {name}, both sides at once ==", flush=True)
            with ThreadPoolExecutor(len(sides)) as pool:
                done = [
                    pool.submit(phase, run, srv, side, a, i, name, requests)
                    for srv, side in zip(servers, sides, strict=True)
                ]
                for f in done:
                    f.result()


def verify(run: Run, side: Side) -> dict[str, int]:
    """Lost (or partly stored) and duplicated appends of one side, over every round."""
    totals = {"acked": 0, "lost": 0, "duplicated": 0}
    container = run_async(open_container(side.data_dir or run.data_dir))
    paths = {name: container.tenants.path(tid) for name, (tid, _) in side.tenants.items()}
    run_async(container.aclose())
    for name, runs in side.acks.items():
        for v in verify_appends(paths[name], runs, APPENDS[name][0]).values():
            totals["acked"] += v["acked_events"]
            totals["lost"] += v["lost"] + v["partial_batches"]
            totals["duplicated"] += v["duplicated"]
    return totals


def table(sides: list[Side], checks: dict[str, dict[str, int]]) -> str:
    before, after = sides
    lines = ["| figure | before median | after median | after / before |", "|---|---|---|---|"]
    for figure, values in before.figures.items():
        b, f = median(values), median(after.figures[figure])
        ratio = f"{f / b:.3f}" if b else "-"
        lines.append(f"| {figure} | {b:,.2f} | {f:,.2f} | {ratio} |")
    for label, c in checks.items():
        lines.append(
            f"| appends lost / duplicated, {label} | {c['lost']} / {c['duplicated']} "
            f"of {c['acked']:,} acknowledged events | | |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--before", required=True, help="git ref (or directory) of the old code")
    p.add_argument("--after", help="directory or git ref of the new code (default: this tree)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per side (default 3)")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per phase (default 5)")
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    p.add_argument("--events", type=int, default=100_000, help="events of events and context")
    p.add_argument("--entries", type=int, default=20_000, help="entries of search")
    p.add_argument("--data-dir", type=Path, default=RESULTS / "data", help="generated data")
    p.add_argument("--search-cache", action="store_true", help="keep the search page cache on")
    p.add_argument(
        "--together", action="store_true", help="both sides at once, each on a copy of the data"
    )
    for label in ("before", "after"):
        p.add_argument(
            f"--{label}-env",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"a setting of the {label} side's server (a fast-path switch...)",
        )
    a = p.parse_args()
    side_env: dict[str, dict[str, str]] = {}
    for label in ("before", "after"):
        pairs = getattr(a, f"{label}_env")
        if bad := [x for x in pairs if "=" not in x]:
            p.error(f"--{label}-env: expected NAME=VALUE, got {bad[0]!r}")
        side_env[label] = dict(x.split("=", 1) for x in pairs)
    only = [w.strip() for w in a.only.split(",") if w.strip()]
    if unknown := set(only) - set(WORKLOADS):
        p.error(f"--only: unknown workloads {sorted(unknown)}; choose from {WORKLOADS}")
    if a.rounds < 1 or a.seconds <= 0:
        p.error("--rounds must be at least 1 and --seconds more than 0")
    run = Run(argparse.Namespace(data_dir=a.data_dir, quick=False, access_log=True, profile=False))
    trees = Trees()
    try:
        sides = [
            Side("before", trees.get(a.before), env=side_env["before"]),
            Side("after", trees.get(a.after), env=side_env["after"]),
        ]
        for side in sides:
            where = app_of(side.tree, run.data_dir.parent)
            settings = "".join(f" {k}={v}" for k, v in side.env.items())
            print(f"{side.label}: {describe(side.tree)}{settings}; app from {where}", flush=True)
        if len({migrations_digest(s.tree) for s in sides}) > 1:
            print(
                "note: the trees' migrations differ: the data is made by this tree's code and "
                "brought to each side's tenant head before its server starts"
            )
        requests = {name: replay_requests(run, name, a) for name in only if name not in APPENDS}
        for side, name in itertools.product(sides, [n for n in only if n in APPENDS]):
            side.tenants[name] = run_async(
                new_tenant(run.data_dir, f"ab-{run.stamp}-{side.label}-{name}")
            )
            side.acks[name] = {}
        print(f"{time.strftime('%H:%M:%S')}  {load_note()}; results in {run.work}", flush=True)
        if a.together:
            together(run, sides, a, only, requests)
        for i in range(0 if a.together else a.rounds):
            # before, after; then after, before: drift hits both alike
            for side in sides if i % 2 == 0 else sides[::-1]:
                print(f"\n== round {i + 1}: {side.label} ==", flush=True)
                one_side(run, side, a, i, only, requests)
        checks = {side.label: verify(run, side) for side in sides if side.acks}
    finally:
        trees.remove()
    print(f"\n{time.strftime('%H:%M:%S')}  {load_note()}\n")
    text = table(sides, checks)
    print(text)
    print("\nratio > 1: after is faster for events/s and req/s, slower for p99 ms and server CPU")
    out = RESULTS / f"ab-{run.stamp}.json"
    report: dict[str, Any] = {
        "before": a.before,
        "after": a.after or str(ROOT),
        "rounds": a.rounds,
        "seconds": a.seconds,
        "figures": {s.label: s.figures for s in sides},
        "appends": checks,
        "settings": {s.label: s.env for s in sides},
        "together": a.together,
    }
    out.write_text(json.dumps(report, indent=1))
    print(f"results: {out}")
    if any(c["lost"] or c["duplicated"] for c in checks.values()):
        raise SystemExit("acknowledged appends were lost or duplicated (see the table)")


if __name__ == "__main__":
    main()
